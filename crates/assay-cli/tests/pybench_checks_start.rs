//! `assay run pybench` judges an episode as soon as it ends: its checks do not wait for the
//! other episodes of the run. A model behind a real HTTP server on loopback answers task A's
//! episode with a final answer (once task B's request is in, so that B's episode is under way
//! when A's ends) and holds B's reply until A's record, verdicts and all, is in the run's
//! `results.jsonl`: were checks to wait for every episode, that record could not come before
//! the held reply, and the hold would end only at its bound.

mod common;
#[path = "../../assay-models/tests/mock/mod.rs"]
mod mock;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{query, run_pybench, task_statuses, text};
use mock::{MockServer, Reply, Route};
use serde_json::Value;

const KEY: &str = "sk-pybench-checks-start-31";

/// Task A, answered at once: task 7, whose check reads the final answer (no file to check).
const A: &str = "PyBench/7";
/// Its query's words, to tell its requests apart.
const A_ASKS: &str = "count of countries for each region";
/// The answer task 7's check wants.
const A_ANSWER: &str = "Finished: 48 38 32 26 23 15 10 2 1";
/// Task B, held: task 18, whose check wants the distance's mean and variance in the final
/// answer.
const B: &str = "PyBench/18";
const B_ANSWER: &str = "Finished: 2526.69 1506614.21";
/// How long B's reply is held at most before it is sent anyway (the test then fails), and
/// A's until B's request is in.
const HOLD: Duration = Duration::from_secs(60);

/// How B's hold ended.
#[derive(Debug)]
struct Held {
    /// A's record as `results.jsonl` had it when B's reply was let go; none: the hold ran out.
    a_record: Option<Value>,
    /// Whether A's record was already there when B's request arrived.
    there_at_arrival: bool,
    /// How long the reply was held.
    held: Duration,
}

/// The record of `task_id` in the `results.jsonl` at `path`, if it is there in full (a line
/// still being written does not parse and is skipped).
fn record_of(path: &Path, task_id: &str) -> Option<Value> {
    let content = std::fs::read_to_string(path).ok()?;
    content
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|r| r["task_id"] == task_id)
}

/// Polls `found` until it finds something, `HOLD` at most: what it found (none: the time ran
/// out), and how long that took.
fn poll<T>(mut found: impl FnMut() -> Option<T>) -> (Option<T>, Duration) {
    let start = Instant::now();
    while start.elapsed() < HOLD {
        if let Some(it) = found() {
            return (Some(it), start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (None, start.elapsed())
}

#[test]
fn an_episodes_checks_start_when_it_ends_not_when_the_others_do() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let results = out.join("results.jsonl");
    // The mock on a runtime of several threads: a reply held blocks its thread (in place)
    // while the other request is answered on the others.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(MockServer::start());
    let held: Arc<Mutex<Vec<Held>>> = Arc::default();
    let holds = held.clone();
    // Whether A's reply went out only once B had asked (none: the time ran out).
    let a_waited: Arc<Mutex<Vec<Option<()>>>> = Arc::default();
    let a_waits = a_waited.clone();
    let b_asked = Arc::new(AtomicBool::new(false));
    server.respond_with(Route::Chat, move |body| {
        if query(body).contains(A_ASKS) {
            let (asked, _) = tokio::task::block_in_place(|| {
                poll(|| b_asked.load(Ordering::SeqCst).then_some(()))
            });
            a_waits.lock().unwrap().push(asked);
            return Reply::chat(&[A_ANSWER]);
        }
        let there_at_arrival = record_of(&results, A).is_some();
        b_asked.store(true, Ordering::SeqCst);
        let (a_record, held) = tokio::task::block_in_place(|| poll(|| record_of(&results, A)));
        holds.lock().unwrap().push(Held {
            a_record,
            there_at_arrival,
            held,
        });
        Reply::chat(&[B_ANSWER])
    });

    let started = Instant::now();
    let done = run_pybench(
        "openai:mock",
        &server.openai_base(),
        "7,18",
        &out,
        &["--retries", "0", "--request-timeout", "240"],
        ("OPENAI_API_KEY", KEY),
        dir.path(),
    );
    let took = started.elapsed();
    assert!(
        done.status.success(),
        "{}\n{}",
        text(&done.stdout),
        text(&done.stderr)
    );

    let requests = server.requests_to(Route::Chat);
    assert_eq!(
        requests.len(),
        2,
        "one request for each episode\n{}\n{}\n{}",
        text(&done.stdout),
        text(&done.stderr),
        std::fs::read_to_string(out.join("results.jsonl")).unwrap_or_default()
    );
    let a_waited = a_waited.lock().unwrap();
    assert_eq!(
        *a_waited,
        [Some(())],
        "A's one reply went out once B had asked"
    );
    let held = held.lock().unwrap();
    assert_eq!(held.len(), 1, "B's one request was held: {held:?}");
    let hold = &held[0];
    // B's episode was under way (its request in) before A's ended.
    assert!(!hold.there_at_arrival, "{hold:?}");
    // Let go because A's record came, not because the hold ran out: A was judged while B's
    // episode was still waiting for its reply.
    let a_record = hold.a_record.as_ref().unwrap_or_else(|| {
        panic!(
            "B's reply was held {:?} and A's record never came: A's checks waited for B's \
             episode",
            hold.held
        )
    });
    assert!(hold.held < HOLD, "{hold:?}");
    assert_eq!(a_record["end"], "answered", "{a_record}");
    assert_eq!(
        a_record["verdicts"]["faithful"]["status"], "pass",
        "{a_record}"
    );
    assert_eq!(
        a_record["verdicts"]["fixed"]["status"], "pass",
        "{a_record}"
    );
    assert_eq!(a_record["status"], "pass", "{a_record}");

    // Then B ended and was judged too; the journal is in task order again.
    let statuses = task_statuses(&out.join("results.jsonl"));
    assert_eq!(
        statuses,
        [(A.into(), "pass".into()), (B.into(), "pass".into())]
    );
    eprintln!(
        "B's reply held {:?} until A's record came; the run took {took:?}",
        hold.held
    );
    drop(server);
}
