//! What the run's tests share: a run directory of given files, and a BigCodeBench sample's
//! record. Apart, as the tests of several of the run's modules use them.

use assay_records::{Identity, Kind, Manifest};
use serde_json::{json, Value};

pub(super) fn run_dir(kind: Kind, files: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let identity = Identity {
        benchmark: Some("pybench".into()),
        ..Identity::default()
    };
    std::fs::write(
        dir.path().join("manifest.json"),
        serde_json::to_string(&Manifest::new(kind, identity)).unwrap(),
    )
    .unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

/// A `results.jsonl` line of a BigCodeBench sample whose tests ended as `tests` say.
pub(super) fn sample_record(
    index: usize,
    task_id: &str,
    status: &str,
    tests: &[(&str, &str)],
) -> String {
    let tests: Vec<Value> = tests
        .iter()
        .map(|(name, result)| {
            json!({"name": name, "result": result, "detail": format!("{name}: {result}"), "seconds": 0.1})
        })
        .collect();
    json!({
        "index": index, "task_id": task_id, "program_digest": "d", "status": status,
        "reason": "r", "official": null, "infra": null, "tests": tests, "wall_seconds": 1.0,
        "cpu_seconds": null, "memory_peak_bytes": null, "isolation": "full",
    })
    .to_string()
        + "\n"
}
