//! Command jobs: a program run confined, its files and output, its relay to the caller's socket
//! (the only way out of the job's network namespace), and an early stop that takes its tree.

mod common;

use std::time::{Duration, Instant};

use assay_sandbox::{CommandJob, Connections, InputFile, Status};
use common::{engine, limits, marker, processes_with, python, run};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A job that runs the test environment's Python on `code`.
fn python_job(code: &str) -> CommandJob {
    let mut job = CommandJob::new(vec![
        python().display().to_string(),
        "-c".into(),
        code.into(),
    ]);
    job.limits = Some(limits(20));
    job
}

#[test]
fn a_program_runs_in_its_workdir_with_its_files_and_its_output_and_files_come_back() {
    let engine = engine();
    let mut job = CommandJob::new(vec![
        "sh".into(),
        "-c".into(),
        "cat data/in.txt \"$HOME/.agent/config.toml\"; mkdir -p output; \
         tr a-z A-Z < data/in.txt > output/up.txt; echo oops >&2; exit 3"
            .into(),
    ]);
    job.home_files = vec![InputFile {
        path: ".agent/config.toml".into(),
        data: b"key = 1\n".to_vec(),
    }];
    job.files = vec![InputFile {
        path: "data/in.txt".into(),
        data: b"hello\n".to_vec(),
    }];
    job.dirs = vec!["output".into()];
    let out = run(engine.run_command(job, |_| unreachable!("no relay"), std::future::pending()));
    assert_eq!(
        (out.status, out.exit_code),
        (Status::Error, Some(3)),
        "{}",
        out.reason
    );
    assert_eq!(out.stdout.text, "hello\nkey = 1\n");
    assert_eq!(out.stderr.text, "oops\n");
    let up = out.files.iter().find(|f| f.path == "output/up.txt");
    assert_eq!(up.map(|f| f.data.as_slice()), Some(&b"HELLO\n"[..]));
    // Only the program's work comes back: not its home, nor the relay's socket.
    let paths: Vec<&str> = out.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["data/in.txt", "output/up.txt"]);
}

#[test]
fn a_missing_program_is_its_own_failure_not_the_harness() {
    let engine = engine();
    let job = CommandJob::new(vec!["no-such-agent-cli".into()]);
    let out = run(engine.run_command(job, |_| {}, std::future::pending()));
    assert_eq!(
        (out.status, out.exit_code),
        (Status::Error, Some(127)),
        "{}",
        out.reason
    );
    assert!(
        out.stderr.text.contains("no-such-agent-cli"),
        "{}",
        out.stderr.text
    );
}

/// Answers each connection with `reply:` and the first line it read.
async fn echo_lines(mut connections: Connections) {
    while let Some(mut stream) = connections.accept().await {
        tokio::spawn(async move {
            let (read, mut write) = stream.split();
            let mut line = String::new();
            let _ = BufReader::new(read).read_line(&mut line).await;
            let _ = write.write_all(format!("reply:{line}").as_bytes()).await;
        });
    }
}

#[test]
fn the_relayed_port_reaches_the_callers_socket_and_nothing_else_is_reachable() {
    let engine = engine();
    let code = r#"
import socket, json
out = {}
for i in range(3):
    s = socket.create_connection(("127.0.0.1", 4010), timeout=5)
    s.sendall(b"ask %d\n" % i)
    out[i] = s.makefile().readline().strip()
for port in (4011, 80):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2)
        out[port] = "reached"
    except OSError as e:
        out[port] = type(e).__name__
try:
    socket.create_connection(("1.1.1.1", 80), timeout=2)
    out["internet"] = "reached"
except OSError as e:
    out["internet"] = type(e).__name__
print(json.dumps(out))
"#;
    let mut job = python_job(code);
    job.relay = Some(4010);
    let serve = |connections| {
        tokio::spawn(echo_lines(connections));
    };
    let out = run(engine.run_command(job, serve, std::future::pending()));
    assert_eq!(
        out.status,
        Status::Pass,
        "{} {}",
        out.reason,
        out.stderr.text
    );
    let seen: serde_json::Value = serde_json::from_str(out.stdout.text.trim()).unwrap();
    assert_eq!(seen["0"], "reply:ask 0");
    assert_eq!(seen["2"], "reply:ask 2");
    assert_eq!(seen["4011"], "ConnectionRefusedError");
    assert_eq!(seen["80"], "ConnectionRefusedError");
    assert_ne!(seen["internet"], "reached");
}

#[test]
fn a_stop_ends_the_whole_tree_at_once_with_its_reason_and_keeps_the_files() {
    let engine = engine();
    let mark = marker("cmd");
    // The name is put together at run time: no command line may carry it, only the grandchild
    // that takes it.
    let (head, tail) = mark.split_at(2);
    let code = format!(
        "import subprocess, sys, time\n\
         open('made.txt', 'w').write('before the stop')\n\
         child = \"import ctypes, time; ctypes.CDLL(None).prctl(15, b'{head}' + b'{tail}', 0, 0, 0); \
         time.sleep(300)\"\n\
         subprocess.Popen([sys.executable, '-c', child])\n\
         time.sleep(300)\n"
    );
    let job = python_job(&code);
    let started = Instant::now();
    let stop = async {
        while processes_with(&mark).is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        "the episode's request budget is spent".to_string()
    };
    let out = run(engine.run_command(job, |_| {}, stop));
    assert_eq!(out.status, Status::Error, "{}", out.reason);
    assert_eq!(out.reason, "the episode's request budget is spent");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert!(
        processes_with(&mark).is_empty(),
        "{:?}",
        processes_with(&mark)
    );
    let made = out.files.iter().find(|f| f.path == "made.txt");
    assert_eq!(
        made.map(|f| f.data.as_slice()),
        Some(&b"before the stop"[..])
    );
}
