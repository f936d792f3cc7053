//! Reasoning models' runs in the report: the completion tokens spent thinking apart, the
//! answers that came with thinking and those cut off inside it (BigCodeBench), the episodes
//! that ended at a reply cut off inside its thinking (PyBench); and nothing of it for a run
//! without any, whose report reads as before.

use std::path::Path;

use assay_records::{Identity, Kind, Manifest};
use assay_report::{html, render, report, Run};
use serde_json::{json, Value};

fn write(dir: &Path, kind: Kind, benchmark: &str, files: &[(&str, Vec<Value>)]) {
    let identity = Identity {
        benchmark: Some(benchmark.into()),
        model: Some("openai:m".into()),
        ..Identity::default()
    };
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string(&Manifest::new(kind, identity)).unwrap(),
    )
    .unwrap();
    for (name, lines) in files {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(dir.join(name), text).unwrap();
    }
}

fn sample(index: usize, task: &str, status: &str) -> Value {
    json!({
        "index": index, "task_id": task, "program_digest": "d", "status": status,
        "reason": "r", "official": null, "infra": null, "tests": [], "wall_seconds": 1.0,
        "cpu_seconds": null, "memory_peak_bytes": null, "isolation": "full",
    })
}

/// A request for `task` answered with one text per entry of `thinking`.
fn request(task: &str, thinking: Value, reasoning_tokens: u64) -> Value {
    let n = thinking.as_array().unwrap().len();
    json!({
        "task_id": task, "raw": vec!["answer"; n], "solutions": vec!["def f(): pass"; n],
        "finish_reasons": vec!["stop"; n],
        "usage": {"prompt_tokens": 100, "completion_tokens": 500, "reasoning_tokens": reasoning_tokens},
        "latency_seconds": 1.0, "attempts": 1, "wanted": n, "thinking": thinking,
    })
}

/// Three answers of two tasks: two that thought (one cut off inside it), one that did not.
fn bigcodebench(dir: &Path) {
    let thought = json!({"source": "field", "text": "hmm"});
    let cut = json!({"source": "text", "text": "hmm", "cut": true});
    write(
        dir,
        Kind::BigcodebenchRun,
        "bigcodebench-hard",
        &[
            (
                "samples.jsonl",
                vec![
                    json!({"task_id": "BigCodeBench/1", "solution": "def f(): pass"}),
                    json!({"task_id": "BigCodeBench/1", "solution": "def f(): pass"}),
                    json!({"task_id": "BigCodeBench/2", "solution": ""}),
                ],
            ),
            (
                "results.jsonl",
                vec![
                    sample(0, "BigCodeBench/1", "pass"),
                    sample(1, "BigCodeBench/1", "pass"),
                    sample(2, "BigCodeBench/2", "fail"),
                ],
            ),
            (
                "generation.jsonl",
                vec![
                    request("BigCodeBench/1", json!([thought, null]), 300),
                    request("BigCodeBench/2", json!([cut]), 400),
                ],
            ),
        ],
    );
}

fn episode(task: &str, end: &str, reasoning_tokens: u64) -> Value {
    json!({
        "task_id": task, "status": "fail", "reason": "r",
        "verdicts": {"faithful": {"status": "fail", "reason": "r"}, "fixed": {"status": "fail", "reason": "r"}},
        "turns": 1, "end": end, "seconds": 1.0,
        "tokens": {"prompt_tokens": 10, "completion_tokens": 20, "reasoning_tokens": reasoning_tokens},
    })
}

#[test]
fn a_bigcodebench_run_counts_its_thinking_and_says_its_reasoning_tokens_apart() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("thinker");
    std::fs::create_dir(&run_dir).unwrap();
    bigcodebench(&run_dir);
    let run = Run::load(&run_dir).unwrap();
    assert_eq!((run.thinking, run.cut_while_thinking), (2, 1));
    let tokens = run.tokens.as_ref().unwrap();
    assert_eq!(
        (tokens.completion_tokens, tokens.reasoning_tokens),
        (1000, 700)
    );

    let runs = [run];
    let report = report(&runs, 0);
    let text = render(&report);
    let line = "reasoning: 1000 completion tokens, of which 700 reasoning; 2 answers came with \
                thinking; 1 answer ended inside its thinking, before any answer (judged fail)";
    assert!(text.contains(line), "{text}");
    let page = html(&report, &runs);
    assert!(
        page.contains(&format!("<p class=\"reasoning\">thinker {line}</p>")),
        "{page}"
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["runs"][0]["thinking"], 2);
    assert_eq!(json["runs"][0]["cut_while_thinking"], 1);
    assert_eq!(json["runs"][0]["tokens"]["reasoning_tokens"], 700);
}

#[test]
fn a_pybench_run_counts_the_episodes_cut_off_inside_their_thinking() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        Kind::PybenchRun,
        "pybench",
        &[(
            "results.jsonl",
            vec![
                episode("PyBench/1", "answered", 5),
                episode("PyBench/2", "cut_while_thinking", 20),
            ],
        )],
    );
    let runs = [Run::load(dir.path()).unwrap()];
    assert_eq!((runs[0].thinking, runs[0].cut_while_thinking), (0, 1));
    let text = render(&report(&runs, 0));
    assert!(
        text.contains(
            "reasoning: 40 completion tokens, of which 25 reasoning; 1 episode ended at a reply \
             cut off inside its thinking (judged on what they produced)"
        ),
        "{text}"
    );
}

#[test]
fn a_run_without_reasoning_reports_none() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        Kind::PybenchRun,
        "pybench",
        &[("results.jsonl", vec![episode("PyBench/1", "answered", 0)])],
    );
    let runs = [Run::load(dir.path()).unwrap()];
    let report = report(&runs, 0);
    assert!(!render(&report).contains("reasoning"));
    assert!(!html(&report, &runs).contains("class=\"reasoning\""));
    let json = serde_json::to_value(&report).unwrap();
    assert!(json["runs"][0].get("thinking").is_none());
    assert!(json["runs"][0].get("cut_while_thinking").is_none());
    assert!(json["runs"][0]["tokens"].get("reasoning_tokens").is_none());
}
