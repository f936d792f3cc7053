//! `--shard I/N`: each shard judges its own tasks, whole, into a run directory that says which
//! shard it holds; together the shards judge every task once, with the verdicts of one run.
//! The shard comes from the option or from the cluster's environment (a Slurm array task, a
//! Kubernetes Indexed Job).

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use assay_tasks::bigcodebench::{Dataset, Subset};
use common::{assay_command, lines, pybench_data, pybench_env, text};
use serde_json::{json, Value};

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Each task's statuses in an `eval_results.json`.
fn statuses(dir: &Path) -> BTreeMap<String, Vec<String>> {
    read_json(&dir.join("eval_results.json"))["eval"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(task, samples)| {
            let statuses = samples
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["status"].as_str().unwrap().to_string())
                .collect();
            (task.clone(), statuses)
        })
        .collect()
}

/// The `task_id`s of a JSON-lines file's records, sorted as text.
fn sorted_task_ids(path: &Path) -> Vec<String> {
    let mut ids: Vec<String> = lines(path)
        .iter()
        .map(|r| r["task_id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

/// The official verdicts, `pass_at_k.json` and `samples.jsonl` of a merge are the single run's.
fn assert_same_files(merged: &Path, whole: &Path) {
    assert_eq!(
        read_json(&merged.join("eval_results.json"))["eval"],
        read_json(&whole.join("eval_results.json"))["eval"]
    );
    assert_eq!(
        read_json(&merged.join("pass_at_k.json")),
        read_json(&whole.join("pass_at_k.json"))
    );
    assert_eq!(
        std::fs::read_to_string(merged.join("samples.jsonl")).unwrap(),
        std::fs::read_to_string(whole.join("samples.jsonl")).unwrap()
    );
}

#[test]
fn shards_judge_every_task_once_with_the_verdicts_of_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let data = Dataset::embedded("v0.1.4", Subset::Full).unwrap();
    let task = |n: u32| data.get(&format!("BigCodeBench/{n}")).unwrap().clone();
    let mut samples = Vec::new();
    for n in [1, 2, 3, 4, 10] {
        samples.push(json!({"task_id": format!("BigCodeBench/{n}"), "solution": task(n).reference_solution()}));
        samples.push(json!({"task_id": format!("BigCodeBench/{n}"), "solution": format!("{}\n    return None\n", task(n).complete_prompt)}));
    }
    let lines: Vec<String> = samples.iter().map(Value::to_string).collect();
    std::fs::write(dir.path().join("samples.jsonl"), lines.join("\n") + "\n").unwrap();
    let tasks = "BigCodeBench/1,BigCodeBench/2,BigCodeBench/3,BigCodeBench/4,BigCodeBench/10";
    // `assay eval` of the samples into `out`, with `extra` arguments and environment.
    let eval_output = |out: &str, extra: &[&str], env: &[(&str, &str)]| {
        let mut command = assay_command(dir.path());
        command
            .args(["eval", "bigcodebench", "--samples", "samples.jsonl"])
            .args([
                "--tasks",
                tasks,
                "--profile",
                "test",
                "--jobs",
                "2",
                "--out",
                out,
            ])
            .args(extra);
        for (name, value) in env {
            command.env(name, value);
        }
        command.env_remove("ASSAY_SHARD_COUNT").output().unwrap()
    };
    let eval = |out: &str, shard: &[&str], env: &[(&str, &str)]| {
        let out = eval_output(out, shard, env);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    eval("whole", &[], &[]);
    eval("shard-0", &["--shard", "0/2"], &[]);
    // The second shard as a Slurm array task numbered from 1 would get it.
    let said = eval(
        "shard-1",
        &[],
        &[
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "2"),
        ],
    );
    assert!(
        said.contains("running shard 1/2 (from SLURM_ARRAY_TASK_ID)"),
        "{said}"
    );

    let whole = statuses(&dir.path().join("whole"));
    let (first, second) = (
        statuses(&dir.path().join("shard-0")),
        statuses(&dir.path().join("shard-1")),
    );
    // Dealt in turn from the ids sorted by number (1, 2, 3, 4, 10): tasks whole, none twice
    // (the maps list them as text sorts).
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        ["BigCodeBench/1", "BigCodeBench/10", "BigCodeBench/3"]
    );
    assert_eq!(
        second.keys().collect::<Vec<_>>(),
        ["BigCodeBench/2", "BigCodeBench/4"]
    );
    let mut joined = first.clone();
    joined.extend(second);
    assert_eq!(joined, whole);
    assert!(whole.values().all(|s| s.len() == 2));

    for (out, index) in [("shard-0", 0), ("shard-1", 1)] {
        let manifest = read_json(&dir.path().join(out).join("manifest.json"));
        assert_eq!(
            manifest["identity"]["shard"],
            json!({"index": index, "count": 2})
        );
        assert_eq!(manifest["schema"], 2);
    }
    let whole_manifest = read_json(&dir.path().join("whole/manifest.json"));
    assert!(whole_manifest["identity"].get("shard").is_none());

    // Merged, the shards are the single run: the same official files, samples and verdicts.
    let merge = |args: &[&str]| {
        assay_command(dir.path())
            .arg("merge")
            .args(args)
            .output()
            .unwrap()
    };
    let merged = merge(&["shard-1", "shard-0", "--out", "merged"]);
    assert!(merged.status.success(), "{}", text(&merged.stderr));
    let (whole_dir, merged_dir) = (dir.path().join("whole"), dir.path().join("merged"));
    assert_same_files(&merged_dir, &whole_dir);
    let verdicts = |dir: &Path| -> Vec<(u64, String, String)> {
        std::fs::read_to_string(dir.join("results.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let r: Value = serde_json::from_str(l).unwrap();
                let field = |k: &str| r[k].as_str().unwrap().to_string();
                (
                    r["index"].as_u64().unwrap(),
                    field("task_id"),
                    field("status"),
                )
            })
            .collect()
    };
    assert_eq!(verdicts(&merged_dir), verdicts(&whole_dir));
    let (merged_summary, whole_summary) = (
        read_json(&merged_dir.join("summary.json")),
        read_json(&whole_dir.join("summary.json")),
    );
    for field in [
        "pass_at_k",
        "statuses",
        "official",
        "samples",
        "tasks_judged",
        "infra",
    ] {
        assert_eq!(merged_summary[field], whole_summary[field], "{field}");
    }
    for field in ["pass_rate", "failed_tasks"] {
        assert_eq!(
            merged_summary["ground_truth"][field], whole_summary["ground_truth"][field],
            "ground_truth.{field}"
        );
    }
    let merged_manifest = read_json(&merged_dir.join("manifest.json"));
    assert!(merged_manifest["identity"].get("shard").is_none());
    let report = assay_command(dir.path())
        .args(["report", "--json", "merged"])
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", text(&report.stderr));
    // What cannot be merged is refused, saying why.
    for (args, says) in [
        (&["shard-0", "--out", "m1"][..], "shards 1/2 are missing"),
        (
            &["shard-0", "shard-0", "--out", "m2"][..],
            "shard 0/2 is given twice",
        ),
        (&["shard-0", "whole", "--out", "m3"][..], "not a shard"),
        (
            &["shard-0", "shard-1", "--out", "merged"][..],
            "already holds a run",
        ),
    ] {
        let out = merge(args);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }

    // A shard's directory is its shard's: another shard is refused there, naming the field.
    let out = eval_output("shard-0", &["--shard", "1/2"], &[]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("shard"), "{}", text(&out.stderr));

    // A Kubernetes Indexed Job gives the index; the count must be said.
    let out = eval_output("k8s", &[], &[("JOB_COMPLETION_INDEX", "1")]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("ASSAY_SHARD_COUNT"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn pybench_shards_deal_tasks_by_number() {
    pybench_env();
    let dir = tempfile::tempdir().unwrap();
    let recording = pybench_data().join("trajectory.jsonl");
    let out = assay_command(dir.path())
        .args(["eval", "pybench", "--trajectories"])
        .arg(&recording)
        .arg("--data")
        .arg(pybench_data())
        .args(["--tasks", "2,9,10,18", "--shard", "1/2", "--out", "py"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Sorted by number: 2, 9, 10, 18; the second shard has 9 and 18.
    assert_eq!(
        sorted_task_ids(&dir.path().join("py/results.jsonl")),
        ["PyBench/18", "PyBench/9"]
    );
    let manifest = read_json(&dir.path().join("py/manifest.json"));
    assert_eq!(
        manifest["identity"]["shard"],
        json!({"index": 1, "count": 2})
    );
}

#[test]
fn merged_shards_of_assay_run_are_the_single_run_with_its_generation() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = "BigCodeBench/1,BigCodeBench/2,BigCodeBench/3,BigCodeBench/4,BigCodeBench/5";
    let run = |out: &str, extra: &[&str]| {
        let out = assay_command(dir.path())
            .args(["run", "bigcodebench", "--tasks", tasks, "--profile", "test"])
            .args(["--jobs", "2", "--out", out])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    };
    run("whole", &[]);
    run("s0", &["--shard", "0/3"]);
    run("s1", &["--shard", "1/3"]);
    run("s2", &["--shard", "2/3"]);
    let out = assay_command(dir.path())
        .args(["merge", "s2", "s0", "s1", "--out", "merged"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (whole, merged) = (dir.path().join("whole"), dir.path().join("merged"));
    assert_same_files(&merged, &whole);
    // Every request of every shard (a single run journals them as they return, the merge in
    // task order); the generation's totals over them all.
    let tasks_of = |dir: &Path| sorted_task_ids(&dir.join("generation.jsonl"));
    assert_eq!(tasks_of(&merged), tasks_of(&whole));
    let generation = |dir: &Path| read_json(&dir.join("manifest.json"))["generation"].clone();
    assert_eq!(
        generation(&merged)["samples"],
        generation(&whole)["samples"]
    );
    assert_eq!(
        generation(&merged)["totals"]["requests"],
        generation(&whole)["totals"]["requests"]
    );
    assert_eq!(
        read_json(&merged.join("manifest.json"))["kind"],
        "bigcodebench-run"
    );
}
