//! The API key goes to the model's server and nowhere else: not to any process assay starts
//! (the installers, the interpreter probe), not to assay's own `/proc/<pid>/environ` while it
//! works, and evaluated code cannot find the harness's files even where they lie inside a tree
//! the sandbox shows.

mod common;
#[path = "../../assay-models/tests/mock/mod.rs"]
mod mock;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use assay_pyenv::Interpreter;
use assay_tasks::bigcodebench::{Dataset, Subset};
use common::{assay_command, text};
use mock::{MockServer, Reply, Route};
use serde_json::Value;

const KEY: &str = "sk-canary-secrets-90d1c3";
const ANTHROPIC_KEY: &str = "sk-ant-canary-secrets-17ab0e";
/// A tracker's token (W&B, MLflow), which `assay export` alone hands on.
const TRACKER_KEY: &str = "tracker-canary-secrets-5c21d9";

/// An executable shell script at `path`.
fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn set_up_children_see_the_allow_list_and_no_key() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&seen).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    // A stand-in interpreter that records its environment, then is the real one; and a `uv`
    // first on PATH that records its environment and fails, ending the set-up there.
    let real = Interpreter::discover(None).unwrap().executable;
    let python = bin.join("python3.11");
    script(
        &python,
        &format!(
            "env > '{}/python.'$$\nexec '{}' \"$@\"\n",
            seen.display(),
            real.display()
        ),
    );
    script(
        &bin.join("uv"),
        &format!(
            "env > '{}/uv.'$$\necho 'stand-in uv: refusing' >&2\nexit 3\n",
            seen.display()
        ),
    );
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    // Its own cache, so that the environment is missing and the set-up really starts.
    let out = assay_command(dir.path())
        .args(["env", "setup", "--profile", "test", "--python"])
        .arg(&python)
        .env("ASSAY_CACHE_DIR", dir.path().join("cache"))
        .env("PATH", &path)
        .env("OPENAI_API_KEY", KEY)
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .env("ASSAY_TEST_UNLISTED", "not-for-children")
        .env("UV_INDEX_URL", "https://index.example/simple")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "the stand-in uv fails the set-up");
    assert!(stderr.contains("stand-in uv: refusing"), "{stderr}");
    let mut children: Vec<(String, String)> = std::fs::read_dir(&seen)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(e.path()).unwrap())
        })
        .collect();
    children.sort();
    let kinds: Vec<&str> = children
        .iter()
        .map(|(name, _)| name.split('.').next().unwrap())
        .collect();
    assert!(
        kinds.contains(&"python") && kinds.contains(&"uv"),
        "{kinds:?}"
    );
    for (name, env) in &children {
        assert!(
            !env.contains(KEY) && !env.contains(ANTHROPIC_KEY),
            "{name}:\n{env}"
        );
        assert!(
            !env.contains("not-for-children"),
            "{name}: not on the list:\n{env}"
        );
        assert!(env.contains(&format!("PATH={path}")), "{name}:\n{env}");
        assert!(env.contains("HOME="), "{name}:\n{env}");
        // The installers' own settings pass.
        assert!(
            env.contains("UV_INDEX_URL=https://index.example/simple"),
            "{name}:\n{env}"
        );
    }
}

#[test]
fn the_key_leaves_assays_own_environment_before_it_works() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    let pid = Arc::new(AtomicU32::new(0));
    let environ: Arc<Mutex<Vec<Result<String, String>>>> = Arc::default();
    let (seen_pid, seen) = (pid.clone(), environ.clone());
    let task = Dataset::embedded("v0.1.4", Subset::Hard).unwrap().tasks[0].clone();
    let answer = format!("```python\n{}\n```", task.reference_solution());
    // While assay waits for this answer, its client holds the key: what does its environment
    // show?
    server.respond_with(Route::Chat, move |_| {
        let path = format!("/proc/{}/environ", seen_pid.load(Ordering::SeqCst));
        seen.lock().unwrap().push(
            std::fs::read(&path)
                .map(|bytes| text(&bytes))
                .map_err(|e| e.kind().to_string()),
        );
        Reply::chat(&[&answer])
    });
    let mut child = assay_command(dir.path())
        .args(["generate", "bigcodebench-hard", "--model", "openai:mock"])
        .args([
            "--base-url",
            &server.openai_base(),
            "--tasks",
            &task.task_id,
        ])
        .args(["--out", "run"])
        .env("OPENAI_API_KEY", KEY)
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .env("WANDB_API_KEY", TRACKER_KEY)
        .env("MLFLOW_TRACKING_TOKEN", TRACKER_KEY)
        // Matched by name, not listed: Databricks' and Azure's secrets too.
        .env("DATABRICKS_PASSWORD", TRACKER_KEY)
        .env("DATABRICKS_GOOGLE_CREDENTIALS", TRACKER_KEY)
        .env("AZURE_CLIENT_SECRET", TRACKER_KEY)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    pid.store(child.id(), Ordering::SeqCst);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let requests = server.requests_to(Route::Chat);
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str()),
        "the key reached the server"
    );
    let environ = environ.lock().unwrap();
    assert_eq!(environ.len(), 1);
    match &environ[0] {
        Ok(text) => {
            assert!(
                text.contains("ASSAY_CACHE_DIR="),
                "this is assay's environment: {text}"
            );
            assert!(!text.contains(KEY), "{text}");
            assert!(!text.contains(ANTHROPIC_KEY), "{text}");
            assert!(!text.contains(TRACKER_KEY), "a tracker's token: {text}");
        }
        // Not readable at all is as good; but as root (CI) it must be readable.
        Err(kind) => assert!(
            !rustix::process::geteuid().is_root(),
            "root could not read it: {kind}"
        ),
    }
}

/// A stand-in harness under `/usr/local/share`, which the sandbox binds read-only into every
/// job's view: the samples file, the run directory and the home directory of an `assay eval`
/// all lie inside a visible tree.
#[test]
fn evaluated_code_cannot_read_the_harness_inside_a_bound_tree() {
    assert!(
        rustix::process::geteuid().is_root(),
        "this test places a stand-in harness under /usr/local/share, which needs root"
    );
    let root = PathBuf::from(format!(
        "/usr/local/share/assay-test-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join(".netrc"), "password home-canary-5e1").unwrap();
    let samples = root.join("model--bigcodebench-complete--x.jsonl");
    let run = root.join("run");
    // The sample raises what it could read: its verdict's details carry it.
    let probe = format!(
        "seen = []\nfor p in {paths:?}:\n    try:\n        seen.append(open(p).read()[:200])\n    \
         except OSError as e:\n        seen.append(type(e).__name__)\n\
         raise RuntimeError('SEEN:' + repr(seen))\n",
        paths = [
            samples.display().to_string(),
            run.join("manifest.json").display().to_string(),
            home.join(".netrc").display().to_string(),
            root.join("visible.txt").display().to_string(),
        ]
    );
    std::fs::write(root.join("visible.txt"), "a data file anyone may read").unwrap();
    let sample = serde_json::json!({"task_id": "BigCodeBench/1", "solution": probe});
    std::fs::write(&samples, format!("{sample}\n")).unwrap();
    let out = assay_command(Path::new("/"))
        .args(["eval", "bigcodebench", "--samples"])
        .arg(&samples)
        .args(["--tasks", "BigCodeBench/1", "--out"])
        .arg(&run)
        .args(["--profile", "test", "--json"])
        .env("HOME", &home)
        .output()
        .unwrap();
    let results = std::fs::read_to_string(run.join("eval_results.json"));
    let _ = std::fs::remove_dir_all(&root);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let results: Value = serde_json::from_str(&results.unwrap()).unwrap();
    let details = results["eval"]["BigCodeBench/1"][0]["details"].to_string();
    assert!(details.contains("SEEN:"), "{details}");
    // The visible file proves the tree was in view; nothing of the harness was.
    assert!(details.contains("a data file anyone may read"), "{details}");
    assert!(
        !details.contains("BigCodeBench/1"),
        "the samples file: {details}"
    );
    assert!(
        !details.contains("bigcodebench-eval"),
        "the manifest: {details}"
    );
    assert!(
        !details.contains("home-canary"),
        "the home directory: {details}"
    );
}
