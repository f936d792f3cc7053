//! `assay data pybench` against a real git remote: a bare repository made from the shared
//! PyBench data (read in place, never copied into assay's repository), served by `git daemon`
//! on loopback. Its commit can never be upstream's fa90fae (the shared copy lacks 12 large
//! files and adds `derived/`), so the fetches that succeed name it with --commit, and the
//! default commit is the one refused.

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{assay_command, pybench_data, run_bounded, text};

/// Upstream's commit, the default of --commit.
const UPSTREAM: &str = "fa90fae282a23cb38279c2d5074ccaf2062629bf";
/// What a fetch, a refusal or a do-nothing call may take at most on loopback.
const COMMAND_LIMIT: Duration = Duration::from_secs(120);
/// The tasks whose inputs the shared data lacks (12 blobs of 4 MiB or more were left out of
/// it, and task 142's PDF was never in upstream's repository).
const LACKING: &str =
    "13, 17, 23, 25, 34, 42, 54, 55, 56, 66, 142, 144, 145, 146, 147, 149, 150, 151, 152";

/// git, run by the test itself (not a child of assay).
fn git() -> Command {
    #[allow(clippy::disallowed_methods)]
    let command = Command::new("git");
    command
}

/// Runs git to its end; a failure (git missing included) fails the test with git's words.
fn git_ok(command: &mut Command) -> String {
    let out = run_bounded(command, COMMAND_LIMIT)
        .unwrap_or_else(|| panic!("{command:?} did not end in {COMMAND_LIMIT:?}"));
    assert!(
        out.status.success(),
        "{command:?}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// A folder of this test process, new. The folders of test processes that have ended (a
/// mirror and checkouts, some 100 MB) are removed on first use.
fn scratch(name: &str) -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    let root = ROOT.get_or_init(|| {
        let parent = Path::new(env!("CARGO_TARGET_TMPDIR")).join("data-pybench");
        for entry in std::fs::read_dir(&parent).into_iter().flatten().flatten() {
            if !Path::new("/proc").join(entry.file_name()).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        parent.join(std::process::id().to_string())
    });
    let dir = root.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The bare repository holding the shared data as one commit, made once per test process:
/// the shared copy is added through GIT_WORK_TREE (nothing written beside it), and packed so
/// that serving it does not compress 41 MB again for every fetch.
struct Mirror {
    /// The folder `git daemon` serves (`pybench.git` is in it).
    base: PathBuf,
    /// Its one commit.
    commit: String,
}

fn mirror() -> &'static Mirror {
    static MIRROR: OnceLock<Mirror> = OnceLock::new();
    MIRROR.get_or_init(|| {
        let base = scratch("srv");
        let repo = base.join("pybench.git");
        let index = base.join("index");
        git_ok(git().args(["init", "--quiet", "--bare"]).arg(&repo));
        let in_repo = |command: &mut Command| {
            command
                .env("GIT_DIR", &repo)
                .env("GIT_WORK_TREE", pybench_data())
                .env("GIT_INDEX_FILE", &index);
            git_ok(command)
        };
        in_repo(git().args(["add", "-A"]));
        in_repo(git().args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "--quiet",
            "-m",
            "snapshot",
        ]));
        in_repo(git().args(["repack", "-a", "-d", "-q", "--window=0"]));
        let commit = in_repo(git().args(["rev-parse", "HEAD"]))
            .trim()
            .to_string();
        assert_eq!(commit.len(), 40, "{commit}");
        Mirror { base, commit }
    })
}

/// `git daemon` serving [`mirror`] on a free loopback port, stopped (with its children) when
/// dropped.
struct Daemon {
    child: Child,
    url: String,
}

impl Daemon {
    fn start() -> Daemon {
        let mirror = mirror();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = std::fs::File::create(mirror.base.with_file_name(format!("daemon-{port}.log")))
            .unwrap();
        let child = git()
            .args([
                "daemon",
                "--reuseaddr",
                "--listen=127.0.0.1",
                "--export-all",
            ])
            .arg(format!("--port={port}"))
            .arg(format!("--base-path={}", mirror.base.display()))
            .arg(&mirror.base)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            // `git daemon` runs `git-daemon` as its child: the group is what to stop.
            .process_group(0)
            .spawn()
            .expect("git daemon (git's git-daemon program) to start");
        let daemon = Daemon {
            child,
            url: format!("git://127.0.0.1:{port}/pybench.git"),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let answer = run_bounded(
                git().args(["ls-remote", &daemon.url, "HEAD"]),
                Duration::from_secs(10),
            );
            if answer.is_some_and(|out| text(&out.stdout).contains(&mirror.commit)) {
                return daemon;
            }
            assert!(
                Instant::now() < deadline,
                "git daemon did not serve {} within 20 s",
                daemon.url
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = rustix::process::kill_process_group(
            rustix::process::Pid::from_child(&self.child),
            rustix::process::Signal::KILL,
        );
        let _ = self.child.wait();
    }
}

/// `assay data pybench ARGS` with `cache` as assay's cache root.
fn data(cache: &Path, args: &[&str]) -> Output {
    let mut command = assay_command(cache);
    command
        .args(["data", "pybench"])
        .args(args)
        .env("ASSAY_CACHE_DIR", cache)
        .env_remove("ASSAY_PYBENCH_REPO");
    run_bounded(&mut command, COMMAND_LIMIT).expect("assay data pybench ended in time")
}

/// The commit checked out in `dir`.
fn head(dir: &Path) -> String {
    git_ok(git().arg("-C").arg(dir).args(["rev-parse", "HEAD"]))
        .trim()
        .to_string()
}

#[test]
fn fetches_from_a_mirror_then_does_nothing() {
    let daemon = Daemon::start();
    let commit = &mirror().commit;
    let cache = scratch("fetches");
    let out = data(&cache, &["--from", &daemon.url, "--commit", commit]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    let dir = cache.join("pybench").join(commit);
    assert!(dir.join("data/meta/task.json").is_file(), "{stdout}");
    assert_eq!(&head(&dir), commit);
    assert!(
        stderr.contains(&format!("fetching PyBench's data: {}", daemon.url)),
        "{stderr}"
    );
    assert!(
        stdout.contains(&format!(
            "PyBench's data at {commit} is in {}",
            dir.display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("carries no license: use it for evaluation only, and do not redistribute"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "19 tasks lack input files here (a run records them as infra): {LACKING}"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("  142: data/Geoffrey Hinton.pdf\n"),
        "{stdout}"
    );
    // Nothing but the checkout and the pointer to it is left beside it.
    let mut names: Vec<String> = std::fs::read_dir(cache.join("pybench"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut expected = [commit.as_str(), "current"];
    expected.sort();
    assert_eq!(names, expected);

    // With the remote gone, a second call still succeeds: it fetches nothing.
    drop(daemon);
    let started = Instant::now();
    let again = data(
        &cache,
        &["--from", "git://127.0.0.1:1/gone.git", "--commit", commit],
    );
    let stdout = text(&again.stdout);
    assert!(again.status.success(), "{stdout}{}", text(&again.stderr));
    assert!(
        stdout.contains(&format!("is already in {}; nothing to do", dir.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains("carries no license") && stdout.contains(LACKING),
        "{stdout}"
    );
    assert!(
        !text(&again.stderr).contains("fetching"),
        "{}",
        text(&again.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_commit_the_remote_lacks_or_a_malformed_one_is_refused() {
    let daemon = Daemon::start();
    let commit = &mirror().commit;
    let cache = scratch("refused");
    // The default, upstream's commit: the mirror cannot have it.
    let out = data(&cache, &["--from", &daemon.url]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "error: {} does not have commit {UPSTREAM} (upstream's, which assay's checks were \
             written against); its HEAD is {commit}: a mirror must hold that commit, or pass \
             --commit {commit} to fetch the one it holds",
            daemon.url
        )),
        "{stderr}"
    );
    // A well-formed commit it does not have.
    let other = "0123456789abcdef0123456789abcdef01234567";
    let out = data(&cache, &["--from", &daemon.url, "--commit", other]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "error: {} does not have commit {other}; its HEAD is {commit}",
            daemon.url
        )),
        "{stderr}"
    );
    // An abbreviation, or not a SHA at all: refused before any network.
    for bad in [&commit[..7], "main"] {
        let out = data(&cache, &["--from", &daemon.url, "--commit", bad]);
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "error: --commit \"{bad}\": give a commit's full 40-hex-digit SHA-1"
            )),
            "{stderr}"
        );
    }
    // Refusals leave nothing behind.
    let left: Vec<_> = std::fs::read_dir(cache.join("pybench"))
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// A remote starting with `-` would reach git as an option (`--upload-pack=COMMAND` runs
/// COMMAND): it is refused, from --from or from $ASSAY_PYBENCH_REPO, before git runs.
#[test]
fn a_remote_that_git_would_take_for_an_option_is_refused() {
    let commit = &mirror().commit;
    let cache = scratch("option");
    let marker = cache.join("ran");
    let remote = format!("--upload-pack=touch {}", marker.display());
    let refused = |out: Output| {
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "error: --from (or ASSAY_PYBENCH_REPO) {remote:?}: a git remote cannot start \
                 with '-'"
            )),
            "{stderr}"
        );
        assert!(!marker.exists(), "git ran the remote's command");
    };
    refused(data(
        &cache,
        &[&format!("--from={remote}"), "--commit", commit],
    ));
    let mut command = assay_command(&cache);
    command
        .args(["data", "pybench", "--commit", commit])
        .env("ASSAY_CACHE_DIR", &cache)
        .env("ASSAY_PYBENCH_REPO", &remote);
    refused(run_bounded(&mut command, COMMAND_LIMIT).expect("assay data pybench ended in time"));

    // --from has no value of clap's: its help says where the default comes from.
    let help = data(&cache, &["--help"]);
    let stdout = text(&help.stdout);
    assert!(
        stdout.contains("$ASSAY_PYBENCH_REPO if set and not empty")
            && stdout.contains("https://github.com/Mercury7353/PyBench"),
        "{stdout}"
    );
}

#[test]
fn an_interrupted_fetch_is_cleared_and_done_again() {
    let daemon = Daemon::start();
    let commit = &mirror().commit;
    let cache = scratch("interrupted");
    let staging = cache.join("pybench").join(format!(".{commit}.partial"));
    let dir = cache.join("pybench").join(commit);
    // Killed as a closed terminal kills it: assay and its git together, mid-fetch.
    let mut command = assay_command(&cache);
    command
        .args(["data", "pybench", "--from", &daemon.url, "--commit", commit])
        .env("ASSAY_CACHE_DIR", &cache)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    let mut child = command.spawn().expect("start assay");
    // The pack being received: git writes it under objects/pack as it arrives.
    let receiving = || {
        std::fs::read_dir(staging.join(".git/objects/pack"))
            .is_ok_and(|mut entries| entries.next().is_some())
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !receiving() {
        assert!(
            Instant::now() < deadline,
            "no pack arriving in {} within 60 s",
            staging.display()
        );
        assert!(child.try_wait().unwrap().is_none(), "assay ended first");
        std::thread::sleep(Duration::from_millis(5));
    }
    rustix::process::kill_process_group(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    child.wait().unwrap();
    assert!(staging.exists() && !dir.exists(), "the kill came too late");

    let out = data(&cache, &["--from", &daemon.url, "--commit", commit]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!(
            "clearing an unfinished fetch left at {}",
            staging.display()
        )),
        "{stderr}"
    );
    assert_eq!(&head(&dir), commit);
    assert!(dir.join("data/meta/task.json").is_file());
    assert!(!staging.exists());
    assert!(
        stdout.contains(&format!("PyBench's data at {commit} is in")),
        "{stdout}"
    );
}

#[test]
fn a_broken_leftover_is_cleared_and_into_fills_a_folder_of_the_users() {
    let daemon = Daemon::start();
    let commit = &mirror().commit;
    let root = scratch("into");
    // assay's cache, apart from the folder filled: a checkout sent to it would show.
    let cache = scratch("into-cache");
    let into = root.join("pybench");
    // What a crash could leave: a staging directory git cannot use.
    let staging = root.join(".pybench.partial");
    std::fs::create_dir_all(&staging).unwrap();
    std::fs::write(staging.join(".git"), "gitdir: /nowhere\n").unwrap();
    // Relative to the working directory, `root`.
    let mut command = assay_command(&root);
    command
        .args(["data", "pybench", "--from", &daemon.url, "--commit", commit])
        .args(["--into", "pybench"])
        .env("ASSAY_CACHE_DIR", &cache)
        .env_remove("ASSAY_PYBENCH_REPO");
    let out = run_bounded(&mut command, COMMAND_LIMIT).expect("assay data pybench ended in time");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert_eq!(&head(&into), commit);
    assert!(!staging.exists());
    assert!(
        stdout.contains(&format!(
            "Pass --data {} to `assay run pybench`",
            into.display()
        )),
        "{stdout}"
    );
    // Nothing went to the cache: no checkout, and no `current` naming one for the runs.
    let in_cache: Vec<_> = std::fs::read_dir(cache.join("pybench"))
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(in_cache.is_empty(), "{in_cache:?}");

    // A folder holding something else is refused, untouched.
    let other = root.join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine\n").unwrap();
    let out = data(
        &root,
        &["--from", &daemon.url, "--commit", commit, "--into", "other"],
    );
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{} exists and is not a git checkout; remove it or choose another place",
            other.display()
        )),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(other.join("notes.txt")).unwrap(),
        "mine\n"
    );
}

#[test]
fn run_pybench_without_data_uses_the_fetched_tree_or_fetches_upstreams() {
    let daemon = Daemon::start();
    let commit = &mirror().commit;
    let run = |cache: &Path, tasks: &str| {
        let work = scratch(&format!("run-{tasks}"));
        let mut command = assay_command(&work);
        command
            .args(["run", "pybench", "--model", "openai:m", "--base-url"])
            .arg("http://127.0.0.1:9/v1")
            .args(["--tasks", tasks, "--out", "out"])
            .env("ASSAY_CACHE_DIR", cache)
            .env("OPENAI_API_KEY", "k")
            .env("ASSAY_PYBENCH_REPO", &daemon.url)
            .env_remove("ASSAY_PYBENCH_DATA");
        run_bounded(&mut command, COMMAND_LIMIT).expect("assay run pybench ended in time")
    };

    // Nothing fetched yet: it says what it does, fetches upstream's commit from the mirror
    // $ASSAY_PYBENCH_REPO names, which lacks it, and says how to go on.
    let empty = scratch("run-empty-cache");
    let out = run(&empty, "3");
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "no --data given: fetching PyBench's data from {} at {UPSTREAM} into {} (same as \
             `assay data pybench`)",
            daemon.url,
            empty.join("pybench").join(UPSTREAM).display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "error: no --data given, and PyBench's data could not be fetched: pass --data DIR \
             (a folder in upstream's layout, with data/meta/task.json), set ASSAY_PYBENCH_DATA, \
             or name a mirror in ASSAY_PYBENCH_REPO: "
        ) && stderr.contains(&format!("does not have commit {UPSTREAM}")),
        "{stderr}"
    );

    // Fetched (another commit, named by `assay data pybench`): the run reads that tree. An
    // unknown task makes it stop right after loading the tree's task list, which it names.
    common::pybench_env();
    let cache = common::cache_root();
    let fetched = data(cache, &["--from", &daemon.url, "--commit", commit]);
    assert!(fetched.status.success(), "{}", text(&fetched.stderr));
    let dir = cache.join("pybench").join(commit);
    let out = run(cache, "9999");
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "assay: no --data given: using PyBench's data at {} (commit {commit}; not \
             {UPSTREAM}, upstream's commit assay's checks were written against)",
            dir.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "{}: no task \"9999\"",
            dir.join("data/meta/task.json").display()
        )),
        "{stderr}"
    );
}

/// The fetched data is the checks' data, and upstream's tree holds a config file with an API
/// key: a job must not read it even where the sandbox binds the tree around it (here a cache
/// under `/usr/local/share`, which every job's view holds read-only).
#[test]
fn jobs_cannot_read_the_fetched_data() {
    assert!(
        rustix::process::geteuid().is_root(),
        "this test places a cache under /usr/local/share, which needs root"
    );
    let root = PathBuf::from(format!(
        "/usr/local/share/assay-data-test-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    let cache = root.join("cache");
    let config = cache.join("pybench").join(UPSTREAM).join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("gpt.yaml"), "api_key: key-canary-7f3\n").unwrap();
    std::fs::write(root.join("visible.txt"), "a file anyone may read\n").unwrap();
    // The test's environments, as every test's cache root has them.
    let envs = std::fs::read_link(common::cache_root().join("envs")).unwrap();
    std::os::unix::fs::symlink(envs, cache.join("envs")).unwrap();
    let work = scratch("hidden");
    let probe = format!(
        "for p in {paths:?}:\n    try:\n        print('READ', open(p).read().strip())\n    \
         except OSError as e:\n        print('DENIED', type(e).__name__)\n",
        paths = [
            root.join("visible.txt").display().to_string(),
            config.join("gpt.yaml").display().to_string(),
        ]
    );
    std::fs::write(work.join("probe.py"), probe).unwrap();
    let mut command = assay_command(&work);
    command
        .args(["sandbox", "run", "probe.py", "--profile", "test"])
        .env("ASSAY_CACHE_DIR", &cache);
    let out = run_bounded(&mut command, COMMAND_LIMIT);
    let _ = std::fs::remove_dir_all(&root);
    let out = out.expect("assay sandbox run ended in time");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    // The tree was in view; the data in it was not.
    assert!(stdout.contains("READ a file anyone may read"), "{stdout}");
    assert!(!stdout.contains("key-canary"), "{stdout}");
    assert!(stdout.contains("DENIED"), "{stdout}");
}
