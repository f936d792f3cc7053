//! `assay report` on the official runs' result files: the figures the official harness
//! printed, intervals, the paired comparison with McNemar's test, JSON, and bad input.

mod common;

use std::path::PathBuf;

use common::{assay_command, official_results, text};
use serde_json::Value;

#[test]
fn official_results_compare_with_intervals_and_a_paired_test() {
    let dir = tempfile::tempdir().unwrap();
    let (early, late) = (
        official_results("checkpoint-200"),
        official_results("checkpoint-400"),
    );
    let out = assay_command(dir.path())
        .args(["report", "--json"])
        .arg(&early)
        .arg(&late)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = report["runs"].as_array().unwrap();
    // The official pass_at_k.json of each file says 0.18243243243243243 and 0.10810810810810811.
    let pass1 = |i: usize| runs[i]["pass_at_k"]["1"]["value"].as_f64().unwrap();
    assert_eq!(pass1(0), 0.18243243243243243);
    assert_eq!(pass1(1), 0.10810810810810811);
    for (i, run) in runs.iter().enumerate() {
        let e = &run["pass_at_k"]["1"];
        assert!(e["low"].as_f64().unwrap() < pass1(i) && pass1(i) < e["high"].as_f64().unwrap());
        assert_eq!(run["judged"], 148);
    }
    // Computed from the two files on their own: the tasks each passes that the other fails.
    let passing = |path: &PathBuf| -> std::collections::BTreeSet<String> {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        doc["eval"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, s)| s[0]["status"] == "pass")
            .map(|(id, _)| id.clone())
            .collect()
    };
    let (a, b) = (passing(&early), passing(&late));
    let won: Vec<&String> = b.difference(&a).collect();
    let lost: Vec<&String> = a.difference(&b).collect();
    let c = &report["comparisons"][0];
    assert_eq!(c["won"].as_array().unwrap().len(), won.len());
    assert_eq!(c["lost"].as_array().unwrap().len(), lost.len());
    assert_eq!((won.len(), lost.len()), (7, 18));
    // scipy.stats.binomtest(7, 25, 0.5).pvalue
    assert!((c["mcnemar_p"].as_f64().unwrap() - 0.043285250663757324).abs() < 1e-12);
    let d = &c["difference"];
    assert!((d["value"].as_f64().unwrap() - (pass1(1) - pass1(0))).abs() < 1e-12);
    assert!(d["high"].as_f64().unwrap() < 0.0, "a significant drop: {d}");

    // pass@1 per domain, computed here from the dataset's libraries and the file's verdicts.
    let dataset = assay_tasks::bigcodebench::Dataset::embedded(
        "v0.1.4",
        assay_tasks::bigcodebench::Subset::Hard,
    )
    .unwrap();
    let mut per_domain: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
    for task in &dataset.tasks {
        let mut domains: Vec<&str> = task
            .libs
            .iter()
            .filter_map(|l| assay_tasks::bigcodebench::domain(l))
            .collect();
        domains.sort();
        domains.dedup();
        for d in domains {
            let entry = per_domain.entry(d).or_default();
            entry.0 += 1;
            entry.1 += usize::from(a.contains(&task.task_id));
        }
    }
    for (domain, (tasks, passed)) in per_domain {
        let figure = &runs[0]["by_group"][domain];
        assert_eq!(figure["tasks"], tasks, "{domain}");
        let want = passed as f64 / tasks as f64;
        assert!(
            (figure["pass_at_1"].as_f64().unwrap() - want).abs() < 1e-12,
            "{domain}"
        );
    }

    // pass@1 per library: numpy's tasks.
    let numpy: Vec<&assay_tasks::bigcodebench::Task> = dataset
        .tasks
        .iter()
        .filter(|t| t.libs.iter().any(|l| l == "numpy"))
        .collect();
    let passed = numpy.iter().filter(|t| a.contains(&t.task_id)).count();
    let figure = &runs[0]["by_library"]["numpy"];
    assert_eq!(figure["tasks"], numpy.len());
    assert!(
        (figure["pass_at_1"].as_f64().unwrap() - passed as f64 / numpy.len() as f64).abs() < 1e-12
    );

    // The terminal table, with the later run as the baseline.
    let table = assay_command(dir.path())
        .arg("report")
        .arg(&early)
        .arg("--baseline")
        .arg(&late)
        .output()
        .unwrap();
    assert!(table.status.success(), "{}", text(&table.stderr));
    let shown = text(&table.stdout);
    assert!(shown.contains("0.1824 ["), "{shown}");
    assert!(
        shown.contains("18 won, 7 lost; McNemar exact p = 0.0433"),
        "{shown}"
    );
}

#[test]
fn many_runs_make_a_leaderboard_with_elo() {
    let dir = tempfile::tempdir().unwrap();
    let folder = official_results("checkpoint-200")
        .parent()
        .unwrap()
        .to_path_buf();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with("_eval_results.json"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 4);
    let out = assay_command(dir.path())
        .args(["report", "--json"])
        .args(&files)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let board = &report["leaderboard"];
    assert_eq!(
        board["columns"],
        serde_json::json!(["complete hard", "instruct hard"])
    );
    let rows = board["rows"].as_array().unwrap();
    let models: Vec<&str> = rows.iter().map(|r| r["model"].as_str().unwrap()).collect();
    assert_eq!(
        models,
        ["checkpoint-200", "checkpoint-400"],
        "the better model first"
    );
    assert_eq!(rows[0]["pass_at_1"]["complete hard"], 0.18243243243243243);
    let elo = |i: usize, k: &str| rows[i]["elo"][k].as_f64().unwrap();
    assert!(
        (elo(0, "value") + elo(1, "value") - 2000.0).abs() < 1e-6,
        "centred on 1000"
    );
    assert!(elo(0, "low") < elo(0, "value") && elo(0, "value") < elo(0, "high"));
}

#[test]
fn bad_input_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("bogus.json");
    std::fs::write(&bogus, "{\"date\": 1}").unwrap();
    for (path, wanted) in [
        (bogus.clone(), "no `eval` object".to_string()),
        (dir.path().join("missing"), "missing".into()),
        (dir.path().to_path_buf(), "manifest.json".into()),
    ] {
        let out = assay_command(dir.path())
            .arg("report")
            .arg(&path)
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert!(!out.status.success());
        assert!(
            stderr.contains(&wanted) && !stderr.contains("panicked"),
            "{stderr}"
        );
    }
}
