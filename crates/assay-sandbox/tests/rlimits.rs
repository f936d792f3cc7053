//! Limits without cgroups (how an unprivileged user runs): rlimits must still stop memory and
//! fork bombs, and must leave numpy and pandas working.

mod common;

use std::time::Duration;

use assay_sandbox::{Enforcement, Engine, Limits, Status, UnittestJob};
use common::{run, TRIVIAL_TEST};

fn limits() -> Limits {
    Limits {
        wall: Duration::from_secs(10),
        memory_bytes: 512 << 20,
        processes: 32,
        ..Limits::default()
    }
}

fn engine() -> Engine {
    let mut config = common::config();
    config.cgroups = false;
    config.limits = limits();
    run(Engine::start(config)).expect("engine")
}

#[test]
fn rlimits_stop_bombs_and_leave_numpy_working() {
    let engine = engine();
    run(async move {
        assert_eq!(engine.isolation().memory_limit, Enforcement::Rlimit);
        let numeric = r#"
import numpy as np, pandas as pd
def task_func(x):
    a = np.random.default_rng(0).normal(size=(300, 300))
    frame = pd.DataFrame(a @ a.T)
    return x * 2 if frame.shape == (300, 300) else None
"#;
        let out = engine
            .run_unittest(UnittestJob::new(numeric, TRIVIAL_TEST))
            .await;
        assert_eq!(out.status, Status::Pass, "{}: {:?}", out.reason, out.errors);

        let bomb = "def task_func(x):\n    hog = []\n    while True:\n        hog.append(bytearray(8 << 20))\n";
        let out = engine
            .run_unittest(UnittestJob::new(bomb, TRIVIAL_TEST))
            .await;
        assert_eq!(out.status, Status::Oom, "{}", out.reason);

        let forks = r#"
import os, time
def task_func(x):
    made = 0
    for _ in range(1000):
        try:
            if os.fork() == 0:
                time.sleep(60)
                os._exit(0)
            made += 1
        except OSError:
            break
    print("forked", made)
    return -1
"#;
        let out = engine
            .run_unittest(UnittestJob::new(forks, TRIVIAL_TEST))
            .await;
        assert_eq!(out.status, Status::Fail, "{}", out.reason);
        let made: Vec<usize> = out
            .stdout
            .text
            .lines()
            .filter_map(|l| l.strip_prefix("forked ")?.parse().ok())
            .collect();
        assert!(
            !made.is_empty() && made.iter().all(|&n| n < 32),
            "{}",
            out.stdout.text
        );
    });
}
