//! `--shard I/N`: each shard judges its own tasks, whole, into a run directory that says which
//! shard it holds; together the shards judge every task once, with the verdicts of one run.
//! The shard comes from the option or from the cluster's environment (a Slurm array task, a
//! Kubernetes Indexed Job).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use common::{
    assay_command, assert_same_judging, lines, pybench_data, pybench_env, read_json, text,
    write_samples,
};
use serde_json::{json, Value};

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

/// A finished command's output, which must say it succeeded (the message is its standard
/// error).
fn succeeded(out: Output) -> Output {
    assert!(out.status.success(), "{}", text(&out.stderr));
    out
}

/// `assay ARGS` in `dir`, which must succeed: its output.
fn assay_ok(dir: &Path, args: &[&str]) -> Output {
    succeeded(assay_command(dir).args(args).output().unwrap())
}

/// The arguments of `assay eval` of [`write_samples`]'s samples, of `tasks` only, in the `test`
/// environment on two CPU slots, then `extra`.
fn eval_args<'a>(tasks: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "eval",
        "bigcodebench",
        "--samples",
        "samples.jsonl",
        "--tasks",
        tasks,
        "--profile",
        "test",
        "--jobs",
        "2",
    ];
    args.extend_from_slice(extra);
    args
}

/// A merged directory is an ordinary run's: it reports, and it exports to Inspect with every
/// sample.
fn assert_reads_as_a_run(dir: &Path, name: &str, samples: usize) {
    assay_ok(dir, &["report", "--json", name]);
    let export = assay_ok(dir, &["export", name, "--to", "inspect", "--out", "-"]);
    let log: Value = serde_json::from_slice(&export.stdout).unwrap();
    assert_eq!(log["samples"].as_array().unwrap().len(), samples);
}

/// `assay merge ARGS` in `dir`.
fn merge(dir: &Path, args: &[&str]) -> Output {
    assay_command(dir).arg("merge").args(args).output().unwrap()
}

/// Runs a command line as a user pastes it into a shell, with the tests' cache root (and, as
/// `assay_command`, without a surrounding cluster job's variables).
fn shell(line: &str) -> Output {
    #[allow(clippy::disallowed_methods)]
    let mut command = std::process::Command::new("sh");
    common::without_cluster_vars(&mut command)
        .args(["-c", line])
        .env("ASSAY_CACHE_DIR", common::cache_root())
        .output()
        .unwrap()
}

#[test]
fn shards_judge_every_task_once_with_the_verdicts_of_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = &write_samples(dir.path(), &[1, 2, 3, 4, 10]);
    // `assay eval` of the samples into `out`, with `extra` arguments and environment.
    let eval_output = |out: &str, extra: &[&str], env: &[(&str, &str)]| {
        assay_command(dir.path())
            .args(eval_args(tasks, &["--out", out]))
            .args(extra)
            .envs(env.iter().copied())
            .output()
            .unwrap()
    };
    let eval = |out: &str, shard: &[&str], env: &[(&str, &str)]| {
        text(&succeeded(eval_output(out, shard, env)).stderr)
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
    let merge = |args: &[&str]| merge(dir.path(), args);
    succeeded(merge(&["shard-1", "shard-0", "--out", "merged"]));
    let (whole_dir, merged_dir) = (dir.path().join("whole"), dir.path().join("merged"));
    assert_same_judging(&merged_dir, &whole_dir);
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
    assert_reads_as_a_run(dir.path(), "merged", 10);
    // A shard given twice is taken once when both copies judged alike, and refused when not;
    // shards from machines set up otherwise are refused, naming what differs.
    let copy = |from: &str, to: &str, edit: &dyn Fn(&str, String) -> String| {
        let (from, to) = (dir.path().join(from), dir.path().join(to));
        std::fs::create_dir_all(&to).unwrap();
        for entry in std::fs::read_dir(&from).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.path().is_file() && name != ".lock" {
                let text = std::fs::read_to_string(entry.path()).unwrap();
                std::fs::write(to.join(&name), edit(&name, text)).unwrap();
            }
        }
    };
    copy("shard-0", "shard-0-again", &|_, text| text);
    let out = succeeded(merge(&[
        "shard-0",
        "shard-1",
        "shard-0-again",
        "--out",
        "m0",
    ]));
    assert!(
        text(&out.stderr).contains("shard-0-again repeats a shard already taken"),
        "{}",
        text(&out.stderr)
    );
    assert_same_judging(&dir.path().join("m0"), &whole_dir);
    copy("shard-0", "shard-0-other", &|name, text| {
        if name != "results.jsonl" {
            return text;
        }
        // The first sample's verdict turned.
        let mut records: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(records[0]["status"], "pass");
        records[0]["status"] = json!("fail");
        records.iter().map(|r| format!("{r}\n")).collect()
    });
    copy("shard-1", "shard-1-elsewhere", &|name, text| {
        if name == "manifest.json" {
            let mut manifest: Value = serde_json::from_str(&text).unwrap();
            assert!(manifest["fingerprint"]["packages"].is_string());
            manifest["fingerprint"]["python"] = json!("3.0.0");
            manifest.to_string()
        } else {
            text
        }
    });
    // What cannot be merged is refused, saying why.
    for (args, says) in [
        (
            &["shard-0", "--out", "m1"][..],
            "shard 1/2 is missing; run it:",
        ),
        (
            &["shard-0", "shard-0-other", "shard-1", "--out", "m2"][..],
            "are the same shard with different verdicts (BigCodeBench/1 sample 0",
        ),
        (
            &["shard-0", "shard-1-elsewhere", "--out", "m2"][..],
            "ran on machines set up otherwise (python: ",
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
    let recording = pybench_data()
        .join("trajectory.jsonl")
        .display()
        .to_string();
    let data = pybench_data().display().to_string();
    assay_ok(
        dir.path(),
        &[
            "eval",
            "pybench",
            "--trajectories",
            &recording,
            "--data",
            &data,
            "--tasks",
            "2,9,10,18",
            "--shard",
            "1/2",
            "--out",
            "py",
        ],
    );
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
        let args = ["run", "bigcodebench", "--tasks", tasks, "--profile", "test"];
        assay_ok(
            dir.path(),
            &[&args[..], &["--jobs", "2", "--out", out], extra].concat(),
        );
    };
    run("whole", &[]);
    run("s0", &["--shard", "0/3"]);
    run("s1", &["--shard", "1/3"]);
    run("s2", &["--shard", "2/3"]);
    succeeded(merge(dir.path(), &["s2", "s0", "s1", "--out", "merged"]));
    let (whole, merged) = (dir.path().join("whole"), dir.path().join("merged"));
    assert_same_judging(&merged, &whole);
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
    // Billed as the single run is (the reference solutions bill nothing).
    let summary = |dir: &Path| read_json(&dir.join("summary.json"));
    assert_eq!(summary(&merged)["tokens"], summary(&whole)["tokens"]);
    assert_eq!(summary(&merged)["cost_usd"], summary(&whole)["cost_usd"]);

    // Answers alone, generated in shards, merge into the single generation's samples file.
    let generate = |out: &str, extra: &[&str]| {
        let args = [
            "generate",
            "bigcodebench",
            "--model",
            "reference",
            "--tasks",
            tasks,
        ];
        assay_ok(dir.path(), &[&args[..], &["--out", out], extra].concat());
    };
    generate("g-whole", &[]);
    generate("g0", &["--shard", "0/2"]);
    generate("g1", &["--shard", "1/2"]);
    let out = succeeded(merge(
        dir.path(),
        &["g1", "g0", "--out", "g-merged", "--json"],
    ));
    assert_eq!(text(&out.stdout).trim(), r#"{"samples":5}"#);
    let (g_whole, g_merged) = (dir.path().join("g-whole"), dir.path().join("g-merged"));
    assert_eq!(
        std::fs::read_to_string(g_merged.join("samples.jsonl")).unwrap(),
        std::fs::read_to_string(g_whole.join("samples.jsonl")).unwrap()
    );
    assert_eq!(generation(&g_merged)["samples"], 5);
    assert_eq!(
        read_json(&g_merged.join("manifest.json"))["kind"],
        "bigcodebench-generate"
    );
}

#[test]
fn missing_and_unfinished_shards_are_listed_with_the_commands_that_run_them() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = &write_samples(dir.path(), &[1, 2, 3, 4, 10]);
    let eval = |extra: &[&str]| {
        assay_ok(dir.path(), &eval_args(tasks, extra));
    };
    eval(&["--out", "whole"]);
    eval(&["--shard", "0/3", "--out", "runs/e-shard-0-of-3"]);
    eval(&["--shard", "1/3", "--out", "runs/e-shard-1-of-3"]);
    // Shard 1 killed before it ended: its last verdict and its summary never written.
    let cut = dir.path().join("runs/e-shard-1-of-3");
    let results = std::fs::read_to_string(cut.join("results.jsonl")).unwrap();
    let kept: Vec<&str> = results.lines().collect();
    std::fs::write(
        cut.join("results.jsonl"),
        kept[..kept.len() - 1].join("\n") + "\n",
    )
    .unwrap();
    std::fs::remove_file(cut.join("summary.json")).unwrap();

    let out = merge(
        dir.path(),
        &[
            "runs/e-shard-0-of-3",
            "runs/e-shard-1-of-3",
            "--out",
            "merged",
        ],
    );
    assert!(!out.status.success());
    let said = text(&out.stderr);
    assert!(said.contains("shard 2/3 is missing; run it:"), "{said}");
    assert!(
        said.contains("shard 1/3 (runs/e-shard-1-of-3) has not ended"),
        "{said}"
    );
    assert!(said.contains("then merge all 3"), "{said}");
    assert!(!dir.path().join("merged/results.jsonl").exists());
    // The commands printed run as printed, from anywhere, and finish the run.
    let commands: Vec<&str> = said
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("cd "))
        .collect();
    assert_eq!(commands.len(), 2, "{said}");
    assert!(
        commands[1].ends_with("--shard 2/3 --out runs/e-shard-2-of-3"),
        "{}",
        commands[1]
    );
    for command in &commands {
        let ran = shell(command);
        assert!(ran.status.success(), "{command}: {}", text(&ran.stderr));
    }
    succeeded(merge(
        dir.path(),
        &[
            "runs/e-shard-0-of-3",
            "runs/e-shard-1-of-3",
            "runs/e-shard-2-of-3",
            "--out",
            "merged",
        ],
    ));
    assert_same_judging(&dir.path().join("merged"), &dir.path().join("whole"));
    let manifest = read_json(&dir.path().join("merged/manifest.json"));
    assert_eq!(manifest["command"]["args"][1], "merge");
}

#[test]
fn merged_pybench_shards_are_the_single_run_with_its_files() {
    pybench_env();
    let dir = tempfile::tempdir().unwrap();
    let replay = format!(
        "replay:{}",
        pybench_data().join("trajectory.jsonl").display()
    );
    let data = pybench_data().display().to_string();
    let run = |out: &str, extra: &[&str]| {
        let args = ["run", "pybench", "--model", &replay, "--data", &data];
        let tasks = [
            "--tasks",
            "2,9,63,67,79,83,95,136",
            "--jobs",
            "2",
            "--out",
            out,
        ];
        assay_ok(dir.path(), &[&args[..], &tasks, extra].concat());
    };
    run("whole", &[]);
    run("p0", &["--shard", "0/2"]);
    run("p1", &["--shard", "1/2"]);
    let out = succeeded(merge(
        dir.path(),
        &["p1", "p0", "--out", "merged", "--json"],
    ));
    let (whole, merged) = (dir.path().join("whole"), dir.path().join("merged"));

    // The episodes, verdicts and figures of the single run, in its order.
    let episodes = |dir: &Path| -> Vec<Value> {
        lines(&dir.join("results.jsonl"))
            .into_iter()
            .map(|mut r| {
                r.as_object_mut().unwrap().remove("seconds");
                for cell in r["cells"].as_array_mut().unwrap() {
                    cell.as_object_mut().unwrap().remove("seconds");
                }
                r
            })
            .collect()
    };
    assert_eq!(episodes(&merged), episodes(&whole));
    let summary = |dir: &Path| {
        let mut s = read_json(&dir.join("summary.json"));
        s.as_object_mut().unwrap().remove("wall_seconds");
        s
    };
    assert_eq!(summary(&merged), summary(&whole));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["faithful"], summary(&whole)["faithful"]);
    assert_eq!(
        std::fs::read_to_string(merged.join("trajectory.jsonl")).unwrap(),
        std::fs::read_to_string(whole.join("trajectory.jsonl")).unwrap()
    );
    // Every file the episodes kept and every figure they drew, byte for byte.
    let files = |root: &Path| -> BTreeMap<String, Vec<u8>> {
        let mut found = BTreeMap::new();
        let mut stack = vec![root.join("tasks"), root.join("figures")];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                let name = path.strip_prefix(root).unwrap().display().to_string();
                if path.is_dir() {
                    found.insert(format!("{name}/"), Vec::new());
                    stack.push(path);
                } else {
                    found.insert(name, std::fs::read(&path).unwrap());
                }
            }
        }
        found
    };
    let kept = files(&whole);
    assert!(
        kept.keys().any(|k| k.starts_with("figures/")),
        "{:?}",
        kept.keys()
    );
    assert!(
        kept.keys()
            .any(|k| k.starts_with("tasks/") && !k.ends_with('/')),
        "{:?}",
        kept.keys()
    );
    assert_eq!(
        files(&merged).keys().collect::<Vec<_>>(),
        kept.keys().collect::<Vec<_>>()
    );
    // Copied byte for byte from the shards (runs apart may draw a figure's bytes otherwise).
    let mut shards = files(&dir.path().join("p0"));
    shards.extend(files(&dir.path().join("p1")));
    assert!(files(&merged) == shards, "the kept files' bytes differ");
    assert_reads_as_a_run(dir.path(), "merged", 8);
}
