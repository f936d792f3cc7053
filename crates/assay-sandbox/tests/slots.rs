//! CPU slots: with one slot, a job that waits lets the next one start; two jobs that compute
//! never run side by side.

mod common;

use assay_sandbox::{Engine, UnittestJob};
use common::{assert_passed, config, run};

/// A job that prints when it started, waits or computes for `seconds`, then prints when it
/// ended (its own clock: the host's).
fn job(body: &str, seconds: f64) -> UnittestJob {
    let code = format!(
        "import time\ndef task_func():\n    print(repr(time.time()), flush=True)\n    end = time.time() + {seconds}\n{body}\n    print(repr(time.time()), flush=True)\n"
    );
    let test = "import unittest\nclass TestCases(unittest.TestCase):\n    def test_run(self):\n        task_func()\n";
    UnittestJob::new(code, test)
}

const WAITS: &str = "    time.sleep(max(0.0, end - time.time()))";
const COMPUTES: &str = "    while time.time() < end:\n        sum(range(1000))";

/// An engine with one CPU slot and at most `max_running` jobs at once.
fn one_slot(max_running: usize) -> Engine {
    let mut config = config();
    config.set_concurrency(1);
    config.max_running = max_running;
    run(Engine::start(config)).expect("engine")
}

/// When a job ran: from its first statement to its last (seconds since the epoch).
#[derive(Debug, Clone, Copy)]
struct Span {
    start: f64,
    end: f64,
}

/// Whether two jobs ran side by side: one started before the other had finished.
fn overlap(a: Span, b: Span) -> bool {
    a.start < b.end && b.start < a.end
}

/// When each of two jobs ran, started at once on `engine`.
fn spans(engine: &Engine, body: &str) -> (Span, Span) {
    let (a, b) = run(async {
        tokio::join!(
            engine.run_unittest(job(body, 3.0)),
            engine.run_unittest(job(body, 3.0))
        )
    });
    let span = |out: &assay_sandbox::UnittestOutcome| {
        assert_passed(out);
        let times: Vec<f64> = out
            .stdout
            .text
            .lines()
            .map(|l| l.trim().parse().unwrap())
            .collect();
        assert_eq!(times.len(), 2, "{}", out.stdout.text);
        Span {
            start: times[0],
            end: times[1],
        }
    };
    (span(&a), span(&b))
}

// Orders of events, not durations: a loaded machine stretches how long a job takes to start,
// never whether a job started while the other still ran.
#[test]
fn a_waiting_job_lends_its_slot_and_computing_jobs_take_turns() {
    let engine = one_slot(4);
    let (a, b) = spans(&engine, WAITS);
    // The second started once the first had been idle for a second or so, while it still
    // waited (it waits 3 s), not after it.
    assert!(
        overlap(a, b),
        "waiting jobs ran one after the other: {a:?} {b:?}"
    );
    let (a, b) = spans(&engine, COMPUTES);
    assert!(!overlap(a, b), "computing jobs overlapped: {a:?} {b:?}");

    let engine = one_slot(1); // no lending
    let (a, b) = spans(&engine, WAITS);
    assert!(
        !overlap(a, b),
        "lending was off, yet jobs overlapped: {a:?} {b:?}"
    );
}
