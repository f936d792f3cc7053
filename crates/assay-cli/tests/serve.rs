//! `--serve`: the model server a run starts for itself, as a user runs it, against a small
//! OpenAI-compatible server of the standard library (`data/openai_stub_server.py`) and
//! commands that fail: started in a group of its own without the API keys, waited for,
//! recorded, stopped when the run ends, fails, is interrupted or killed; a command that exits
//! at once, never answers, or answers without a model list is a clear error with the end of
//! its log. The real llama-cpp-python server behind `--serve` is in `real_model.rs`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::llama::{free_port, models};
use common::{assay_command, lines, read_json, text};

const KEY: &str = "sk-serve-canary-31337";
/// How long a stopped server may take to be gone (assay waits for it to stop, bounded).
const GONE_WAIT: Duration = Duration::from_secs(30);

/// The interpreter the stub runs on.
fn python() -> String {
    assay_pyenv::Interpreter::discover(None)
        .expect("a Python 3.11 interpreter")
        .executable
        .display()
        .to_string()
}

/// The command that serves the stub on `port` in `mode`.
fn stub(port: u16, mode: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/openai_stub_server.py");
    format!(
        "{} {} --port {port} --mode {mode}",
        python(),
        script.display()
    )
}

/// `assay generate bigcodebench-hard --model openai:stub --serve SERVE` on one task into
/// `out`, with `rest`, the API key in assay's environment.
fn generate(dir: &Path, serve: &str, out: &str, rest: &[&str]) -> std::process::Command {
    let mut command = assay_command(dir);
    command
        .args([
            "generate",
            "bigcodebench-hard",
            "--model",
            "openai:stub",
            "--serve",
            serve,
            "--tasks",
            "BigCodeBench/19",
            "--out",
            out,
        ])
        .args(rest)
        .env("OPENAI_API_KEY", KEY);
    command
}

/// What assay said when it refused to run, having exited with 1.
fn refused(done: &Output) -> String {
    let stderr = text(&done.stderr);
    assert_eq!(done.status.code(), Some(1), "{stderr}");
    stderr
}

/// Waits until nothing answers on `port`; panics after [`GONE_WAIT`].
fn wait_until_gone(port: u16) {
    let deadline = Instant::now() + GONE_WAIT;
    while models(port).is_some() {
        assert!(
            Instant::now() < deadline,
            "the server on port {port} still answers"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until `path` holds `needle`; panics after `limit`.
fn wait_for_text(path: &Path, needle: &str, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let found = std::fs::read_to_string(path).unwrap_or_default();
        if found.contains(needle) {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "{} never held {needle:?}: {found}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_started_server_answers_without_the_keys_and_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let done = generate(dir.path(), &stub(port, "ok"), "run", &[])
        .output()
        .unwrap();
    let stderr = text(&done.stderr);
    assert!(done.status.success(), "{stderr}");
    assert!(stderr.contains("starting the model server"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the model server answers at http://127.0.0.1:{port}/v1, serving stub"
        )),
        "{stderr}"
    );
    // Stopped before assay ended: nothing answers there any more.
    assert!(models(port).is_none(), "the server outlived the run");
    let run = dir.path().join("run");
    let log = std::fs::read_to_string(run.join("server.log")).unwrap();
    assert!(log.contains("keys seen: []"), "{log}");
    assert!(log.contains("group leader: True"), "{log}");
    assert!(log.contains("stopping on SIGTERM"), "{log}");
    assert!(!log.contains(KEY));
    let manifest = read_json(&run.join("manifest.json"));
    let server = &manifest["model_access"]["server"];
    assert_eq!(server["command"], stub(port, "ok"));
    assert_eq!(server["models"], serde_json::json!(["stub"]));
    assert_eq!(server["log"], "server.log");
    assert_eq!(
        manifest["model_access"]["base_url"],
        format!("http://127.0.0.1:{port}/v1")
    );
    assert_eq!(lines(&run.join("generation.jsonl")).len(), 1);
    for entry in std::fs::read_dir(&run).unwrap() {
        let path = entry.unwrap().path();
        let content = text(&std::fs::read(&path).unwrap());
        assert!(!content.contains(KEY), "{} holds the key", path.display());
    }

    // Nothing left to ask: no server is started, and the record of the last one stays.
    let again = generate(dir.path(), &stub(port, "ok"), "run", &[])
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(!text(&again.stderr).contains("starting the model server"));
    let log_after = std::fs::read_to_string(run.join("server.log")).unwrap();
    assert_eq!(log_after, log);
    let manifest = read_json(&run.join("manifest.json"));
    assert_eq!(manifest["model_access"]["server"]["models"][0], "stub");
}

#[test]
fn a_server_that_exits_at_once_is_an_error_quoting_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let serve = format!(
        "{} -c 'import sys; print(\"CUDA error: no GPU found\"); sys.exit(3)'",
        python()
    );
    let base = format!("http://127.0.0.1:{port}/v1");
    let started = Instant::now();
    let done = generate(dir.path(), &serve, "run", &["--base-url", &base])
        .output()
        .unwrap();
    let stderr = refused(&done);
    assert!(
        stderr.contains(&format!(
            "the server exited (exit status: 3) before {base}/models answered"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("CUDA error: no GPU found"), "{stderr}");
    assert!(stderr.contains("server.log"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn a_server_that_never_answers_is_stopped_at_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let serve = format!(
        "{} -c 'import os, time; print(\"pid\", os.getpid(), flush=True); time.sleep(600)'",
        python()
    );
    let base = format!("http://127.0.0.1:{port}/v1");
    let started = Instant::now();
    let done = generate(
        dir.path(),
        &serve,
        "run",
        &["--base-url", &base, "--serve-timeout", "2"],
    )
    .output()
    .unwrap();
    let stderr = refused(&done);
    assert!(
        stderr.contains(&format!(
            "{base}/models did not answer within 2 s (--serve-timeout"
        )),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    let log = std::fs::read_to_string(dir.path().join("run/server.log")).unwrap();
    let pid: u32 = log
        .lines()
        .find_map(|l| l.strip_prefix("pid "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid in the log: {log}"));
    assert!(
        !PathBuf::from(format!("/proc/{pid}")).exists(),
        "the server that never answered is still running"
    );
}

#[test]
fn bad_ways_to_reach_a_server_are_named() {
    let dir = tempfile::tempdir().unwrap();
    // A server that answers, but not with a model list where assay looks.
    let port = free_port();
    let done = generate(dir.path(), &stub(port, "no-models"), "a", &[])
        .output()
        .unwrap();
    let stderr = refused(&done);
    assert!(
        stderr.contains(&format!(
            "http://127.0.0.1:{port}/v1/models answered, but not with a model list (HTTP 404"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("/v1"), "{stderr}");
    wait_until_gone(port);

    // No way to know where it listens.
    let done = generate(dir.path(), "ollama serve", "b", &[])
        .output()
        .unwrap();
    let stderr = refused(&done);
    assert!(
        stderr.contains("--serve `ollama serve`: where will it listen? Give --base-url"),
        "{stderr}"
    );
    // A command that does not split.
    let done = generate(
        dir.path(),
        "vllm serve 'Qwen",
        "c",
        &["--base-url", "http://127.0.0.1:1/v1"],
    )
    .output()
    .unwrap();
    let stderr = refused(&done);
    assert!(stderr.contains("--serve: unbalanced quotes"), "{stderr}");
    // A program that is not there.
    let done = generate(dir.path(), "no-such-server --port 1", "d", &[])
        .output()
        .unwrap();
    let stderr = refused(&done);
    assert!(
        stderr.contains("--serve: cannot start `no-such-server`"),
        "{stderr}"
    );
    // The reference solutions need no server.
    let done = assay_command(dir.path())
        .args([
            "generate",
            "bigcodebench-hard",
            "--model",
            "reference",
            "--serve",
            "x --port 1",
        ])
        .output()
        .unwrap();
    let stderr = refused(&done);
    assert!(
        stderr.contains("--serve and --direct-completion are for model APIs"),
        "{stderr}"
    );
}

#[test]
fn a_server_already_answering_is_not_started_twice() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let words: Vec<String> = stub(port, "ok").split(' ').map(String::from).collect();
    // The server a user left running.
    #[allow(clippy::disallowed_methods)]
    let mut left = std::process::Command::new(&words[0])
        .args(&words[1..])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while models(port).is_none() {
        assert!(Instant::now() < deadline, "the stub did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    let done = generate(dir.path(), &stub(port, "ok"), "run", &[])
        .output()
        .unwrap();
    let _ = left.kill();
    let _ = left.wait();
    let stderr = refused(&done);
    assert!(
        stderr.contains(&format!(
            "http://127.0.0.1:{port}/v1/models already answers (models: stub); a server left running?"
        )),
        "{stderr}"
    );
}

/// Starts a generation against a slow stub (two seconds an answer) over many tasks, and
/// waits until the server answers.
fn slow_run(dir: &Path, port: u16) -> std::process::Child {
    let tasks = "BigCodeBench/13,BigCodeBench/15,BigCodeBench/17,BigCodeBench/19,BigCodeBench/34";
    let child = generate(
        dir,
        &stub(port, "slow"),
        "run",
        &["--tasks", tasks, "--concurrency", "1"],
    )
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
    .spawn()
    .unwrap();
    wait_for_text(
        &dir.join("run/server.log"),
        "POST /v1/chat/completions",
        Duration::from_secs(60),
    );
    child
}

#[test]
fn an_interrupted_run_stops_its_server() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = slow_run(dir.path(), port);
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    let stderr = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("SIGINT: stopping the model server"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the same command resumes where this run stopped"),
        "{stderr}"
    );
    assert!(models(port).is_none(), "the server outlived the run");
    let log = std::fs::read_to_string(dir.path().join("run/server.log")).unwrap();
    assert!(log.contains("stopping on SIGTERM"), "{log}");
}

#[test]
fn a_killed_run_leaves_no_server_behind() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = slow_run(dir.path(), port);
    child.kill().unwrap();
    child.wait().unwrap();
    // The kernel tells the server its parent died.
    wait_for_text(
        &dir.path().join("run/server.log"),
        "stopping on SIGTERM",
        GONE_WAIT,
    );
    wait_until_gone(port);
}
