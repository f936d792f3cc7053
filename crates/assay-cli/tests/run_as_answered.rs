//! `assay run` judges each answer as soon as the model gives it, while the model answers the
//! others: against a real HTTP server on loopback, what it writes is what `assay generate` then
//! `assay eval` write (one and several samples, Complete and Instruct, shards and their merge),
//! a `kill -9` while answers and verdicts are both under way loses nothing and repeats
//! nothing, and its progress counts answers, references and verdicts apart.

mod common;
#[path = "../../assay-models/tests/mock/mod.rs"]
mod mock;

use std::path::Path;
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{
    asked_about, assay_command, assert_same_judging, fenced, hard_task, lines, read_json, text,
};
use mock::{MockServer, Reply, Route};
use serde_json::Value;

/// Hard tasks the small `test` environment judges: the first two pass with their reference
/// solutions, the third's answer always fails.
const TASKS: [&str; 3] = ["BigCodeBench/19", "BigCodeBench/120", "BigCodeBench/161"];
/// What judging needs in the small environment.
const JUDGING: &[&str] = &["--profile", "test", "--jobs", "2"];

/// The `i`-th answer to `task_id`, fenced as a chat model writes it: the reference solution,
/// except for odd `i` and the last task, a program that fails its tests. (Answers 0 and 2 run
/// the same program: two samples with one digest.)
fn answer(task_id: &str, i: usize) -> String {
    let code = if i % 2 == 1 || task_id == TASKS[2] {
        "def task_func(*args, **kwargs):\n    return None".to_string()
    } else {
        hard_task(task_id).reference_solution()
    };
    fenced(&code)
}

/// A server answering every request with `n` answers at once.
fn server() -> MockServer {
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, move |body| {
        let task = asked_about(body);
        let n = body["n"].as_u64().unwrap_or(1) as usize;
        let texts: Vec<String> = (0..n).map(|i| answer(&task, i)).collect();
        Reply::chat(&texts.iter().map(String::as_str).collect::<Vec<_>>())
    });
    server
}

/// `assay COMMAND bigcodebench-hard` over [`TASKS`] against `server`, with `rest`.
fn assay(command: &str, server: &MockServer, rest: &[&str], dir: &Path) -> Output {
    let mut assay = assay_command(dir);
    assay.args([command, "bigcodebench-hard", "--tasks", &TASKS.join(",")]);
    if command != "eval" {
        assay.args(["--model", "openai:m", "--base-url", &server.openai_base()]);
    }
    if command != "generate" {
        assay.args(JUDGING);
    }
    let out = assay.args(rest).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "assay {command} {rest:?}\n{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    out
}

/// The progress lines `assay` printed on a stderr that is not a terminal.
fn progress(out: &Output) -> Vec<String> {
    text(&out.stderr)
        .lines()
        .filter(|l| l.contains("answers ") || l.contains("verdicts ") || l.contains("references "))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_run_writes_what_generate_then_eval_write() {
    let dir = tempfile::tempdir().unwrap();
    let server = server();
    for (name, rest) in [
        ("complete-1", vec![]),
        ("instruct-3", vec!["--split", "instruct", "-n", "3"]),
    ] {
        let (run, gen, eval) = (
            format!("run-{name}"),
            format!("gen-{name}"),
            format!("eval-{name}"),
        );
        let ran = assay(
            "run",
            &server,
            &[&rest[..], &["--out", &run]].concat(),
            dir.path(),
        );
        assay(
            "generate",
            &server,
            &[&rest[..], &["--out", &gen]].concat(),
            dir.path(),
        );
        let samples = dir.path().join(&gen).join("samples.jsonl");
        let split = if name.starts_with("instruct") {
            "instruct"
        } else {
            "complete"
        };
        let samples = samples.display().to_string();
        assay(
            "eval",
            &server,
            &["--samples", &samples, "--split", split, "--out", &eval],
            dir.path(),
        );
        let (run, eval) = (dir.path().join(run), dir.path().join(eval));
        // The model's name comes from `--model` in a run, from the file name in an eval.
        let without_model = |dir: &Path| {
            let mut pass_at_k = read_json(&dir.join("pass_at_k.json"));
            pass_at_k.as_object_mut().unwrap().remove("model");
            pass_at_k
        };
        assert_eq!(without_model(&run), without_model(&eval), "{name}");
        std::fs::copy(run.join("pass_at_k.json"), eval.join("pass_at_k.json")).unwrap();
        assert_same_judging(&run, &eval);
        let statuses: Vec<String> = lines(&run.join("results.jsonl"))
            .iter()
            .map(|r| r["status"].as_str().unwrap().to_string())
            .collect();
        let want: Vec<&str> = match name {
            "complete-1" => vec!["pass", "pass", "fail"],
            _ => [
                ["pass", "fail", "pass"],
                ["pass", "fail", "pass"],
                ["fail"; 3],
            ]
            .concat(),
        };
        assert_eq!(statuses, want, "{name}");
        // Progress: answers, references and verdicts apart, never a count of nothing.
        let shown = progress(&ran);
        let samples = if name == "complete-1" { 3 } else { 9 };
        let last = shown.last().expect("a progress line at the end");
        assert!(
            last.contains(&format!("answers {samples}/{samples}")),
            "{shown:?}"
        );
        assert!(
            last.contains(&format!("verdicts {samples}/{samples}")),
            "{shown:?}"
        );
        assert!(shown.iter().all(|l| !l.contains(" 0/0")), "{shown:?}");
    }

    // Shards of a run, merged, are the single run.
    for shard in ["0/2", "1/2"] {
        let out = format!("shard-{}", &shard[..1]);
        assay(
            "run",
            &server,
            &["--shard", shard, "--out", &out],
            dir.path(),
        );
    }
    let merged = assay_command(dir.path())
        .args(["merge", "shard-1", "shard-0", "--out", "merged"])
        .output()
        .unwrap();
    assert_eq!(merged.status.code(), Some(0), "{}", text(&merged.stderr));
    assert_same_judging(
        &dir.path().join("merged"),
        &dir.path().join("run-complete-1"),
    );
}

/// Every record of `results.jsonl` in `run`, by task, without its index (which a run gives
/// its final value at the end).
fn records_by_task(run: &Path) -> Vec<(String, Value)> {
    let mut records: Vec<(String, Value)> = lines(&run.join("results.jsonl"))
        .into_iter()
        .map(|mut r| {
            r.as_object_mut().unwrap().remove("index");
            (r["task_id"].as_str().unwrap().to_string(), r)
        })
        .collect();
    records.sort_by(|a, b| a.0.cmp(&b.0));
    records
}

#[test]
fn answers_are_judged_as_they_come_and_a_kill_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // Session 0: the last two tasks refused (an ended run, its figures written). Session 1:
    // the last answered, the second hanging. Session 2: everything answered.
    let phase = Arc::new(AtomicUsize::new(0));
    let now = phase.clone();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, move |body| {
        let task = asked_about(body);
        match (task.as_str(), now.load(Ordering::SeqCst)) {
            (t, 0) if t != TASKS[0] => Reply::openai_error(503, "server_error", "busy", "later"),
            (t, 1) if t == TASKS[1] => Reply::Hang,
            _ => Reply::chat(&[&answer(&task, 0)]),
        }
    });
    let args = [
        "run",
        "bigcodebench-hard",
        "--tasks",
        &TASKS.join(","),
        "--model",
        "openai:m",
        "--base-url",
        &server.openai_base(),
        "--retries",
        "0",
        "--out",
        "run",
    ];
    let ended = assay_command(dir.path())
        .args(args)
        .args(JUDGING)
        .output()
        .unwrap();
    assert_eq!(ended.status.code(), Some(1), "{}", text(&ended.stderr));
    let summary = dir.path().join("run/summary.json");
    assert!(summary.exists());

    phase.store(1, Ordering::SeqCst);
    let mut child = assay_command(dir.path())
        .args(args)
        .args(JUDGING)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // A new verdict while the model still owes the second answer: judged as it came.
    let (results, log) = (
        dir.path().join("run/results.jsonl"),
        dir.path().join("run/generation.jsonl"),
    );
    // Whole lines only: a record half written when the file is read is not there yet (the kill
    // below would otherwise leave it torn, for the resume to drop).
    let count = |path: &Path| std::fs::read_to_string(path).map_or(0, |t| t.matches('\n').count());
    let deadline = Instant::now() + Duration::from_secs(120);
    while count(&results) < 2 {
        assert!(
            Instant::now() < deadline,
            "no new verdict while the second answer was owed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(count(&log), 4, "the second answer never came");
    // samples.jsonl is still session 0's, and its figures are gone: they miss the new verdict.
    assert_eq!(lines(&dir.path().join("run/samples.jsonl")).len(), 1);
    assert!(!summary.exists());
    child.kill().unwrap();
    child.wait().unwrap();
    let before = records_by_task(&dir.path().join("run"));
    assert_eq!(
        before.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(),
        [TASKS[2], TASKS[0]],
        "by task id"
    );

    // The same command: only the owed answer is asked for, only its sample judged.
    phase.store(2, Ordering::SeqCst);
    let resumed = assay_command(dir.path())
        .args(args)
        .args(JUDGING)
        .output()
        .unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    let mut asked: Vec<String> = server
        .requests_to(Route::Chat)
        .iter()
        .map(|r| asked_about(&r.body))
        .collect();
    asked.sort();
    assert_eq!(
        asked,
        [TASKS[1], TASKS[1], TASKS[1], TASKS[2], TASKS[2], TASKS[0]],
        "by task id: refused, hung and answered; refused and answered; answered"
    );
    let after = records_by_task(&dir.path().join("run"));
    assert_eq!(after.len(), 3);
    for kept in &before {
        assert!(
            after.contains(kept),
            "{} was judged again: {:?}",
            kept.0,
            after
        );
    }
    let said = text(&resumed.stderr);
    assert!(said.contains("2 of 3 answers are already there"), "{said}");

    // The same files as a run never interrupted.
    let whole = assay_command(dir.path())
        .args(&args[..args.len() - 1])
        .args(["whole"])
        .args(JUDGING)
        .output()
        .unwrap();
    assert_eq!(whole.status.code(), Some(0), "{}", text(&whole.stderr));
    assert_same_judging(&dir.path().join("run"), &dir.path().join("whole"));
}
