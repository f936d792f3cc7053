//! An engine with several worker processes (`EngineConfig::workers`): jobs go to each in turn,
//! and a session that restarts keeps its workspace, which lives in the worker that made it.

mod common;

use assay_sandbox::{Engine, SessionSpec, Status, UnittestJob};
use common::{run, DOUBLE, TRIVIAL_TEST};

fn engine_of(workers: usize) -> Engine {
    let mut config = common::config();
    config.set_concurrency(2);
    config.workers = workers;
    run(Engine::start(config)).expect("engine starts")
}

/// The worker processes this test process started: its children running the zygote (the
/// job processes they fork are their descendants, not ours).
fn workers() -> usize {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            // `pid (comm) state ppid ...`: the comm may hold spaces, the parent follows it.
            let parent = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.split_whitespace().nth(1));
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            parent == Some(Some(me.as_str()))
                && String::from_utf8_lossy(&cmdline).contains("assay_worker.zygote")
        })
        .count()
}

#[test]
fn jobs_go_to_every_worker_and_sessions_keep_theirs() {
    let engine = engine_of(3);
    run(async {
        let mut jobs = tokio::task::JoinSet::new();
        for _ in 0..9 {
            let engine = engine.clone();
            jobs.spawn(async move {
                engine
                    .run_unittest(UnittestJob::new(DOUBLE, TRIVIAL_TEST))
                    .await
            });
        }
        while let Some(out) = jobs.join_next().await {
            let out = out.unwrap();
            assert_eq!(out.status, Status::Pass, "{}", out.reason);
        }
    });
    // Three workers, started on their first turns, forked them.
    assert_eq!(workers(), 3);
    // A session's restart forks its new process in the worker holding its workspace: the
    // file written before the restart is still there.
    run(async {
        let session = engine.open_session(SessionSpec::default()).await.unwrap();
        let wrote = session.exec("open('kept.txt', 'w').write('x')").await;
        assert_eq!(wrote.status, Status::Pass, "{}", wrote.reason);
        for _ in 0..3 {
            session.restart().await.unwrap();
            let read = session.exec("print(open('kept.txt').read())").await;
            assert_eq!(read.output.text, "x\n", "{}", read.reason);
        }
        session.close().await;
    });
}
