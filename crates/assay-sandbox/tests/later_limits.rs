//! Time limits that arrive after a unittest job started (`UnittestJob::later_limits`): a
//! BigCodeBench sample started before its task's reference was measured. Whenever they arrive
//! (while the test they bind runs, after it, or after the whole job), the verdict must be the
//! one the job gets with the same limits known from its start.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use assay_sandbox::{
    Engine, Provisional, Status, TestBudget, TestResult, TimeLimits, UnittestJob, UnittestOutcome,
};
use common::{budgets, engine, run, THREE_TESTS};
use tokio::sync::watch;

/// `task_func` sleeping `seconds[x - 1]` seconds for test x (of a, b, c).
fn sleeps(seconds: [f64; 3]) -> String {
    format!(
        "import time\ndef task_func(x):\n    time.sleep({:?}[x - 1])\n    return x\n",
        seconds
    )
}

fn limits(wall: f64, test_budgets: BTreeMap<String, TestBudget>) -> TimeLimits {
    TimeLimits {
        wall: Duration::from_secs_f64(wall),
        test_budgets,
    }
}

/// `code` with `known` known from the start.
fn known_first(engine: &Engine, code: &str, known: &TimeLimits) -> UnittestOutcome {
    let mut job = UnittestJob::new(code, THREE_TESTS);
    job.limits = Some(common::limits(known.wall.as_secs()));
    job.limits.as_mut().unwrap().wall = known.wall;
    job.test_budgets = known.test_budgets.clone();
    run(engine.run_unittest(job))
}

/// `code` started under a 120 s limit and no budgets, `later` sent `after` into the job (none:
/// the sender goes without sending).
fn arriving(
    engine: &Engine,
    code: &str,
    later: Option<TimeLimits>,
    after: Duration,
) -> UnittestOutcome {
    let (tx, rx) = watch::channel(None);
    let mut job = UnittestJob::new(code, THREE_TESTS);
    job.limits = Some(common::limits(120));
    job.later_limits = Some(rx);
    run(async move {
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            if let Some(limits) = later {
                let _ = tx.send(Some(limits));
            }
        });
        engine.run_unittest(job).await
    })
}

fn results(out: &UnittestOutcome) -> Vec<(&str, TestResult)> {
    out.tests
        .iter()
        .map(|t| (t.name.as_str(), t.result))
        .collect()
}

/// The verdicts agree: status, reason, and each test's result.
fn assert_same(later: &UnittestOutcome, first: &UnittestOutcome) {
    assert_eq!(
        (later.status, &later.reason),
        (first.status, &first.reason),
        "later: {later:?}\nknown first: {first:?}"
    );
    assert_eq!(results(later), results(first));
}

#[test]
fn a_budget_that_arrives_while_its_test_hangs_counts_from_the_tests_start() {
    let engine = engine();
    // test_c sleeps for good from about 1 s; its 3 s waiting budget arrives at 2.5 s, when it
    // has waited 1.5 s of it: it ends at about 4 s, naming test_c, not at the job's 120 s.
    let code = sleeps([0.5, 0.5, 600.0]);
    let tight = limits(60.0, budgets(30.0, 3.0));
    let out = arriving(
        &engine,
        &code,
        Some(tight.clone()),
        Duration::from_millis(2500),
    );
    assert_eq!(
        out.reason,
        "test test_c waited, computing nothing, past its budget of 3 s"
    );
    assert!(out.usage.wall < Duration::from_secs(30), "{:?}", out.usage);
    assert_same(&out, &known_first(&engine, &code, &tight));
}

#[test]
fn a_test_already_past_its_budget_when_it_arrives_ends_the_job_as_its_timeout() {
    let engine = engine();
    // test_a waits 2 s and passes under the first limits; its 1 s budget arrives while test_c
    // runs: known from the start, the job would have ended in test_a.
    let code = sleeps([2.0, 0.2, 5.0]);
    let tight = limits(60.0, budgets(30.0, 1.0));
    let out = arriving(&engine, &code, Some(tight.clone()), Duration::from_secs(3));
    assert_eq!(out.status, Status::Timeout, "{}", out.reason);
    assert_eq!(
        out.reason,
        "test test_a waited, computing nothing, past its budget of 1 s"
    );
    assert_eq!(
        results(&out),
        [
            ("test_a", TestResult::Crashed),
            ("test_b", TestResult::NotRun),
            ("test_c", TestResult::NotRun)
        ]
    );
    assert_same(&out, &known_first(&engine, &code, &tight));
}

#[test]
fn a_wall_limit_that_arrives_earlier_moves_the_deadline() {
    let engine = engine();
    let code = sleeps([0.1, 0.1, 600.0]);
    let tight = limits(3.0, BTreeMap::new());
    let out = arriving(&engine, &code, Some(tight.clone()), Duration::from_secs(1));
    assert_eq!(out.reason, "the wall-clock limit of 3 s was reached");
    assert!(out.usage.wall < Duration::from_secs(20), "{:?}", out.usage);
    assert_same(&out, &known_first(&engine, &code, &tight));
    // Arriving after the deadline it sets has passed, it ends the job at once.
    let out = arriving(&engine, &code, Some(tight.clone()), Duration::from_secs(5));
    assert_same(&out, &known_first(&engine, &code, &tight));
}

#[test]
fn a_job_that_ends_first_waits_for_its_limits_without_its_place() {
    // An engine of one place, its own: what the waiting verdict holds of it shows.
    let mut config = common::config();
    config.concurrency = 1;
    config.max_running = 1;
    let single = run(Engine::start(config)).expect("engine starts");
    let code = sleeps([0.1, 1.5, 0.1]);
    let (tx, rx) = watch::channel(None);
    let mut job = UnittestJob::new(&code, THREE_TESTS);
    job.limits = Some(common::limits(120));
    job.later_limits = Some(rx);
    let provisional = run(single.run_unittest_provisional(job));
    let Provisional::AwaitingLimits(unsettled) = provisional else {
        panic!("the job ended before its limits and was settled anyway");
    };
    // Its process is gone, and so is its place: another job runs while the verdict waits.
    let other = UnittestJob::new(sleeps([0.0, 0.0, 0.0]), THREE_TESTS);
    let other = run(async {
        tokio::time::timeout(Duration::from_secs(60), single.run_unittest(other)).await
    });
    assert_eq!(other.expect("the place is free").status, Status::Pass);
    let engine = engine();
    // test_b waited 1.5 s, past the 1 s that arrives now: a timeout, as if known first.
    let tight = limits(60.0, budgets(30.0, 1.0));
    tx.send(Some(tight.clone())).unwrap();
    let out = run(unsettled.settle());
    assert_eq!(
        out.reason,
        "test test_b waited, computing nothing, past its budget of 1 s"
    );
    assert_same(&out, &known_first(&engine, &code, &tight));

    // Limits it fits leave its verdict as it was.
    let roomy = limits(60.0, budgets(30.0, 10.0));
    let out = arriving(&engine, &code, Some(roomy.clone()), Duration::from_secs(4));
    assert_eq!(out.status, Status::Pass, "{}", out.reason);
    assert_same(&out, &known_first(&engine, &code, &roomy));
    // So does a wall limit it ended within; one it ran past makes it a timeout.
    let short = limits(1.0, BTreeMap::new());
    let out = arriving(&engine, &code, Some(short.clone()), Duration::from_secs(4));
    assert_eq!(out.reason, "the wall-clock limit of 1 s was reached");
    assert_eq!(out.status, known_first(&engine, &code, &short).status);
}

#[test]
fn limits_that_never_come_leave_the_first_ones() {
    let engine = engine();
    let code = sleeps([0.1, 0.1, 0.1]);
    let out = arriving(&engine, &code, None, Duration::from_millis(200));
    assert_eq!(out.status, Status::Pass, "{}", out.reason);
    let out = arriving(&engine, &code, None, Duration::from_secs(3));
    assert_eq!(out.status, Status::Pass, "{}", out.reason);
}
