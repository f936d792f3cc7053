//! The official samples files re-serialize byte for byte through `python_json`: assay's
//! samples files are written the way the official harness writes its own.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Row {
    task_id: String,
    solution: String,
    raw_solution: String,
}

fn official_runs() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/bigcodebench/official-runs");
    assert!(
        dir.is_dir(),
        "{} is missing: the official runs are the fixture of this test",
        dir.display()
    );
    dir
}

#[test]
fn official_samples_files_reserialize_identically() {
    let mut rows = 0;
    for entry in std::fs::read_dir(official_runs()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (number, line) in text.lines().enumerate() {
            let row: Row = serde_json::from_str(line).unwrap();
            assert_eq!(
                assay_rundir::python_json::dumps(&row),
                line,
                "{}:{}",
                path.display(),
                number + 1
            );
            rows += 1;
        }
    }
    assert_eq!(rows, 4 * 148);
}
