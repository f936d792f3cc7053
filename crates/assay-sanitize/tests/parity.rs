//! Parity with the official sanitizer on the official runs: in the fixture, every `solution` is
//! the official `sanitize(raw_solution, "task_func")` (checked with the installed official
//! package), so ours must produce the same bytes.

mod common;

use std::fs;
use std::path::PathBuf;
use std::time::Instant;

/// `<repo>/../shared/data/bigcodebench/official-runs`, the same layout locally and in CI.
fn fixture_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/bigcodebench/official-runs");
    assert!(
        dir.is_dir(),
        "the official-runs fixture is missing: expected it at {} (a checkout of the shared data \
         next to the repository)",
        dir.display()
    );
    dir
}

#[test]
fn matches_the_official_output_on_the_fixture() {
    let mut files: Vec<PathBuf> = fs::read_dir(fixture_dir())
        .expect("readable fixture directory")
        .map(|entry| entry.expect("readable fixture entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 4, "expected the 4 official .jsonl runs");

    let mut sanitizer = common::sanitizer();
    let started = Instant::now();
    let (mut total, mut equal) = (0, 0);
    let mut mismatches = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        let text = fs::read_to_string(file).expect("readable fixture file");
        let (mut file_total, mut file_equal) = (0, 0);
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            let row: serde_json::Value = serde_json::from_str(line).expect("a JSON row");
            let field = |key: &str| {
                row[key]
                    .as_str()
                    .unwrap_or_else(|| panic!("{name}: a row without string {key:?}"))
                    .to_string()
            };
            let (task_id, raw, expected) =
                (field("task_id"), field("raw_solution"), field("solution"));
            let ours = sanitizer
                .sanitize(&raw, "task_func")
                .unwrap_or_else(|error| panic!("{task_id} in {name}: {error}"));
            file_total += 1;
            if ours == expected {
                file_equal += 1;
            } else {
                mismatches.push(format!(
                    "{task_id} in {name}:\n--- official\n{expected}\n--- ours\n{ours}\n---"
                ));
            }
        }
        println!("{name}: {file_equal}/{file_total} identical");
        total += file_total;
        equal += file_equal;
    }
    println!(
        "all: {equal}/{total} identical in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    for mismatch in &mismatches {
        println!("MISMATCH {mismatch}");
    }
    assert_eq!(total, 592, "expected 4 x 148 rows");
    // The issue asks for 99%; all 592 are identical, so any mismatch is a regression.
    assert_eq!(
        equal, total,
        "only {equal}/{total} rows identical (mismatches above)"
    );
}
