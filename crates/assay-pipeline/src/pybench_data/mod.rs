//! PyBench's data, fetched: upstream's repository at one commit, checked out into assay's cache
//! (`<cache>/pybench/<commit>`) or a folder of the user's, by git, from GitHub or any mirror.
//!
//! Upstream's repository carries no license, so assay cannot ship its data; this is the one
//! command that gets it. The cache path names the commit, and a run records its data path, so
//! a run's identity says which commit it used. A checkout is made in a staging directory
//! beside its place and renamed into place only once git says its HEAD is the commit asked
//! for and it holds `data/meta/task.json`: a tree in place is always complete, and a fetch cut
//! short (killed, a network gone) leaves only the staging directory, which the next call
//! clears and starts over (git cannot resume a pack half received). Fetches of one place are
//! serialized by a lock on its parent directory.
//!
//! Here is where the fetch lives, not in `assay-tasks` (which reads a data folder and starts
//! no process) nor in the command line: the pipelines resolve a run's data through it, and the
//! engine hides its cache from every job ([`CACHE_DIR`]).

mod git;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assay_pyenv::flock::{self, LockError};
use assay_pyenv::SetupObserver;
use assay_tasks::pybench::{PyBench, REPO_ENV, TASK_FILE, UPSTREAM_COMMIT, UPSTREAM_REPO};

use self::git::{Failure, Git};

/// Where fetched data lives under assay's cache root: `pybench/<commit>/`.
pub const CACHE_DIR: &str = "pybench";
/// The file under [`CACHE_DIR`] naming the commit the last `assay data pybench` into the cache
/// fetched or found: the data a run without `--data` uses.
const CURRENT: &str = "current";
/// What the data is, said after each fetch.
pub const NOTICE: &str = "PyBench's data carries no license: use it for evaluation only, and \
                          do not redistribute it.";
/// How long a second fetch of the same place waits for the first.
const LOCK_WAIT: Duration = Duration::from_secs(30 * 60);

/// Why the data could not be fetched.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// `--commit` is not a full commit id.
    #[error("--commit {0:?}: give a commit's full 40-hex-digit SHA-1")]
    BadCommit(String),
    /// The remote would reach git as an option.
    #[error(
        "--from (or {REPO_ENV}) {0:?}: a git remote cannot start with '-' (git would take it \
         for an option); give a URL or a path (a path starting with '-': ./{0})"
    )]
    BadRemote(String),
    /// git is not on `PATH`.
    #[error(
        "git is not installed (or not on PATH); assay fetches PyBench's data with git: install \
         it (e.g. `apt-get install git`), or pass --data DIR with a copy of upstream's repository"
    )]
    NoGit,
    /// The remote does not have the commit.
    #[error("{remote} does not have commit {commit}{advice}")]
    NoSuchCommit {
        /// The remote, as given.
        remote: String,
        /// The commit asked for.
        commit: String,
        /// What the remote has instead, and what to do.
        advice: String,
    },
    /// The checkout's HEAD is not the commit asked for.
    #[error("{remote}: fetching commit {wanted} checked out {found}, another; refused")]
    WrongCommit {
        /// The remote.
        remote: String,
        /// Its HEAD.
        found: String,
        /// The commit asked for.
        wanted: String,
    },
    /// The place asked for holds something else.
    #[error("{0}")]
    Occupied(String),
    /// The commit is not a PyBench tree.
    #[error("{remote} at {commit} has no {TASK_FILE}: not PyBench's repository")]
    NotPyBench {
        /// The remote.
        remote: String,
        /// The commit.
        commit: String,
    },
    /// A git step failed; what git said.
    #[error("{step} failed: {detail}")]
    Git {
        /// What was being done.
        step: String,
        /// The last lines of git's stderr.
        detail: String,
    },
    /// A git step said nothing for too long and was stopped.
    #[error("{step}: no progress for {seconds} s; stopped it (rerun to try again)")]
    Stalled {
        /// The git command.
        step: String,
        /// The bound.
        seconds: u64,
    },
    /// Another fetch of the same place held it too long.
    #[error("{0}: another assay fetching here held its lock for too long")]
    Locked(PathBuf),
    /// A file or directory could not be made, read or moved.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The task list of the fetched tree could not be read.
    #[error(transparent)]
    Tasks(#[from] assay_tasks::Error),
    /// assay's cache has no place.
    #[error(transparent)]
    Cache(#[from] assay_pyenv::Error),
}

/// What to fetch, and where.
#[derive(Debug, Clone)]
pub struct FetchRequest {
    /// The git remote: a URL or a path.
    pub from: String,
    /// The commit, a full SHA-1.
    pub commit: String,
    /// Where to check it out; `None`: assay's cache.
    pub into: Option<PathBuf>,
}

impl FetchRequest {
    /// Upstream's commit into the cache, from [`remote_or_default`]: what a run without
    /// `--data` fetches.
    pub fn upstream() -> FetchRequest {
        FetchRequest {
            from: remote_or_default(None),
            commit: UPSTREAM_COMMIT.to_string(),
            into: None,
        }
    }

    /// Where the checkout goes: `--into`'s folder, else `<cache>/pybench/<commit>`.
    pub fn target(&self) -> Result<PathBuf, DataError> {
        match &self.into {
            Some(dir) => absolute(dir),
            None => Ok(cache_dir()?.join(self.commit.to_ascii_lowercase())),
        }
    }
}

/// The remote to fetch from: `from` (`--from`) if given, else `$ASSAY_PYBENCH_REPO` if set,
/// else GitHub's. An empty value counts as unset, whichever names it: `assay data pybench`
/// and a run without `--data` read the same variable the same way.
pub fn remote_or_default(from: Option<String>) -> String {
    from.into_iter()
        .chain(std::env::var(REPO_ENV).ok())
        .find(|remote| !remote.is_empty())
        .unwrap_or_else(|| UPSTREAM_REPO.to_string())
}

/// A checkout in place.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Where it is.
    pub dir: PathBuf,
    /// Its commit.
    pub commit: String,
    /// Whether this call fetched it (`false`: it was there).
    pub fresh: bool,
    /// The tasks whose inputs the tree lacks: their index and the missing paths.
    pub lacking: Vec<(String, Vec<String>)>,
}

/// `<cache>/pybench/`.
pub fn cache_dir() -> Result<PathBuf, DataError> {
    Ok(assay_pyenv::cache_root()?.join(CACHE_DIR))
}

/// The data a run without `--data` uses, if there is one: the commit the last
/// `assay data pybench` into the cache fetched (else upstream's commit), when its tree is
/// there. With its commit.
pub fn cached() -> Result<Option<(PathBuf, String)>, DataError> {
    let root = cache_dir()?;
    let named = std::fs::read_to_string(root.join(CURRENT))
        .ok()
        .map(|text| text.trim().to_string())
        .filter(|commit| is_full_sha(commit));
    let commits = named.into_iter().chain([UPSTREAM_COMMIT.to_string()]);
    Ok(commits
        .map(|commit| (root.join(&commit), commit))
        .find(|(dir, _)| dir.join(TASK_FILE).is_file()))
}

/// Makes sure `request.commit` of `request.from` is checked out where the request says: does
/// nothing but check when it is there, fetches it otherwise. `observer` hears the steps and
/// git's progress.
pub fn fetch(request: &FetchRequest, observer: &dyn SetupObserver) -> Result<Fetched, DataError> {
    let commit = request.commit.to_ascii_lowercase();
    if !is_full_sha(&commit) {
        return Err(DataError::BadCommit(request.commit.clone()));
    }
    // git reads an argument starting with `-` as an option, even in a remote's place
    // (`--upload-pack=COMMAND` runs COMMAND); the remote is also passed after `--`.
    if request.from.starts_with('-') {
        return Err(DataError::BadRemote(request.from.clone()));
    }
    let in_cache = request.into.is_none();
    let target = request.target()?;
    let parent = target
        .parent()
        .ok_or_else(|| DataError::Occupied(format!("{}: not a folder to fill", target.display())))?
        .to_path_buf();
    std::fs::create_dir_all(&parent).map_err(|source| DataError::Io {
        path: parent.clone(),
        source,
    })?;
    let _lock = lock(&parent, observer)?;
    let fresh = if in_place(&target, &commit, observer)? {
        false
    } else {
        let remote = remote(&request.from);
        check_out(&remote, &commit, &target, observer)?;
        true
    };
    // The tree's task list is read before the tree is named the runs' data: `current` never
    // names a tree that does not load.
    let lacking = lacking(&PyBench::load(&target)?);
    if in_cache {
        write_current(&parent, &commit)?;
    }
    Ok(Fetched {
        dir: target,
        commit,
        fresh,
        lacking,
    })
}

/// Whether `target` already holds `commit` (verified); an error when it holds something else.
fn in_place(target: &Path, commit: &str, observer: &dyn SetupObserver) -> Result<bool, DataError> {
    let is_empty_dir = |dir: &Path| {
        std::fs::read_dir(dir)
            .map(|mut entries| entries.next().is_none())
            .unwrap_or(false)
    };
    if !target.exists() || is_empty_dir(target) {
        return Ok(false);
    }
    let occupied = |what: String| {
        DataError::Occupied(format!(
            "{} exists and {what}; remove it or choose another place",
            target.display()
        ))
    };
    if !target.join(".git").exists() {
        return Err(occupied("is not a git checkout".into()));
    }
    let head = head(target, observer)?;
    if head != commit {
        return Err(occupied(format!(
            "is a checkout of {head}, not of {commit}"
        )));
    }
    if !target.join(TASK_FILE).is_file() {
        return Err(occupied(format!("lacks {TASK_FILE}")));
    }
    Ok(true)
}

/// Fetches `commit` into a staging directory beside `target`, checks it, and renames it into
/// place.
fn check_out(
    remote: &str,
    commit: &str,
    target: &Path,
    observer: &dyn SetupObserver,
) -> Result<(), DataError> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let staging = target.with_file_name(format!(".{name}.partial"));
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| DataError::Io { path, source }
    };
    if staging.exists() {
        observer.step(&format!(
            "clearing an unfinished fetch left at {}",
            staging.display()
        ));
        std::fs::remove_dir_all(&staging).map_err(io(&staging))?;
    }
    observer.step(&format!(
        "fetching PyBench's data: {remote} at {commit} into {}",
        target.display()
    ));
    let started = Instant::now();
    std::fs::create_dir_all(&staging).map_err(io(&staging))?;
    let checked_out = fetch_into(remote, commit, &staging, observer).and_then(|()| {
        if target.exists() {
            // An empty folder the user made for it (`in_place` refused anything else).
            std::fs::remove_dir(target).map_err(io(target))?;
        }
        std::fs::rename(&staging, target).map_err(io(target))
    });
    match checked_out {
        Ok(()) => observer.step(&format!(
            "fetched {commit} in {:.0} s",
            started.elapsed().as_secs_f64()
        )),
        // A refusal leaves nothing behind (a kill leaves the staging directory, which the
        // next call clears).
        Err(_) => {
            let _ = std::fs::remove_dir_all(&staging);
        }
    }
    checked_out
}

/// Fetches `commit` of `remote` into `staging` (empty) and checks it out there, verified.
fn fetch_into(
    remote: &str,
    commit: &str,
    staging: &Path,
    observer: &dyn SetupObserver,
) -> Result<(), DataError> {
    let git = Git::new(staging);
    let step = |what: &str| format!("git {what} (in {})", staging.display());
    let run = |args: &[&str], what: &str| {
        git.run(args, observer).map_err(|failure| match failure {
            Failure::Exit(detail) => DataError::Git {
                step: step(what),
                detail,
            },
            Failure::Other(e) => e,
        })
    };
    run(&["init", "--quiet"], "init")?;
    let fetched = git.run(
        &[
            "-c",
            "protocol.version=2",
            "fetch",
            "--progress",
            "--depth",
            "1",
            "--no-tags",
            "--",
            remote,
            commit,
        ],
        observer,
    );
    match fetched {
        Ok(_) => {}
        Err(Failure::Other(e)) => return Err(e),
        Err(Failure::Exit(detail)) if lacks_commit(&detail) => {
            return Err(DataError::NoSuchCommit {
                remote: remote.to_string(),
                commit: commit.to_string(),
                advice: advice(commit, remote_head(&git, remote, observer)),
            })
        }
        Err(Failure::Exit(detail)) => {
            return Err(DataError::Git {
                step: format!("fetching {commit} from {remote}"),
                detail: format!(
                    "{detail}\n(a machine that cannot reach it can fetch from a mirror: \
                     --from URL or {REPO_ENV})"
                ),
            })
        }
    }
    run(
        &["checkout", "--progress", "--detach", "FETCH_HEAD"],
        "checkout",
    )?;
    let found = head(staging, observer)?;
    if found != commit {
        return Err(DataError::WrongCommit {
            remote: remote.to_string(),
            found,
            wanted: commit.to_string(),
        });
    }
    if !staging.join(TASK_FILE).is_file() {
        return Err(DataError::NotPyBench {
            remote: remote.to_string(),
            commit: commit.to_string(),
        });
    }
    Ok(())
}

/// The commit checked out in `dir`.
fn head(dir: &Path, observer: &dyn SetupObserver) -> Result<String, DataError> {
    let said = Git::new(dir)
        .run(&["rev-parse", "--verify", "HEAD"], observer)
        .map_err(|failure| match failure {
            Failure::Exit(detail) => DataError::Git {
                step: format!("reading the commit checked out in {}", dir.display()),
                detail,
            },
            Failure::Other(e) => e,
        })?;
    Ok(said.stdout.trim().to_string())
}

/// What the remote's HEAD is, to say beside a commit it lacks (`None` if it does not say).
fn remote_head(git: &Git, remote: &str, observer: &dyn SetupObserver) -> Option<String> {
    let said = git
        .run(&["ls-remote", "--", remote, "HEAD"], observer)
        .ok()?;
    let head = said.stdout.split_whitespace().next()?.to_string();
    is_full_sha(&head).then_some(head)
}

/// What to say after "the remote lacks `commit`", given the remote's HEAD if it said.
fn advice(commit: &str, head: Option<String>) -> String {
    let has = |head: &str| format!("; its HEAD is {head}");
    match (commit == UPSTREAM_COMMIT, head) {
        (true, Some(head)) => format!(
            " (upstream's, which assay's checks were written against){}: a mirror must hold \
             that commit, or pass --commit {head} to fetch the one it holds",
            has(&head)
        ),
        (true, None) => " (upstream's, which assay's checks were written against): a mirror \
                         must hold that commit, or pass --commit SHA for the one it holds"
            .into(),
        (false, Some(head)) => has(&head),
        (false, None) => String::new(),
    }
}

/// Whether git's words say the remote lacks the commit (over protocol v2: `not our ref`).
fn lacks_commit(detail: &str) -> bool {
    [
        "not our ref",
        "couldn't find remote ref",
        "unadvertised object",
        "no such remote ref",
    ]
    .iter()
    .any(|words| detail.contains(words))
}

/// A local path made absolute (git runs in the staging directory); a URL as given.
fn remote(from: &str) -> String {
    let path = Path::new(from);
    if !from.contains("://") && path.exists() {
        if let Ok(path) = std::fs::canonicalize(path) {
            return path.display().to_string();
        }
    }
    from.to_string()
}

fn absolute(dir: &Path) -> Result<PathBuf, DataError> {
    std::path::absolute(dir).map_err(|source| DataError::Io {
        path: dir.to_path_buf(),
        source,
    })
}

fn is_full_sha(text: &str) -> bool {
    text.len() == 40
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Names `commit` as the data of runs without `--data` (written beside, then renamed).
fn write_current(root: &Path, commit: &str) -> Result<(), DataError> {
    let path = root.join(CURRENT);
    let staging = root.join(format!(".{CURRENT}.partial"));
    std::fs::write(&staging, format!("{commit}\n"))
        .and_then(|()| std::fs::rename(&staging, &path))
        .map_err(|source| DataError::Io { path, source })
}

/// Each task whose inputs `data`'s folder lacks, with the paths it lacks.
fn lacking(data: &PyBench) -> Vec<(String, Vec<String>)> {
    data.tasks
        .iter()
        .filter_map(|task| {
            let missing: Vec<String> = data
                .inputs(task)
                .into_iter()
                .filter(|input| input.source.is_none())
                .map(|input| input.path)
                .collect();
            (!missing.is_empty()).then(|| (task.index.clone(), missing))
        })
        .collect()
}

/// An exclusive lock on the directory `dir`, held while the returned file is open: one fetch
/// at a time into it (a second waits, then finds the first one's checkout). A lock on the
/// directory itself leaves nothing behind in a folder of the user's.
fn lock(dir: &Path, observer: &dyn SetupObserver) -> Result<File, DataError> {
    let file = File::open(dir).map_err(|source| DataError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let waiting = || observer.step("waiting for another assay process fetching PyBench's data");
    match flock::exclusive(&file, LOCK_WAIT, waiting) {
        Ok(()) => Ok(file),
        Err(LockError::TimedOut(_)) => Err(DataError::Locked(dir.into())),
        Err(LockError::Io(source)) => Err(DataError::Io {
            path: dir.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_full_shas_are_commits() {
        assert!(is_full_sha(UPSTREAM_COMMIT));
        assert!(!is_full_sha("fa90fae"));
        assert!(!is_full_sha(&UPSTREAM_COMMIT.replace('a', "g")));
        assert!(!is_full_sha(&format!("{UPSTREAM_COMMIT}0")));
    }

    #[test]
    fn a_missing_commit_is_told_apart() {
        assert!(lacks_commit(
            "fatal: remote error: upload-pack: not our ref 0123"
        ));
        assert!(!lacks_commit(
            "fatal: unable to connect to 127.0.0.1: Connection refused"
        ));
    }
}
