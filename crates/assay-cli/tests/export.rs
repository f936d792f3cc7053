//! `assay export --to inspect` on run directories made here for real (a BigCodeBench run
//! against a model on loopback, a PyBench replay of the shared recordings), each log then read
//! back by the real client: inspect_ai, pinned by the `inspect` profile, loads it with
//! `read_eval_log`, reads its header alone as `inspect view` does, and lists it in its folder.
//! What it read is checked against the run directory the log came from.

mod common;
#[path = "../../assay-models/tests/mock/mod.rs"]
mod mock;

use std::path::{Path, PathBuf};
use std::process::Output;

use assay_generate::prompt;
use assay_pyenv::child_env::{self, Inherit};
use assay_tasks::bigcodebench::Split;
use common::{assay_command, inspect_env, lines, pybench_data, pybench_env, read_json, text};
use common::{fenced, hard_task as task};
use mock::{MockServer, Reply, Route};
use serde_json::Value;

/// Answers right the first time it is asked (for both samples), wrong the second time.
const ANSWERED_ONE_AT_A_TIME: &str = "BigCodeBench/19";
/// Answered with both samples at once, both right.
const ANSWERED_AT_ONCE: &str = "BigCodeBench/120";
/// Needs scikit-learn, which the small `test` environment lacks: `infra`.
const NEEDS_SKLEARN: &str = "BigCodeBench/752";
/// Never answered.
const UNANSWERED: &str = "BigCodeBench/161";

/// Loads the log at argv[1] with inspect_ai, as a program using it would, and prints what it
/// read as JSON: the whole log, whether the header reads alone, and the logs it lists in the
/// log's folder.
const READER: &str = r#"
import json, os, sys
from inspect_ai.log import list_eval_logs, read_eval_log
path = sys.argv[1]
log = read_eval_log(path)
header = read_eval_log(path, header_only=True)
listed = [os.path.basename(info.name) for info in list_eval_logs(os.path.dirname(path))]
print(json.dumps({
    "log": log.model_dump(mode="json", exclude_none=True),
    "header": {"status": header.status, "samples": header.samples,
               "accuracy": header.results.scores[0].metrics["accuracy"].value},
    "listed": listed,
}))
"#;

/// What inspect_ai read from the log at `path`.
fn read_back(path: &Path) -> Value {
    let env = inspect_env();
    let out = child_env::command(env.python(), Inherit::Tools)
        .args(["-I", "-c", READER])
        .arg(path)
        .output()
        .expect("run inspect_ai's reader");
    assert!(
        out.status.success(),
        "inspect_ai could not read {}:\n{}",
        path.display(),
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the reader prints JSON")
}

/// The one `.json` file in `dir`.
fn only_log(dir: &Path) -> PathBuf {
    let logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs[0].clone()
}

fn samples_of<'a>(log: &'a Value, id: &str) -> Vec<&'a Value> {
    log["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["id"] == id)
        .collect()
}

fn assay(args: &[&str], dir: &Path) -> Output {
    assay_command(dir)
        .args(args)
        .env("OPENAI_API_KEY", "sk-export-test")
        .output()
        .expect("run assay")
}

#[test]
fn a_bigcodebench_run_opens_in_inspect_with_its_verdicts_tokens_and_infra_set_apart() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, move |body| {
        let message = body["messages"][0]["content"].as_str().unwrap_or_default();
        let asked = [
            ANSWERED_ONE_AT_A_TIME,
            ANSWERED_AT_ONCE,
            NEEDS_SKLEARN,
            UNANSWERED,
        ]
        .into_iter()
        .find(|id| message.contains(task(id).complete_prompt.trim()))
        .unwrap_or(UNANSWERED);
        let right = fenced(&task(asked).reference_solution());
        match asked {
            // A server that ignores `n`: asked for 2, then for the 1 still missing.
            ANSWERED_ONE_AT_A_TIME => match body["n"].as_u64() {
                Some(2) => Reply::chat(&[&right]),
                _ => Reply::chat(&[&fenced("def task_func(directory):\n    return None\n")]),
            },
            UNANSWERED => Reply::openai_error(503, "server_error", "overloaded", "try later"),
            _ => Reply::chat(&[&right, &right]),
        }
    });
    let base = server.openai_base();
    let tasks = [
        ANSWERED_ONE_AT_A_TIME,
        ANSWERED_AT_ONCE,
        NEEDS_SKLEARN,
        UNANSWERED,
    ]
    .join(",");
    let ran = assay(
        &[
            "run",
            "bigcodebench-hard",
            "--model",
            "openai:mock-model",
            "--base-url",
            &base,
            "--tasks",
            &tasks,
            "-n",
            "2",
            "--temperature",
            "0.8",
            "--retries",
            "0",
            "--profile",
            "test",
            "--jobs",
            "2",
            "--out",
            "run",
        ],
        dir.path(),
    );
    assert_eq!(
        ran.status.code(),
        Some(1),
        "one task unanswered\n{}\n{}",
        text(&ran.stdout),
        text(&ran.stderr)
    );
    let run = dir.path().join("run");

    // No --out: into ./logs/, Inspect's default folder, under the name Inspect would give it.
    let exported = assay(&["export", "run", "--to", "inspect"], dir.path());
    assert!(exported.status.success(), "{}", text(&exported.stderr));
    let path = only_log(&dir.path().join("logs"));
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.ends_with(".json") && name.contains("_bigcodebench-hard-complete_"),
        "{name}"
    );
    assert!(
        text(&exported.stderr).contains("(8 samples, 4 judged, accuracy 0.7500)"),
        "{}",
        text(&exported.stderr)
    );
    // The same log on standard output: an export of the same run is the same, ids included.
    // (`--format`, as earlier versions spelled `--to`, still works.)
    let again = assay(
        &["export", "run", "--format", "inspect", "--out", "-"],
        dir.path(),
    );
    assert!(again.status.success(), "{}", text(&again.stderr));
    let written = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text(&again.stdout).trim_end(), written.trim_end());

    let read = read_back(&path);
    assert_eq!(read["listed"], serde_json::json!([name]));
    assert_eq!(read["header"]["status"], "success");
    assert_eq!(
        read["header"]["samples"],
        Value::Null,
        "the header reads alone"
    );
    let log = &read["log"];
    assert_eq!(log["status"], "success");
    assert_eq!(log["eval"]["task"], "bigcodebench-hard-complete");
    assert_eq!(log["eval"]["model"], "openai/mock-model");
    assert_eq!(log["eval"]["model_base_url"], base.as_str());
    assert_eq!(log["eval"]["config"]["epochs"], 2);
    assert_eq!(
        log["eval"]["config"]["epochs_reducer"],
        serde_json::json!(["mean"])
    );
    assert_eq!(log["eval"]["model_generate_config"]["num_choices"], 2);
    assert_eq!(log["eval"]["model_generate_config"]["temperature"], 0.8);
    assert_eq!(log["eval"]["dataset"]["samples"], 4);
    let provenance = &log["eval"]["metadata"];
    assert_eq!(provenance["kind"], "bigcodebench-run");
    assert_eq!(
        provenance["identity"]["environment"]
            .as_str()
            .map(|e| e.starts_with("test-")),
        Some(true)
    );
    assert_eq!(
        provenance["run_dir"],
        std::fs::canonicalize(&run).unwrap().display().to_string()
    );
    assert!(provenance["isolation"]["level"].is_string(), "{provenance}");

    // Every sample: 2 per task, numbered as epochs.
    let samples = log["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 8);
    for id in [
        ANSWERED_ONE_AT_A_TIME,
        ANSWERED_AT_ONCE,
        NEEDS_SKLEARN,
        UNANSWERED,
    ] {
        let epochs: Vec<&Value> = samples_of(log, id).iter().map(|s| &s["epoch"]).collect();
        assert_eq!(epochs, [1, 2], "{id}");
    }
    let score = |s: &Value| s["scores"]["assay"]["value"].as_str().map(str::to_string);

    // The task answered one sample at a time: right, then wrong, each with its own tokens.
    let records = lines(&run.join("results.jsonl"));
    let failing_test = records
        .iter()
        .filter(|r| r["task_id"] == ANSWERED_ONE_AT_A_TIME && r["status"] != "pass")
        .flat_map(|r| r["tests"].as_array().unwrap())
        .find(|t| t["result"] != "pass")
        .and_then(|t| t["name"].as_str())
        .expect("the wrong answer failed a test")
        .to_string();
    let one = samples_of(log, ANSWERED_ONE_AT_A_TIME);
    assert_eq!(score(one[0]).as_deref(), Some("C"));
    assert_eq!(score(one[1]).as_deref(), Some("I"));
    let explanation = one[1]["scores"]["assay"]["explanation"].as_str().unwrap();
    assert!(
        explanation.contains(&failing_test) && explanation.contains("Traceback"),
        "{explanation}"
    );
    let solutions: Vec<Value> = lines(&run.join("samples.jsonl"))
        .into_iter()
        .filter(|row| row["task_id"] == ANSWERED_ONE_AT_A_TIME)
        .map(|row| row["solution"].clone())
        .collect();
    assert_eq!(
        one[1]["scores"]["assay"]["answer"], solutions[1],
        "the code judged"
    );
    assert_eq!(one[1]["scores"]["assay"]["metadata"]["status"], "fail");
    assert_eq!(one[1]["metadata"]["status"], "fail");
    assert!(one[1]["metadata"]["wall_seconds"].as_f64().unwrap() > 0.0);
    let expected_prompt = prompt::chat_message(&task(ANSWERED_ONE_AT_A_TIME), Split::Complete);
    for sample in &one {
        assert_eq!(sample["input"], expected_prompt.as_str());
        assert_eq!(sample["messages"][0]["role"], "user");
        assert_eq!(sample["messages"][0]["content"], expected_prompt.as_str());
        assert_eq!(sample["messages"][1]["role"], "assistant");
        assert_eq!(
            sample["target"],
            task(ANSWERED_ONE_AT_A_TIME).reference_solution().as_str()
        );
        // The mock bills 10 prompt and 5 completion tokens a text.
        let usage = &sample["model_usage"]["openai/mock-model"];
        assert_eq!(
            (
                &usage["input_tokens"],
                &usage["output_tokens"],
                &usage["total_tokens"]
            ),
            (&Value::from(10), &Value::from(5), &Value::from(15)),
            "{} epoch {}",
            sample["id"],
            sample["epoch"]
        );
        assert_eq!(sample["output"]["usage"], *usage);
    }
    assert!(one[1]["output"]["completion"]
        .as_str()
        .unwrap()
        .contains("return None"));

    // Both samples from one request: right, and their tokens known only together.
    for sample in samples_of(log, ANSWERED_AT_ONCE) {
        assert_eq!(score(sample).as_deref(), Some("C"));
        assert_eq!(sample["model_usage"], serde_json::json!({}));
    }
    // infra and unanswered: an error each, no score; they are not failures.
    for sample in samples_of(log, NEEDS_SKLEARN) {
        assert_eq!(score(sample), None);
        let message = sample["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("infra (missing-module)"), "{message}");
        assert!(message.contains("sklearn"), "{message}");
        assert_eq!(sample["metadata"]["status"], "infra");
        assert!(sample["metadata"]["libs"]
            .as_array()
            .unwrap()
            .contains(&Value::from("sklearn")));
    }
    for sample in samples_of(log, UNANSWERED) {
        assert_eq!(score(sample), None);
        let message = sample["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("infra (no-answer)"), "{message}");
    }

    // The figures: tasks 19 (1 of 2) and 120 (2 of 2); the others set apart.
    let results = &log["results"];
    assert_eq!(
        (&results["total_samples"], &results["completed_samples"]),
        (&Value::from(8), &Value::from(4))
    );
    let mean = &results["scores"][0];
    assert_eq!(mean["reducer"], "mean");
    assert_eq!(mean["scored_samples"], 2);
    assert_eq!(mean["metrics"]["accuracy"]["value"], 0.75);
    // Inspect's accuracy is assay's own pass@1 over judged tasks.
    let pass_at_1 = read_json(&dir.path().join("run/pass_at_k.json"))["pass@1"]
        .as_f64()
        .unwrap();
    assert!((mean["metrics"]["accuracy"]["value"].as_f64().unwrap() - pass_at_1).abs() < 1e-12);
    assert!((mean["metrics"]["stderr"]["value"].as_f64().unwrap() - 0.25).abs() < 1e-12);
    assert_eq!(
        results["scores"].as_array().unwrap().len(),
        1,
        "no pass@5 from 2 samples"
    );
    assert_eq!(read["header"]["accuracy"], 0.75);
    assert_eq!(
        results["metadata"]["tasks_set_apart"],
        serde_json::json!([NEEDS_SKLEARN, UNANSWERED])
    );
    // Tokens over the run, as generation.jsonl has them: 4 answered requests of one text or two.
    let (mut prompt_tokens, mut completion_tokens) = (0, 0);
    for request in lines(&run.join("generation.jsonl")) {
        prompt_tokens += request["usage"]["prompt_tokens"].as_u64().unwrap();
        completion_tokens += request["usage"]["completion_tokens"].as_u64().unwrap();
    }
    assert_eq!((prompt_tokens, completion_tokens), (40, 30));
    let total = &log["stats"]["model_usage"]["openai/mock-model"];
    assert_eq!(
        (&total["input_tokens"], &total["output_tokens"]),
        (&Value::from(prompt_tokens), &Value::from(completion_tokens))
    );
    assert!(!log["stats"]["completed_at"].as_str().unwrap().is_empty());

    // A damaged record: the export names the file and the line, and writes nothing.
    let records_text = std::fs::read_to_string(run.join("results.jsonl")).unwrap();
    let mut damaged: Vec<&str> = records_text.lines().collect();
    damaged[1] = "{\"index\": 1, \"task_id\": ";
    std::fs::write(run.join("results.jsonl"), damaged.join("\n") + "\n").unwrap();
    let refused = assay(
        &["export", "run", "--to", "inspect", "--out", "damaged.json"],
        dir.path(),
    );
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr).contains("results.jsonl:2: not a valid record"),
        "{}",
        text(&refused.stderr)
    );
    assert!(!dir.path().join("damaged.json").exists());
}

#[test]
fn a_pybench_replay_opens_in_inspect_as_conversations_with_both_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    pybench_env();
    let data = pybench_data();
    // The data folder named relatively: the export finds it from where the run started.
    std::os::unix::fs::symlink(&data, dir.path().join("pybench-data")).unwrap();
    // 44 passes with a figure and an output file, 18 fails its check on the final answer, 13
    // lacks an input here and 98 has no recording: both infra.
    let ran = assay(
        &[
            "run",
            "pybench",
            "--model",
            &format!("replay:{}", data.join("trajectory.jsonl").display()),
            "--data",
            "pybench-data",
            "--tasks",
            "44,18,13,98",
            "--jobs",
            "2",
            "--out",
            "run",
        ],
        dir.path(),
    );
    assert!(ran.status.success(), "{}", text(&ran.stderr));
    let run = dir.path().join("run");
    let exported = assay(
        &["export", "run", "--to", "inspect", "--out", "inspect-logs/"],
        dir.path(),
    );
    assert!(exported.status.success(), "{}", text(&exported.stderr));
    assert!(
        !text(&exported.stderr).contains("left empty"),
        "{}",
        text(&exported.stderr)
    );
    // And from another directory too.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let again = assay(
        &[
            "export",
            &run.display().to_string(),
            "--to",
            "inspect",
            "--out",
            "-",
        ],
        &elsewhere,
    );
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(
        !text(&again.stderr).contains("left empty"),
        "{}",
        text(&again.stderr)
    );
    let path = only_log(&dir.path().join("inspect-logs"));
    let read = read_back(&path);
    assert_eq!(read["listed"].as_array().unwrap().len(), 1);
    let log = &read["log"];
    assert_eq!(log["status"], "success");
    assert_eq!(log["eval"]["task"], "pybench");
    assert_eq!(log["eval"]["model"], "replay/trajectory");
    assert_eq!(log["eval"]["task_args"]["checks"], "faithful");
    assert_eq!(log["eval"]["metadata"]["kind"], "pybench-run");

    let records = lines(&run.join("results.jsonl"));
    let trajectories = lines(&run.join("trajectory.jsonl"));
    let samples = log["samples"].as_array().unwrap();
    let ids: Vec<&str> = samples.iter().map(|s| s["id"].as_str().unwrap()).collect();
    let recorded: Vec<&str> = records
        .iter()
        .map(|r| r["task_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, recorded);
    assert_eq!(ids.len(), 4);
    for sample in samples {
        let id = sample["id"].as_str().unwrap();
        let record = records.iter().find(|r| r["task_id"] == id).unwrap();
        assert_eq!(sample["epoch"], 1);
        assert_eq!(sample["metadata"]["turns"], record["turns"]);
        assert_eq!(sample["metadata"]["end"], record["end"]);
        assert_eq!(sample["metadata"]["outputs"], record["outputs"]);
        assert_eq!(
            sample["model_usage"],
            serde_json::json!({}),
            "a replay asks no model"
        );
        match record["status"].as_str().unwrap() {
            "infra" => {
                assert_eq!(sample.get("scores"), None, "{id}");
                let message = sample["error"]["message"].as_str().unwrap();
                assert!(
                    message.contains(record["reason"].as_str().unwrap()),
                    "{message}"
                );
            }
            status => {
                let score = &sample["scores"]["assay"];
                assert_eq!(
                    score["value"],
                    if status == "pass" { "C" } else { "I" },
                    "{id}"
                );
                assert_eq!(score["explanation"], record["reason"]);
                assert_eq!(
                    score["metadata"]["faithful"],
                    record["verdicts"]["faithful"]
                );
                assert_eq!(score["metadata"]["fixed"], record["verdicts"]["fixed"]);
                // The conversation as recorded: system prompt, [INFO], query, then replies and
                // the interpreter's observations.
                let index = id.trim_start_matches("PyBench/");
                let trajectory = trajectories.iter().find(|t| t["index"] == index).unwrap();
                let recorded = trajectory["messages"].as_array().unwrap();
                let messages = sample["messages"].as_array().unwrap();
                assert_eq!(messages.len(), recorded.len());
                for (message, recorded) in messages.iter().zip(recorded) {
                    assert_eq!(message["role"], recorded["role"]);
                    assert_eq!(message["content"], recorded["content"]);
                }
                assert_eq!(sample["input"], trajectory["user"]);
                let replies = messages.iter().filter(|m| m["role"] == "assistant").count();
                assert_eq!(Value::from(replies), record["turns"]);
                assert_eq!(
                    sample["output"]["completion"],
                    messages
                        .iter()
                        .rev()
                        .find(|m| m["role"] == "assistant")
                        .unwrap()["content"]
                );
            }
        }
    }
    let pass = samples_of(log, "PyBench/44")[0];
    assert_eq!(pass["scores"]["assay"]["value"], "C");
    assert!(!pass["metadata"]["figures"].as_array().unwrap().is_empty());
    assert_eq!(
        samples_of(log, "PyBench/18")[0]["scores"]["assay"]["value"],
        "I"
    );
    let results = &log["results"];
    assert_eq!(
        (&results["total_samples"], &results["completed_samples"]),
        (&Value::from(4), &Value::from(2))
    );
    assert_eq!(results["scores"][0]["metrics"]["accuracy"]["value"], 0.5);
    // PyBench's: the headline checks' pass rate over judged tasks.
    let judged_rate = read_json(&run.join("summary.json"))["faithful"]["pass_rate_judged"]
        .as_f64()
        .unwrap();
    let accuracy = results["scores"][0]["metrics"]["accuracy"]["value"]
        .as_f64()
        .unwrap();
    assert!((accuracy - judged_rate).abs() < 1e-12);
    assert_eq!(log["stats"]["model_usage"], serde_json::json!({}));

    // The same recordings judged as they are (`assay eval pybench`): the conversations come
    // from the trajectories file the evaluation judged, which its manifest names.
    let recordings = data.join("trajectory.jsonl");
    let judged = assay(
        &[
            "eval",
            "pybench",
            "--trajectories",
            &recordings.display().to_string(),
            "--data",
            &data.display().to_string(),
            "--tasks",
            "18,134",
            "--out",
            "eval",
        ],
        dir.path(),
    );
    assert!(judged.status.success(), "{}", text(&judged.stderr));
    let exported = assay(
        &["export", "eval", "--to", "inspect", "--out", "eval.json"],
        dir.path(),
    );
    assert!(exported.status.success(), "{}", text(&exported.stderr));
    assert!(
        !text(&exported.stderr).contains("warning"),
        "{}",
        text(&exported.stderr)
    );
    let read = read_back(&dir.path().join("eval.json"));
    let log = &read["log"];
    assert_eq!(log["eval"]["metadata"]["kind"], "pybench-eval");
    assert_eq!(log["plan"]["steps"][0]["solver"], "recorded_trajectories");
    let recorded = lines(&recordings);
    let samples = log["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2, "tasks 18 and 134");
    for sample in samples {
        let index = sample["id"]
            .as_str()
            .unwrap()
            .trim_start_matches("PyBench/");
        let trajectory = recorded.iter().find(|t| t["index"] == index).unwrap();
        let contents: Vec<&Value> = sample["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| &m["content"])
            .collect();
        let expected: Vec<&Value> = trajectory["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| &m["content"])
            .collect();
        assert_eq!(contents, expected, "{index}");
        assert!(
            sample["scores"]["assay"]["value"].is_string(),
            "{index} was judged"
        );
    }
}
