//! `assay eval --stability N`: verdicts that depend on the directory listing order or on an
//! unseeded random draw are found, each with what changed it, and a resumed run runs nothing
//! again.

mod common;

use std::path::Path;

use assay_tasks::bigcodebench::{Dataset, Subset};
use common::{assay_command, lines, read_json, text};
use serde_json::{json, Value};

/// Three samples of real tasks: the reference solution of task 1, but unusable unless `x` is
/// listed before `y` (the default listing key lists `x` first, the first stability round's key
/// `y`: blake2b, as `conditions.py` keys it); the reference of task 2, unusable when an
/// unseeded `random.random()` draws above a half (seed 0 draws 0.844, the second round's seed 1
/// draws 0.134); and the reference of task 3, which nothing changes.
fn samples(dir: &Path) {
    let data = Dataset::embedded("v0.1.4", Subset::Full).unwrap();
    let reference = |n: u32| {
        data.get(&format!("BigCodeBench/{n}"))
            .unwrap()
            .reference_solution()
    };
    let listing = format!(
        "{}\nimport os\nos.makedirs('d')\nfor name in ('x', 'y'):\n    open(os.path.join('d', name), 'w').close()\nif os.listdir('d')[0] != 'x':\n    task_func = None\n",
        reference(1)
    );
    let random = format!(
        "{}\nimport random\nif random.random() > 0.5:\n    task_func = None\n",
        reference(2)
    );
    let rows = [
        json!({"task_id": "BigCodeBench/1", "solution": listing}),
        json!({"task_id": "BigCodeBench/2", "solution": random}),
        json!({"task_id": "BigCodeBench/3", "solution": reference(3)}),
    ];
    let text: Vec<String> = rows.iter().map(Value::to_string).collect();
    std::fs::write(dir.join("samples.jsonl"), text.join("\n") + "\n").unwrap();
}

fn eval(dir: &Path) -> std::process::Output {
    let out = assay_command(dir)
        .args(["eval", "bigcodebench", "--samples", "samples.jsonl"])
        .args(["--tasks", "BigCodeBench/1,BigCodeBench/2,BigCodeBench/3"])
        .args(["--profile", "test", "--jobs", "2", "--out", "run"])
        .args(["--stability", "3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    out
}

#[test]
fn verdicts_that_follow_the_listing_order_or_the_seed_are_found_with_their_cause() {
    let dir = tempfile::tempdir().unwrap();
    samples(dir.path());
    let printed = text(&eval(dir.path()).stdout);
    let summary = read_json(&dir.path().join("run/summary.json"));
    let stability = &summary["stability"];
    let statuses: Vec<String> = lines(&dir.path().join("run/results.jsonl"))
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(statuses, ["pass", "fail", "pass"], "{printed}");
    let rounds: Vec<(&str, u64, u64)> = stability["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["change"].as_str().unwrap(),
                r["samples"].as_u64().unwrap(),
                r["changed"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rounds,
        [("listing", 3, 1), ("seed", 3, 1), ("load", 3, 0)],
        "{stability:#}"
    );
    let changed: Vec<(&str, &str, u64, &str, bool)> = stability["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let first = &c["rounds"][0];
            (
                c["task_id"].as_str().unwrap(),
                c["status"].as_str().unwrap(),
                first["round"].as_u64().unwrap(),
                first["status"].as_str().unwrap(),
                c["changes_anyway"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        changed,
        [
            ("BigCodeBench/1", "pass", 1, "fail", false),
            ("BigCodeBench/2", "fail", 2, "pass", false),
        ]
    );
    let range = &stability["pass_at_1"];
    let third = 1.0 / 3.0;
    for (key, want) in [("run", 2.0 * third), ("min", third), ("max", 1.0)] {
        assert!(
            (range[key].as_f64().unwrap() - want).abs() < 1e-9,
            "{range}"
        );
    }
    // The rounds' conditions: another listing key, then another seed, then the run's own.
    let own = &stability["conditions"];
    assert_eq!(
        own,
        &json!({"listing": "hashed", "listing_key": 0, "seed": 0})
    );
    assert_eq!(stability["rounds"][0]["conditions"]["listing_key"], 1);
    assert_eq!(stability["rounds"][1]["conditions"]["seed"], 1);
    assert_eq!(&stability["rounds"][2]["conditions"], own);
    // Nine reruns and two confirmations, journaled.
    let journal = lines(&dir.path().join("run/stability.jsonl"));
    assert_eq!(journal.len(), 11);
    assert_eq!(
        journal.iter().filter(|r| r.get("change").is_none()).count(),
        2
    );
    assert!(
        printed.contains("stability: pass@1 0.6667 here, 0.3333 to 1.0000 over 3 rounds"),
        "{printed}"
    );
    assert!(printed.contains("BigCodeBench/1 (sample 0): pass here; fail with another directory listing order (round 1)"), "{printed}");

    // The report shows it too, in the terminal and on the page.
    let report = assay_command(dir.path())
        .args(["report", "run", "--html", "report.html"])
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", text(&report.stderr));
    let line = "stability: pass@1 0.6667, 0.3333 to 1.0000 over 3 rounds; 2 verdicts changed: \
                BigCodeBench/1 (listing), BigCodeBench/2 (seed)";
    assert!(
        text(&report.stdout).contains(line),
        "{}",
        text(&report.stdout)
    );
    let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(page.contains("BigCodeBench/1 (listing), BigCodeBench/2 (seed)"));

    // Run again: every rerun is kept, none runs twice, and the figures are the same.
    let again = text(&eval(dir.path()).stdout);
    assert_eq!(
        lines(&dir.path().join("run/stability.jsonl")).len(),
        11,
        "{again}"
    );
    // The same figures; the walls are this session's (about none: nothing ran).
    let figures = |summary: &Value| {
        let mut stability = summary["stability"].clone();
        for round in stability["rounds"].as_array_mut().unwrap() {
            round.as_object_mut().unwrap().remove("wall_seconds");
        }
        stability
    };
    let resumed = read_json(&dir.path().join("run/summary.json"));
    assert_eq!(figures(&resumed), figures(&summary));
    let resumed_walls: f64 = resumed["stability"]["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["wall_seconds"].as_f64().unwrap())
        .sum();
    assert!(
        resumed_walls < 0.5,
        "{resumed_walls} s spent on rounds already run"
    );
}
