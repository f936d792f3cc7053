//! The trajectories an LLM judge reads are the bytes upstream's scripts sent: Python's
//! `json.dumps` of each line, on one line and indented, for every recorded trajectory of the
//! shared data, and an assay trajectory written as upstream's runner writes its lines.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use assay_agent::pybench::judge::pyjson::PyValue;
use assay_agent::pybench::judge::Shown;
use assay_agent::pybench::replay::read_trajectories;

/// For each line of stdin: `json.dumps(line)` and `json.dumps(line, indent=4)`, both with
/// `ensure_ascii=False`, as a JSON list of pairs.
const PYTHON: &str = r#"
import json, sys
out = []
for line in sys.stdin.read().splitlines():
    value = json.loads(line)
    out.append([json.dumps(value, ensure_ascii=False), json.dumps(value, ensure_ascii=False, indent=4)])
print(json.dumps(out))
"#;

#[test]
fn every_shared_trajectory_reads_as_python_writes_it() {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/pybench/trajectory.jsonl");
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("the shared PyBench data: {}: {e}", file.display()));
    #[allow(clippy::disallowed_methods)]
    let mut python = Command::new("python3")
        .args(["-c", PYTHON])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run python3");
    python
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let done = python.wait_with_output().unwrap();
    assert!(done.status.success());
    let written: Vec<(String, String)> = serde_json::from_slice(&done.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 135);
    assert_eq!(written.len(), lines.len());
    let records = read_trajectories(&file).unwrap();
    let mut runner_written = 0;
    for ((line, (one_line, indented)), record) in lines.iter().zip(&written).zip(&records) {
        let value = PyValue::parse(line).unwrap();
        assert_eq!(&value.dumps_line(), one_line, "{}", record.index);
        assert_eq!(&value.dumps_indented(), indented, "{}", record.index);
        // A line of upstream's runner (the task's fields as task.json has them; two lines were
        // recorded with an older task file that also had `unit_test`): an assay trajectory of
        // the same record is written the same way.
        if value.get("unit_test").is_none() {
            assert_eq!(Shown::from_record(record).line, format!("{line}\n"));
            runner_written += 1;
        }
    }
    assert_eq!(runner_written, 133);
}
