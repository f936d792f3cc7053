//! The mapping's edge cases on run directories written here: an `assay eval` directory (no
//! generation.jsonl) with an `infra` sample, an unfinished run, damaged or mismatched records,
//! kinds with nothing to export, and a PyBench rerun's records.

use std::path::Path;

use assay_records::{Identity, Kind, Manifest};
use serde_json::{json, Value};

use super::export;
use super::log::{Content, EvalStatus};

fn write_run(
    dir: &Path,
    kind: Kind,
    identity: Identity,
    samples: Option<&str>,
    files: &[(&str, Vec<Value>)],
) {
    let mut manifest = Manifest::new(kind, identity);
    manifest.started_at = 1_796_174_801;
    manifest.samples = samples.map(Into::into);
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string(&manifest).unwrap(),
    )
    .unwrap();
    for (name, lines) in files {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(dir.join(name), text).unwrap();
    }
}

fn hard_eval() -> Identity {
    Identity {
        benchmark: Some("bigcodebench-hard".into()),
        dataset: Some("v0.1.4".into()),
        split: Some("complete".into()),
        ..Identity::default()
    }
}

fn record(index: usize, task: &str, status: &str) -> Value {
    let infra = status == "infra";
    json!({
        "index": index,
        "task_id": task,
        "program_digest": "0123456789abcdef",
        "status": status,
        "reason": if infra { "module `sklearn` is not installed in this environment" } else { "all 3 tests passed" },
        "official": if infra { Value::Null } else { json!({"status": "pass", "details": {}}) },
        "infra": if infra { json!({"cause": "missing-module", "detail": "sklearn"}) } else { Value::Null },
        "tests": [],
        "wall_seconds": 0.5,
        "cpu_seconds": 0.25,
        "memory_peak_bytes": 1024,
        "isolation": "full",
    })
}

fn rows() -> Vec<Value> {
    vec![
        json!({"task_id": "BigCodeBench/19", "solution": "def task_func(directory):\n    pass"}),
        json!({"task_id": "BigCodeBench/752", "solution": "import sklearn"}),
    ]
}

#[test]
fn an_eval_directory_has_no_generation_and_its_infra_sample_is_an_error_not_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    write_run(
        dir.path(),
        Kind::BigcodebenchEval,
        hard_eval(),
        Some("/samples/mymodel--bigcodebench-hard-complete--x.jsonl"),
        &[
            ("samples.jsonl", rows()),
            (
                "results.jsonl",
                vec![
                    record(0, "BigCodeBench/19", "pass"),
                    record(1, "BigCodeBench/752", "infra"),
                ],
            ),
        ],
    );
    std::fs::write(dir.path().join("summary.json"), "{}").unwrap();
    let export = export(dir.path()).unwrap();
    assert!(export.warnings.is_empty(), "{:?}", export.warnings);
    let log = &export.log;
    assert_eq!(log.status, EvalStatus::Success);
    assert_eq!(
        log.eval.model, "none/mymodel",
        "the official harness's name for the file"
    );
    assert_eq!(log.eval.created, "2026-12-02T01:26:41+00:00");
    assert!(export
        .file_name
        .starts_with("2026-12-02T01-26-41-00-00_bigcodebench-hard-complete_"));
    let (passed, infra) = (&log.samples[0], &log.samples[1]);
    // Without generation.jsonl, the assistant said the code judged; the prompt is the split's.
    let dataset = assay_tasks::bigcodebench::Dataset::embedded(
        "v0.1.4",
        assay_tasks::bigcodebench::Subset::Hard,
    )
    .unwrap();
    assert_eq!(
        passed.input,
        dataset.get("BigCodeBench/19").unwrap().complete_prompt
    );
    assert_eq!(
        passed.messages[1].content,
        Content::Text("def task_func(directory):\n    pass".into())
    );
    assert_eq!(passed.output.usage, None);
    assert!(passed.model_usage.is_empty());
    assert_eq!(passed.scores.as_ref().unwrap()["assay"].value, "C");
    assert!(infra.scores.is_none());
    let error = infra.error.as_ref().unwrap();
    assert_eq!(
        error.message,
        "infra (missing-module): module `sklearn` is not installed in this environment"
    );
    assert_eq!(
        (log.results.total_samples, log.results.completed_samples),
        (2, 1)
    );
    assert_eq!(log.results.scores[0].metrics["accuracy"].value, 1.0);
    assert_eq!(log.results.metadata.tasks_set_apart, ["BigCodeBench/752"]);
    assert!(log.stats.model_usage.is_empty());
}

#[test]
fn a_run_that_has_not_finished_is_started_and_shows_only_what_was_judged() {
    let dir = tempfile::tempdir().unwrap();
    write_run(
        dir.path(),
        Kind::BigcodebenchEval,
        hard_eval(),
        None,
        &[
            ("samples.jsonl", rows()),
            ("results.jsonl", vec![record(0, "BigCodeBench/19", "pass")]),
        ],
    );
    let log = export(dir.path()).unwrap().log;
    assert_eq!(log.status, EvalStatus::Started);
    assert_eq!(log.stats.completed_at, "");
    assert_eq!(log.eval.model, "none/none");
    assert_eq!(log.samples.len(), 1);
}

#[test]
fn a_damaged_line_is_an_error_naming_the_file_and_the_line() {
    let dir = tempfile::tempdir().unwrap();
    write_run(
        dir.path(),
        Kind::BigcodebenchEval,
        hard_eval(),
        None,
        &[("samples.jsonl", rows())],
    );
    std::fs::write(
        dir.path().join("results.jsonl"),
        format!(
            "{}\n{{\"index\": 1, \"task_id\n",
            record(0, "BigCodeBench/19", "pass")
        ),
    )
    .unwrap();
    let err = export(dir.path()).unwrap_err().to_string();
    let at = format!(
        "{}:2: not a valid record",
        dir.path().join("results.jsonl").display()
    );
    assert!(err.starts_with(&at), "{err}");
}

#[test]
fn a_record_of_another_sample_is_an_error_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    write_run(
        dir.path(),
        Kind::BigcodebenchEval,
        hard_eval(),
        None,
        &[
            ("samples.jsonl", rows()),
            (
                "results.jsonl",
                vec![
                    record(0, "BigCodeBench/19", "pass"),
                    record(5, "BigCodeBench/19", "pass"),
                ],
            ),
        ],
    );
    let err = export(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("results.jsonl:2: the record of sample 5"),
        "{err}"
    );
}

#[test]
fn directories_without_judged_samples_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_run(
        dir.path(),
        Kind::BigcodebenchGenerate,
        hard_eval(),
        None,
        &[],
    );
    let err = export(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("manifest.json") && err.contains("bigcodebench-generate"),
        "{err}"
    );
    // A path that is not there is said as given; a directory without a run, as not one.
    let missing = export(&dir.path().join("nowhere")).unwrap_err().to_string();
    assert!(
        missing.ends_with("nowhere: No such file or directory (os error 2)"),
        "{missing}"
    );
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let empty = export(&dir.path().join("empty")).unwrap_err().to_string();
    assert!(
        empty.ends_with("empty is not a run directory (it has no manifest.json)"),
        "{empty}"
    );
}

#[test]
fn a_pybench_rerun_keeps_each_tasks_last_record() {
    let dir = tempfile::tempdir().unwrap();
    let identity = Identity {
        benchmark: Some("pybench".into()),
        model: Some("openai:gpt-x".into()),
        checks: Some("faithful".into()),
        protocol: Some("markdown".into()),
        ..Identity::default()
    };
    let episode = |status: &str, end: &str, prompt_tokens: u64| {
        json!({
            "task_id": "PyBench/3",
            "status": status,
            "reason": format!("{status} because"),
            "verdicts": {
                "faithful": {"status": status, "reason": "f"},
                "fixed": {"status": status, "reason": "x"},
            },
            "turns": 1,
            "end": end,
            "tokens": {"prompt_tokens": prompt_tokens, "completion_tokens": 2},
            "seconds": 1.5,
        })
    };
    let trajectory = json!({
        "messages": [
            {"role": "system", "content": "You are an AI Agent"},
            {"role": "user", "content": "[INFO]The data is uploaded to ./data/x.csv"},
            {"role": "user", "content": "Dedup it"},
            {"role": "assistant", "content": "```python\nprint(1)\n```"},
            {"role": "user", "content": "[INFO]This is a Code Interpreter Message:\n1"},
            {"role": "assistant", "content": "Finished: done"},
        ],
        "index": "3",
        "user": "Dedup it",
    });
    write_run(
        dir.path(),
        Kind::PybenchRun,
        identity,
        None,
        &[
            (
                "results.jsonl",
                vec![
                    episode("infra", "model_failed", 0),
                    episode("pass", "answered", 7),
                ],
            ),
            ("trajectory.jsonl", vec![trajectory]),
        ],
    );
    let log = export(dir.path()).unwrap().log;
    assert_eq!(log.samples.len(), 1);
    let sample = &log.samples[0];
    assert_eq!(sample.scores.as_ref().unwrap()["assay"].value, "C");
    assert_eq!(sample.input, "Dedup it");
    assert_eq!(sample.output.completion, "Finished: done");
    let sources: Vec<Option<&str>> = sample.messages.iter().map(|m| m.source).collect();
    assert_eq!(
        sources,
        [
            Some("input"),
            Some("input"),
            Some("input"),
            Some("generate"),
            None,
            Some("generate")
        ]
    );
    assert_eq!(sample.model_usage["openai/gpt-x"].input_tokens, 7);
    assert_eq!(log.stats.model_usage["openai/gpt-x"].total_tokens, 9);
    assert_eq!(log.eval.model, "openai/gpt-x");
}

#[test]
fn a_pybench_evaluation_reads_its_conversations_from_the_trajectories_it_judged() {
    let dir = tempfile::tempdir().unwrap();
    let recorded = dir.path().join("recorded.jsonl");
    let trajectory = json!({
        "messages": [
            {"role": "system", "content": "You are an AI Agent"},
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "Finished: 4"},
        ],
        "index": "134",
        "user": "What is 2+2?",
    });
    let bytes = format!("{trajectory}\n");
    std::fs::write(&recorded, &bytes).unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let identity = |digest: &str| Identity {
        benchmark: Some("pybench".into()),
        model: Some("recorded-recorded".into()),
        checks: Some("fixed".into()),
        samples_digest: Some(digest.into()),
        ..Identity::default()
    };
    let episode = json!({
        "task_id": "PyBench/134",
        "status": "pass",
        "reason": "the answer has what the check looks for",
        "verdicts": {
            "faithful": {"status": "pass", "reason": "f"},
            "fixed": {"status": "pass", "reason": "x"},
        },
        "turns": 1,
        "end": "recorded",
        "seconds": 0.0,
    });
    let digest = blake3::hash(bytes.as_bytes()).to_hex()[..16].to_string();
    let recorded_path = recorded.to_str().unwrap();
    write_run(
        &run,
        Kind::PybenchEval,
        identity(&digest),
        Some(recorded_path),
        &[("results.jsonl", vec![episode.clone()])],
    );
    let judged = export(&run).unwrap();
    assert!(judged.warnings.is_empty(), "{:?}", judged.warnings);
    let sample = &judged.log.samples[0];
    assert_eq!(sample.messages.len(), 3);
    assert_eq!(sample.output.completion, "Finished: 4");
    assert_eq!(judged.log.eval.model, "none/recorded-recorded");
    assert_eq!(judged.log.eval.task_args["protocol"], "recorded");

    // Recordings changed since: the samples stay, without their conversations, and it says so.
    write_run(
        &run,
        Kind::PybenchEval,
        identity("0000000000000000"),
        Some(recorded_path),
        &[("results.jsonl", vec![episode])],
    );
    let changed = export(&run).unwrap();
    assert!(changed.log.samples[0].messages.is_empty());
    assert!(
        changed.warnings[0].contains("has changed since it was judged"),
        "{:?}",
        changed.warnings
    );
}

/// A generation request for `task` that gave the answers `raw` (solutions `solution`), with
/// `thinking` per answer and `reasoning_tokens` of its completion tokens.
fn request(task: &str, raw: &[&str], thinking: Value, reasoning_tokens: u64) -> Value {
    json!({
        "task_id": task, "raw": raw, "solutions": vec!["def task_func(): pass"; raw.len()],
        "finish_reasons": vec!["stop"; raw.len()],
        "usage": {"prompt_tokens": 100, "completion_tokens": 50, "reasoning_tokens": reasoning_tokens},
        "latency_seconds": 2.0, "attempts": 1, "wanted": raw.len(), "thinking": thinking,
    })
}

#[test]
fn a_bigcodebench_answer_that_thought_has_its_reasoning_before_its_text() {
    let dir = tempfile::tempdir().unwrap();
    let identity = Identity {
        model: Some("openai:qwen3".into()),
        ..hard_eval()
    };
    let solution = json!({"task_id": "BigCodeBench/19", "solution": "def task_func(): pass"});
    let other = json!({"task_id": "BigCodeBench/120", "solution": "def task_func(): pass"});
    write_run(
        dir.path(),
        Kind::BigcodebenchRun,
        identity,
        None,
        &[
            (
                "samples.jsonl",
                vec![solution.clone(), solution, other.clone(), other],
            ),
            (
                "results.jsonl",
                vec![
                    record(0, "BigCodeBench/19", "pass"),
                    record(1, "BigCodeBench/19", "pass"),
                    record(2, "BigCodeBench/120", "pass"),
                    record(3, "BigCodeBench/120", "pass"),
                ],
            ),
            (
                "generation.jsonl",
                vec![
                    // Thinking written into the text, then thinking returned beside the answer
                    // with a block the provider encrypted.
                    request(
                        "BigCodeBench/19",
                        &["<think>try <b>x</b></think>\nIt is done."],
                        json!([{"source": "text", "text": "try <b>x</b>"}]),
                        40,
                    ),
                    request(
                        "BigCodeBench/19",
                        &["Done again."],
                        json!([{"source": "field", "text": "again", "redacted": 1}]),
                        0,
                    ),
                    // Two answers at once, neither of which thought.
                    request("BigCodeBench/120", &["plain", "plain too"], json!([]), 0),
                ],
            ),
        ],
    );
    let log = export(dir.path()).unwrap().log;
    let json = serde_json::to_value(&log).unwrap();
    let reply = |i: usize| json["samples"][i]["messages"][1]["content"].clone();
    assert_eq!(
        reply(0),
        json!([
            {"type": "reasoning", "reasoning": "try <b>x</b>", "redacted": false},
            {"type": "text", "text": "It is done."},
        ])
    );
    assert_eq!(
        reply(1),
        json!([
            {"type": "reasoning", "reasoning": "again", "redacted": false},
            {"type": "reasoning", "reasoning": "", "redacted": true},
            {"type": "text", "text": "Done again."},
        ])
    );
    assert_eq!(reply(2), "plain", "without thinking, the text alone");
    let first = &json["samples"][0];
    assert_eq!(first["output"]["completion"], "It is done.");
    assert_eq!(
        first["output"]["choices"][0]["message"]["content"],
        reply(0)
    );
    assert_eq!(first["output"]["usage"]["reasoning_tokens"], 40);
    assert_eq!(first["model_usage"]["openai/qwen3"]["reasoning_tokens"], 40);
    // A request that reported no reasoning tokens says none, not 0.
    assert!(json["samples"][1]["output"]["usage"]
        .get("reasoning_tokens")
        .is_none());
    assert_eq!(
        json["stats"]["model_usage"]["openai/qwen3"]["reasoning_tokens"],
        40
    );
}

#[test]
fn a_pybench_reply_that_thought_has_its_reasoning_and_a_cut_one_stopped_at_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let identity = Identity {
        benchmark: Some("pybench".into()),
        model: Some("openai:qwen3".into()),
        checks: Some("faithful".into()),
        protocol: Some("markdown".into()),
        ..Identity::default()
    };
    let episode = json!({
        "task_id": "PyBench/3", "status": "fail", "reason": "no answer",
        "verdicts": {"faithful": {"status": "fail", "reason": "f"}, "fixed": {"status": "fail", "reason": "x"}},
        "turns": 2, "end": "cut_while_thinking", "seconds": 1.5,
        "tokens": {"prompt_tokens": 30, "completion_tokens": 20, "reasoning_tokens": 15},
    });
    let trajectory = json!({
        "messages": [
            {"role": "system", "content": "You are an AI Agent"},
            {"role": "user", "content": "Dedup it"},
            {"role": "assistant", "content": "```python\nprint(1)\n```", "thinking": "print first"},
            {"role": "user", "content": "[INFO]This is a Code Interpreter Message:\n1"},
            {"role": "assistant", "content": "", "thinking": "now <script>"},
        ],
        "index": "3",
        "user": "Dedup it",
    });
    write_run(
        dir.path(),
        Kind::PybenchRun,
        identity,
        None,
        &[
            ("results.jsonl", vec![episode]),
            ("trajectory.jsonl", vec![trajectory]),
        ],
    );
    let log = export(dir.path()).unwrap().log;
    let json = serde_json::to_value(&log).unwrap();
    let sample = &json["samples"][0];
    let messages = sample["messages"].as_array().unwrap();
    assert_eq!(messages[1]["content"], "Dedup it");
    assert_eq!(
        messages[2]["content"],
        json!([
            {"type": "reasoning", "reasoning": "print first", "redacted": false},
            {"type": "text", "text": "```python\nprint(1)\n```"},
        ])
    );
    assert_eq!(messages[4]["content"][0]["reasoning"], "now <script>");
    assert_eq!(
        messages[4]["content"][1],
        json!({"type": "text", "text": ""})
    );
    assert_eq!(sample["output"]["completion"], "");
    assert_eq!(sample["output"]["choices"][0]["stop_reason"], "max_tokens");
    assert_eq!(
        sample["model_usage"]["openai/qwen3"]["reasoning_tokens"],
        15
    );
    assert_eq!(sample["metadata"]["end"], "cut_while_thinking");
}
