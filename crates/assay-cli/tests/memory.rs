//! assay's own memory does not grow with the samples: `assay eval` of the same answers
//! repeated many times (a pass@k study, RL rollouts), and `assay report` of that run, peak no
//! higher than for the answers once. The answers are long (as models' are), so that holding
//! every answer, program or record shows; the Python workers are apart and not counted.
//! bench/memory.py measures the same on the official answers at n = 1, 5 and 20.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::{assay_command, read_json, task, text, write_answers, TEST_ENGINE};
use serde_json::{json, Value};

/// Each answer, repeated this many times in the large run.
const REPEATS: usize = 150;

/// How much higher the large run's peak may be.
const AT_MOST: f64 = 1.5;

/// Runs assay with `args` in `dir` to its end (which must be a success), reading its own
/// peak resident memory (VmHWM, in KiB) as it runs: the high-water mark, so the last reading
/// before it exits is its peak but for its last few milliseconds.
fn peak_kib(args: &[&str], dir: &Path) -> u64 {
    let mut child = assay_command(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start assay");
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(900);
    while child.try_wait().expect("wait for assay").is_none() {
        assert!(std::time::Instant::now() < deadline, "assay {args:?} hung");
        if let Some(kib) = std::fs::read_to_string(&status).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        }) {
            peak = peak.max(kib);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let output = child.wait_with_output().expect("assay's output");
    assert!(
        output.status.success(),
        "{args:?}: {}",
        text(&output.stderr)
    );
    assert!(
        peak > 0,
        "assay {args:?} ended before its memory could be read"
    );
    peak
}

/// Four tasks' answers: wrong (each returns `None`, failing every test at once) and long
/// (a 16 KiB comment, as a model's explanation would be).
fn answers() -> Vec<Value> {
    let padding = format!("# {}\n", "an explanation of the approach ".repeat(16)).repeat(32);
    [1, 2, 3, 4]
        .map(|n| {
            let task = task(n);
            json!({
                "task_id": task.task_id,
                "solution": format!("{padding}{}\n    return None\n", task.complete_prompt),
            })
        })
        .to_vec()
}

/// `assay eval` of `rows` in `dir` (its peak), into `dir/run`, then `assay report` of the run
/// (its peak).
fn eval_and_report(dir: &Path, rows: &[Value]) -> (u64, u64) {
    write_answers(dir, rows);
    let args = [
        "eval",
        "bigcodebench",
        "--samples",
        "model--bigcodebench-complete--x.jsonl",
        "--tasks",
        "BigCodeBench/1,BigCodeBench/2,BigCodeBench/3,BigCodeBench/4",
        "--timeout",
        "20",
        "--out",
        "run",
    ];
    let eval = peak_kib(&[&args[..], TEST_ENGINE].concat(), dir);
    let report = peak_kib(&["report", "run", "--html", "report.html"], dir);
    (eval, report)
}

#[test]
fn assays_own_memory_stays_flat_as_the_samples_repeat() {
    let once = tempfile::tempdir().unwrap();
    let (eval_once, report_once) = eval_and_report(once.path(), &answers());
    let many = tempfile::tempdir().unwrap();
    let repeated: Vec<Value> = answers()
        .into_iter()
        .flat_map(|row| std::iter::repeat_n(row, REPEATS))
        .collect();
    let (eval_many, report_many) = eval_and_report(many.path(), &repeated);
    // Every sample judged, each answer as its first copy was.
    let summary = read_json(&many.path().join("run/summary.json"));
    assert_eq!(summary["samples"], 4 * REPEATS, "{summary}");
    assert_eq!(summary["statuses"]["fail"], 4 * REPEATS, "{summary}");
    let html = std::fs::read_to_string(many.path().join("report.html")).unwrap();
    assert!(
        html.contains(&format!("({} failing)", 4 * REPEATS)),
        "the report counts them all"
    );
    for (what, once, many) in [
        ("eval", eval_once, eval_many),
        ("report", report_once, report_many),
    ] {
        eprintln!(
            "assay {what}: {once} KiB for 4 answers, {many} KiB for {}",
            4 * REPEATS
        );
        assert!(
            many as f64 <= AT_MOST * once as f64,
            "assay {what}'s own peak memory grew with the samples: {once} KiB for 4 answers, \
             {many} KiB for {} (at most {AT_MOST}x)",
            4 * REPEATS
        );
    }
}
