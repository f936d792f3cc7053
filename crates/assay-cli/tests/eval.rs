//! `assay eval` as a user runs it: real samples of real BigCodeBench tasks (those the small
//! `test` environment can run), official files, infra, resume after `kill -9`, bad input.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use assay_tasks::bigcodebench::{Dataset, Subset, Task};
use common::{assay_command, read_json, task, text, write_answers, TEST_ENGINE};
use serde_json::{json, Value};

fn assay(args: &[&str], dir: &Path) -> Output {
    assay_command(dir).args(args).output().expect("run assay")
}

/// A task the `test` environment cannot run: it needs scipy.
fn scipy_task() -> Task {
    Dataset::embedded("v0.1.4", Subset::Full)
        .unwrap()
        .tasks
        .into_iter()
        .find(|t| t.libs.iter().any(|l| l == "scipy"))
        .unwrap()
}

fn canonical(task: &Task) -> Value {
    json!({"task_id": task.task_id, "solution": task.reference_solution()})
}

#[test]
fn evaluates_into_the_official_files_with_infra_apart() {
    let dir = tempfile::tempdir().unwrap();
    let wrong = task(5);
    let looping = task(6);
    let missing = scipy_task();
    let mut samples: Vec<Value> = [1, 2, 3, 4].map(|n| canonical(&task(n))).to_vec();
    samples.push(json!({"task_id": wrong.task_id, "solution": format!("{}\n    return None\n", wrong.complete_prompt)}));
    samples.push(json!({"task_id": looping.task_id, "solution": format!("{}\n    while True:\n        pass\n", looping.complete_prompt)}));
    samples.push(canonical(&missing));
    write_answers(dir.path(), &samples);
    let tasks = format!(
        "BigCodeBench/1,BigCodeBench/2,BigCodeBench/3,BigCodeBench/4,BigCodeBench/5,BigCodeBench/6,{}",
        missing.task_id
    );
    let out = assay(
        &[
            &[
                "eval",
                "bigcodebench",
                "--samples",
                "model--bigcodebench-complete--x.jsonl",
                "--tasks",
                &tasks,
                "--timeout",
                "3",
                "--out",
                "run",
                "--json",
            ][..],
            TEST_ENGINE,
        ]
        .concat(),
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["samples"], 7);
    // The scipy task is set apart as infra: out of pass@k, which says so, and in the figure
    // the official harness would give here, as a failure.
    assert_eq!(summary["tasks_judged"], 6);
    assert_eq!(summary["tasks_set_apart"], json!([missing.task_id]));
    assert_eq!(summary["samples_set_apart"], 1);
    let official_here = summary["pass_at_k_infra_as_fail"]["pass@1"]
        .as_f64()
        .unwrap();
    assert!((official_here - 4.0 / 7.0).abs() < 1e-12, "{official_here}");
    assert_eq!(
        summary["official"],
        json!({"fail": 1, "pass": 4, "timeout": 1})
    );
    assert!((summary["pass_at_k"]["pass@1"].as_f64().unwrap() - 4.0 / 6.0).abs() < 1e-12);
    let infra = summary["infra"][&missing.task_id].as_str().unwrap();
    assert!(infra.contains("scipy"), "{infra}");

    let run = dir.path().join("run");
    let results = read_json(&run.join("eval_results.json"));
    assert!(results["date"].as_str().unwrap().len() == 16);
    let eval = results["eval"].as_object().unwrap();
    let keys: Vec<&str> = eval.keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 6);
    assert!(!keys.contains(&missing.task_id.as_str()));
    let entry = &eval["BigCodeBench/5"][0];
    assert_eq!(entry["status"], "fail");
    assert!(entry["solution"]
        .as_str()
        .unwrap()
        .starts_with(&wrong.code_prompt));
    assert!(!entry["details"].as_object().unwrap().is_empty());
    assert_eq!(eval["BigCodeBench/6"][0]["status"], "timeout");
    assert_eq!(eval["BigCodeBench/6"][0]["details"], json!({}));
    assert_eq!(eval["BigCodeBench/1"][0]["details"], json!({}));
    let pass_at_k = read_json(&run.join("pass_at_k.json"));
    assert_eq!(pass_at_k["model"], "model");
    assert_eq!(
        (pass_at_k["split"].as_str(), pass_at_k["subset"].as_str()),
        (Some("complete"), Some("full"))
    );
    assert_eq!(pass_at_k["calibrated"], true);
    // The reference solutions ran on the way: only the one needing scipy fails here.
    assert!((pass_at_k["gt_pass_rate"].as_f64().unwrap() - 6.0 / 7.0).abs() < 1e-12);
    assert_eq!(pass_at_k["failed_tasks"], json!([missing.task_id]));
    assert_eq!(
        (
            &pass_at_k["tasks_judged"],
            &pass_at_k["tasks_set_apart"],
            &pass_at_k["samples_set_apart"]
        ),
        (&json!(6), &json!(1), &json!(1))
    );
    let official_here = pass_at_k["infra_as_fail"]["pass@1"].as_f64().unwrap();
    assert!((official_here - 4.0 / 7.0).abs() < 1e-12, "{official_here}");
    let lines = std::fs::read_to_string(run.join("results.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 7);
    let manifest = read_json(&run.join("manifest.json"));
    assert_eq!(manifest["identity"]["benchmark"], "bigcodebench");
    assert_eq!(manifest["isolation"]["level"], "full");
    assert_eq!(
        std::fs::read_to_string(run.join("samples.jsonl"))
            .unwrap()
            .lines()
            .count(),
        7
    );

    // The same command again recomputes nothing: every verdict comes from the run directory.
    let again = assay(
        &[
            &[
                "eval",
                "bigcodebench",
                "--samples",
                "model--bigcodebench-complete--x.jsonl",
                "--tasks",
                &tasks,
                "--timeout",
                "3",
                "--out",
                "run",
                "--json",
            ][..],
            TEST_ENGINE,
        ]
        .concat(),
        dir.path(),
    );
    assert!(again.status.success());
    assert!(
        text(&again.stderr).contains("7 samples already evaluated"),
        "{}",
        text(&again.stderr)
    );
    // A sample evaluated again would have appended its record; and the summary (all but how
    // long the command took) is the first run's. How long it took is no evidence: a full
    // recomputation of these samples takes seconds too.
    assert_eq!(
        std::fs::read_to_string(run.join("results.jsonl")).unwrap(),
        lines
    );
    let without_time = |mut summary: Value| {
        summary.as_object_mut().unwrap().remove("wall_seconds");
        summary
    };
    assert_eq!(
        without_time(serde_json::from_slice(&again.stdout).unwrap()),
        without_time(summary)
    );
}

#[test]
fn a_run_killed_with_sigkill_resumes_to_the_files_of_a_clean_run() {
    let dir = tempfile::tempdir().unwrap();
    // Ten samples of one second each, one at a time: plenty of time to kill the run.
    let slow: Vec<Value> = (1..=10)
        .map(|n| {
            let t = task(n);
            let solution = format!("import time\n{}\n", t.reference_solution())
                .replace("def task_func(", "def _task_func(")
                + "\ndef task_func(*a, **k):\n    time.sleep(0.25)\n    return _task_func(*a, **k)\n";
            json!({"task_id": t.task_id, "solution": solution})
        })
        .collect();
    let ids: Vec<String> = (1..=10).map(|n| format!("BigCodeBench/{n}")).collect();
    let tasks = ids.join(",");
    write_answers(dir.path(), &slow);
    let args = |out: &str| -> Vec<String> {
        [
            "eval",
            "bigcodebench",
            "--samples",
            "model--bigcodebench-complete--x.jsonl",
            "--tasks",
            &tasks,
            "--out",
            out,
            "--profile",
            "test",
            "--jobs",
            "1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let mut child = assay_command(dir.path())
        .args(args("killed"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let results = dir.path().join("killed/results.jsonl");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let done = std::fs::read_to_string(&results)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if done >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "the run never got going");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let partial = std::fs::read_to_string(&results).unwrap().lines().count();
    assert!(
        partial < 10,
        "killed too late to test anything ({partial} done)"
    );

    let resumed = assay_command(dir.path())
        .args(args("killed"))
        .output()
        .unwrap();
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert!(
        text(&resumed.stderr).contains("resuming"),
        "{}",
        text(&resumed.stderr)
    );
    let clean = assay_command(dir.path())
        .args(args("clean"))
        .output()
        .unwrap();
    assert!(clean.status.success(), "{}", text(&clean.stderr));

    let records = std::fs::read_to_string(&results).unwrap();
    let mut indices: Vec<u64> = records
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["index"]
                .as_u64()
                .unwrap()
        })
        .collect();
    indices.sort();
    assert_eq!(
        indices,
        (0..10).collect::<Vec<_>>(),
        "each sample exactly once"
    );
    let without_date = |path: PathBuf| {
        let mut value = read_json(&path);
        value.as_object_mut().unwrap().remove("date");
        value
    };
    assert_eq!(
        without_date(dir.path().join("killed/eval_results.json")),
        without_date(dir.path().join("clean/eval_results.json"))
    );
    assert_eq!(
        read_json(&dir.path().join("killed/pass_at_k.json")),
        read_json(&dir.path().join("clean/pass_at_k.json"))
    );
    assert_eq!(
        read_json(&dir.path().join("clean/pass_at_k.json"))["pass@1"],
        1.0
    );
}

#[test]
fn the_default_budget_ends_a_hung_sample_soon_and_check_reports_the_ground_truth() {
    let dir = tempfile::tempdir().unwrap();
    let hung = task(7);
    let missing = scipy_task();
    write_answers(
        dir.path(),
        &[
            json!({"task_id": hung.task_id, "solution": format!("{}\n    while True:\n        pass\n", hung.complete_prompt)}),
        ],
    );
    let tasks = format!("{},{}", hung.task_id, missing.task_id);
    let out = assay(
        &[
            &["check", "bigcodebench", "--tasks", &tasks, "--out", "gt"][..],
            TEST_ENGINE,
        ]
        .concat(),
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("0.5000 of 2 tasks"), "{said}");
    assert!(
        said.contains(&format!("{}: infra: module `scipy`", missing.task_id)),
        "{said}"
    );
    let pass_at_k = read_json(&dir.path().join("gt/pass_at_k.json"));
    assert_eq!(pass_at_k["gt_pass_rate"], 0.5);
    assert_eq!(pass_at_k["failed_tasks"], json!([missing.task_id]));

    let out = assay(
        &[
            &[
                "eval",
                "bigcodebench",
                "--samples",
                "model--bigcodebench-complete--x.jsonl",
                "--tasks",
                &hung.task_id,
                "--out",
                "run",
                "--json",
            ][..],
            TEST_ENGINE,
        ]
        .concat(),
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["official"], json!({"timeout": 1}));
    assert_eq!(summary["time_policy"]["budget"]["floor_seconds"], 60.0);
    assert_eq!(
        summary["time_policy"]["budget"]["test_cpu_floor_seconds"],
        30.0
    );
    let record: Value = serde_json::from_str(
        std::fs::read_to_string(dir.path().join("run/results.jsonl"))
            .unwrap()
            .trim(),
    )
    .unwrap();
    // The task's reference takes well under 12 s, so the sample gets the 60 s floor, and its
    // first test, where it spins, the 30 s CPU floor of a test: that budget ended it, and the
    // reason names the test.
    let reason = record["reason"].as_str().unwrap();
    assert_eq!(
        reason, "test test_case_1 computed past its CPU budget of 30 s",
        "{record}"
    );
    // Not cut before the test's budget, and cut at it rather than at the sample's 60 s or the
    // official 240 s: 55 s leaves 25 s for scheduling delays, far beyond any.
    let wall = record["wall_seconds"].as_f64().unwrap();
    assert!((30.0..55.0).contains(&wall), "{wall}");
    // What the official policy would have waited beyond it.
    assert_eq!(summary["budgets_saved"]["samples"], 1);
    let saved = summary["budgets_saved"]["seconds"].as_f64().unwrap();
    assert!((saved - (240.0 - wall)).abs() < 1e-6, "{saved} {wall}");
    // Kept next to the reference results, for the order of later evaluations: this task's
    // samples take as long as this one did.
    let cache = Path::new(summary["ground_truth"]["cache"].as_str().unwrap());
    let times = read_json(&cache.join("sample_times.json"));
    assert_eq!(times["tasks"][&hung.task_id].as_f64(), Some(wall));
}

#[test]
fn samples_started_before_their_reference_get_the_verdicts_of_a_known_one() {
    // BigCodeBench/97 is used by no other test here: its reference is not measured yet in
    // this test process's cache, so both samples start before it ends, under the widest
    // limits, and take its budgets when it does.
    let dir = tempfile::tempdir().unwrap();
    let quick = task(97);
    let hangs = format!(
        "{}\n    import time\n    time.sleep(1000)\n",
        quick.complete_prompt
    );
    write_answers(
        dir.path(),
        &[
            canonical(&quick),
            json!({"task_id": quick.task_id, "solution": hangs}),
        ],
    );
    let eval = |out: &str| -> Vec<Value> {
        let args = [
            "eval",
            "bigcodebench",
            "--samples",
            "model--bigcodebench-complete--x.jsonl",
            "--tasks",
            &quick.task_id,
            "--out",
            out,
        ];
        let done = assay(&[&args[..], TEST_ENGINE].concat(), dir.path());
        assert!(done.status.success(), "{}", text(&done.stderr));
        std::fs::read_to_string(dir.path().join(out).join("results.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let first = eval("first");
    // The sleeper waited in its first test past that test's waiting budget, which only the
    // reference could give it (else it had the official 240 s), counted from the test's
    // start although it came later.
    assert_eq!(first[0]["status"], "pass", "{}", first[0]);
    assert_eq!(first[1]["status"], "timeout", "{}", first[1]);
    let reason = first[1]["reason"].as_str().unwrap();
    assert!(
        reason.contains("waited, computing nothing, past its budget of 10 s"),
        "{reason}"
    );
    let wall = first[1]["wall_seconds"].as_f64().unwrap();
    assert!(wall < 60.0, "{wall}");
    // Again, the reference known from the start: the same verdicts.
    let again = eval("again");
    for (a, b) in first.iter().zip(&again) {
        for field in ["status", "reason", "official"] {
            assert_eq!(a[field], b[field], "{field}: {a} / {b}");
        }
        let names = |r: &Value| {
            r["tests"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| (t["name"].clone(), t["result"].clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(names(a), names(b));
    }
}

#[test]
fn bad_input_is_refused_with_where_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let run = |samples: &str, extra: &[&str]| {
        let out = assay(
            &[
                &[
                    "eval",
                    "bigcodebench-hard",
                    "--samples",
                    samples,
                    "--profile",
                    "test",
                ][..],
                extra,
            ]
            .concat(),
            dir.path(),
        );
        assert!(!out.status.success(), "accepted {samples}");
        text(&out.stderr)
    };
    std::fs::write(
        dir.path().join("broken.jsonl"),
        "{\"task_id\": \"BigCodeBench/13\", \"solution\": \"x\"}\n{oops\n",
    )
    .unwrap();
    let err = run("broken.jsonl", &[]);
    assert!(err.contains("broken.jsonl:2: not valid JSON"), "{err}");
    std::fs::write(
        dir.path().join("unknown.jsonl"),
        "{\"task_id\": \"BigCodeBench/99999\", \"solution\": \"x\"}\n",
    )
    .unwrap();
    let err = run("unknown.jsonl", &[]);
    assert!(
        err.contains("unknown.jsonl:1") && err.contains("task_id"),
        "{err}"
    );
    std::fs::write(dir.path().join("empty.jsonl"), "\n").unwrap();
    assert!(run("empty.jsonl", &[]).contains("empty.jsonl: it holds no samples"));
    std::fs::write(
        dir.path().join("nofield.jsonl"),
        "{\"task_id\": \"BigCodeBench/13\"}\n",
    )
    .unwrap();
    assert!(run("nofield.jsonl", &[]).contains("nofield.jsonl:1: needs a `solution`"));
    let err = run("broken.jsonl", &["--tasks", "BigCodeBench/0"]);
    assert!(err.contains("no task `BigCodeBench/0`"), "{err}");
    let err = run("broken.jsonl", &["--timeout", "0"]);
    assert!(err.contains("--timeout"), "{err}");
}
