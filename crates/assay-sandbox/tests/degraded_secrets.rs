//! Below full isolation, with Landlock turned off too, a job still cannot read the harness's
//! secrets: without a PID namespace it sees the supervisor's and the worker's `/proc` entries,
//! but both processes are non-dumpable and the job has no capability, so their environments
//! (an API key in the supervisor's) stay closed; and as root the job gets a `/dev/shm` of its
//! own, not the host's.

mod common;

use std::path::PathBuf;

use assay_sandbox::{Engine, IsolationMode, ScriptJob};
use common::{json_report, run};

const CANARY: &str = "sk-assay-degraded-canary-51c0e7";

/// What the job saw, as JSON on its stdout. argv: the supervisor's pid, the worker's pid, the
/// host's marker file in /dev/shm, the key to look for.
const SNOOP: &str = r#"
import json, os, sys
supervisor, worker, marker, canary = sys.argv[1:5]
leaked, denied = [], {}
for pid in filter(str.isdigit, os.listdir("/proc")):
    for name in ("environ", "mem"):
        path = f"/proc/{pid}/{name}"
        try:
            with open(path, "rb") as f:
                data = f.read(1 << 20) if name == "environ" else b""
        except OSError as e:
            if pid in (supervisor, worker):
                denied[f"{pid}/{name}"] = type(e).__name__
            continue
        if canary.encode() in data:
            leaked.append(path)
status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines()
              if ":\t" in line)
print(json.dumps({
    "sees_supervisor": os.path.isdir(f"/proc/{supervisor}"),
    "sees_worker": os.path.isdir(f"/proc/{worker}"),
    "leaked": leaked,
    "denied": denied,
    "cap_eff": status["CapEff"].strip(),
    "uid": os.getuid(),
    "host_shm_marker": os.path.exists(marker),
    "shm": sorted(os.listdir("/dev/shm")),
}))
"#;

/// Set in the process that really runs the test.
const INNER: &str = "ASSAY_TEST_DEGRADED_SECRETS_INNER";

#[test]
fn without_namespaces_or_landlock_the_supervisors_secrets_stay_closed() {
    // `/proc/<pid>/environ` shows the environment a process started with, so the key must be
    // there from the start: the test runs itself again in a process started with it.
    if std::env::var_os(INNER).is_none() {
        // The test starts its own process, with a key in its environment on purpose.
        #[allow(clippy::disallowed_methods)]
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "without_namespaces_or_landlock_the_supervisors_secrets_stay_closed",
                "--nocapture",
            ])
            .env(INNER, "1")
            .env("OPENAI_API_KEY", CANARY)
            .status()
            .expect("run the test in a process started with the key");
        assert!(status.success(), "the inner run failed: {status}");
        return;
    }
    let own = std::fs::read("/proc/self/environ").unwrap();
    assert!(
        String::from_utf8_lossy(&own).contains(CANARY),
        "the key to protect is in this process's initial environment"
    );
    let marker = PathBuf::from(format!("/dev/shm/assay-host-marker-{}", std::process::id()));
    std::fs::write(&marker, CANARY).expect("write the host's /dev/shm marker");
    let result = run(async {
        let mut config = common::config();
        config.namespaces = false;
        config.landlock = false;
        config.isolation = IsolationMode::Auto;
        let engine = Engine::start(config).await.expect("engine");
        let layers = engine.isolation().layers.clone();
        assert!(!layers.pid_ns && !layers.user_ns, "{layers:?}");
        assert_eq!(layers.landlock_abi, 0, "Landlock was turned off");
        let worker = engine.worker_pid().await.expect("a worker runs");
        let mut job = ScriptJob::new(SNOOP);
        job.argv = vec![
            std::process::id().to_string(),
            worker.to_string(),
            marker.display().to_string(),
            CANARY.to_string(),
        ];
        let out = engine.run_script(job).await;
        (layers, out)
    });
    let _ = std::fs::remove_file(&marker);
    let (layers, out) = result;
    let seen = json_report(&out);
    // The supervisor and the worker are in plain sight...
    assert_eq!(seen["sees_supervisor"], true, "{seen}");
    assert_eq!(seen["sees_worker"], true, "{seen}");
    // ...but their environments and memory are not readable, and the key is nowhere.
    assert_eq!(seen["leaked"], serde_json::json!([]), "{seen}");
    let denied = seen["denied"].as_object().unwrap();
    assert_eq!(denied.len(), 4, "{seen}");
    assert!(denied.values().all(|e| e == "PermissionError"), "{seen}");
    assert_eq!(seen["cap_eff"], "0000000000000000", "no capability: {seen}");
    // A /dev/shm of its own where the job could still mount (as root); the report says which.
    let root = rustix::process::geteuid().is_root();
    assert_eq!(layers.private_shm, root, "{layers:?}");
    assert_eq!(seen["host_shm_marker"], !layers.private_shm, "{seen}");
    if layers.private_shm {
        assert_eq!(seen["shm"], serde_json::json!([]), "{seen}");
    }
}
