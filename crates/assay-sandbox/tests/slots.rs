//! CPU slots: with one slot, a job that waits lets the next one start; two jobs that compute
//! never run side by side.

mod common;

use assay_sandbox::{Engine, UnittestJob};
use common::{assert_passed, config, run};

/// A job that prints when it started, then waits or computes for `seconds`.
fn job(body: &str, seconds: f64) -> UnittestJob {
    let code = format!(
        "import time\ndef task_func():\n    print(repr(time.time()), flush=True)\n    end = time.time() + {seconds}\n{body}\n"
    );
    let test = "import unittest\nclass TestCases(unittest.TestCase):\n    def test_run(self):\n        task_func()\n";
    UnittestJob::new(code, test)
}

const WAITS: &str = "    time.sleep(end - time.time())";
const COMPUTES: &str = "    while time.time() < end:\n        sum(range(1000))";

/// An engine with one CPU slot and at most `max_running` jobs at once.
fn one_slot(max_running: usize) -> Engine {
    let mut config = config();
    config.set_concurrency(1);
    config.max_running = max_running;
    run(Engine::start(config)).expect("engine")
}

/// When each of two jobs started (seconds since the epoch), run at once on `engine`.
fn starts(engine: &Engine, body: &str) -> (f64, f64) {
    let (a, b) = run(async {
        tokio::join!(
            engine.run_unittest(job(body, 3.0)),
            engine.run_unittest(job(body, 3.0))
        )
    });
    let start = |out: &assay_sandbox::UnittestOutcome| {
        assert_passed(out);
        out.stdout.text.trim().parse::<f64>().unwrap()
    };
    (start(&a), start(&b))
}

#[test]
fn a_waiting_job_lends_its_slot_and_computing_jobs_take_turns() {
    let engine = one_slot(4);
    let (a, b) = starts(&engine, WAITS);
    // The second started once the first had been idle for a second or so, not after 3 s.
    assert!(
        (a - b).abs() < 2.5,
        "waiting jobs ran one after the other: {a} {b}"
    );
    let (a, b) = starts(&engine, COMPUTES);
    assert!((a - b).abs() > 2.5, "computing jobs overlapped: {a} {b}");

    let engine = one_slot(1); // no lending
    let (a, b) = starts(&engine, WAITS);
    assert!(
        (a - b).abs() > 2.5,
        "lending was off, yet jobs overlapped: {a} {b}"
    );
}
