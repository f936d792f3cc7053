//! The fallback without namespaces: what remains still holds, and every result says how
//! isolated it was.

mod common;

use std::time::Duration;

use assay_sandbox::{
    Engine, EngineConfig, IsolationLevel, IsolationMode, Limits, Status, UnittestJob,
};
use common::{run, DOUBLE, TRIVIAL_TEST};

fn config() -> EngineConfig {
    let mut config = common::config();
    config.namespaces = false;
    config.isolation = IsolationMode::Auto;
    config
}

#[test]
fn jobs_run_and_record_the_lower_level() {
    run(async {
        let engine = Engine::start(config()).await.expect("engine");
        let report = engine.isolation().clone();
        assert_eq!(report.level, IsolationLevel::Partial, "{report:?}");
        assert!(!report.layers.pid_ns && !report.layers.net_ns);
        assert!(report.layers.no_new_privs && report.layers.seccomp);
        let out = engine
            .run_unittest(UnittestJob::new(DOUBLE, TRIVIAL_TEST))
            .await;
        assert_eq!(out.status, Status::Pass, "{}", out.reason);
        assert_eq!(out.isolation, IsolationLevel::Partial);
        let wrong = engine
            .run_unittest(UnittestJob::new(
                "def task_func(x):\n    return 0\n",
                TRIVIAL_TEST,
            ))
            .await;
        assert_eq!(wrong.status, Status::Fail);
    });
}

#[test]
fn limits_and_tree_kill_still_hold() {
    run(async {
        let engine = Engine::start(config()).await.expect("engine");
        let escapee = r#"
import os, time
def task_func(x):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            while True:
                time.sleep(1)
        os._exit(0)
    while True:
        pass
"#;
        let mut job = UnittestJob::new(escapee, TRIVIAL_TEST);
        job.limits = Some(Limits {
            wall: Duration::from_secs(2),
            ..common::limits(2)
        });
        let out = engine.run_unittest(job).await;
        assert_eq!(out.status, Status::Timeout, "{}", out.reason);
        let after = engine
            .run_unittest(UnittestJob::new(DOUBLE, TRIVIAL_TEST))
            .await;
        assert_eq!(after.status, Status::Pass, "{}", after.reason);
        // Landlock keeps the job's writes inside its workspace.
        let writer = "open('/etc/assay-degraded-probe', 'w')\n".to_string() + DOUBLE;
        let out = engine
            .run_unittest(UnittestJob::new(writer, TRIVIAL_TEST))
            .await;
        assert_eq!(out.status, Status::Error, "{}", out.reason);
        assert_eq!(out.error.unwrap().name, "PermissionError");
        assert!(!std::path::Path::new("/etc/assay-degraded-probe").exists());
        // Without a PID namespace the supervisor's /proc entry is one path away.
        let snoop = format!(
            "import os\nleaked = []\nfor pid in ['{}', '1']:\n    try:\n        leaked.append(open(f'/proc/{{pid}}/environ').read())\n    except OSError:\n        pass\nassert not leaked, leaked\n{DOUBLE}",
            std::process::id()
        );
        let out = engine
            .run_unittest(UnittestJob::new(snoop, TRIVIAL_TEST))
            .await;
        assert_eq!(out.status, Status::Pass, "{}: {:?}", out.reason, out.error);
    });
}

#[test]
fn strict_refuses_to_run_below_full() {
    run(async {
        let mut config = config();
        config.isolation = IsolationMode::Strict;
        let err = match Engine::start(config).await {
            Ok(_) => panic!("strict mode started without namespaces"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("strict"), "{err}");
    });
}
