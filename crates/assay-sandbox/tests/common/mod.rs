//! Shared set-up for the integration tests: the `test` profile's Python environment (built
//! once, under a lock, by the first test that needs it), one runtime and one engine per test
//! binary (so the tests also exercise concurrent use), and helpers.

#![allow(dead_code)]

use std::future::Future;
use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use assay_pyenv::{Environment, Interpreter, Profile, SilentObserver};
use assay_sandbox::{
    Engine, EngineConfig, IsolationMode, Limits, ScriptOutcome, Status, UnittestOutcome,
};
use tokio::runtime::Runtime;

/// The test environment's interpreter, set up on first use.
pub fn python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let profile = Profile::by_name("test").expect("test profile");
            let interpreter = Interpreter::discover(None).expect("a Python 3.11 interpreter");
            let env = Environment::locate(profile, interpreter).expect("locate test env");
            env.ensure(&SilentObserver)
                .expect("set up the test environment");
            env.python()
        })
        .clone()
}

/// Strict isolation: the suite runs where full isolation is available (our CI machines) and
/// must fail loudly, not degrade quietly, anywhere it isn't.
pub fn config() -> EngineConfig {
    let mut config = EngineConfig::new(python());
    config.preload = Profile::by_name("test").unwrap().preload_modules();
    config.isolation = IsolationMode::Strict;
    config.concurrency = 4;
    config.prefork = 2;
    config.limits = limits(20);
    // The worker runtime in the build's own scratch space, not in the user's cache (and not
    // under /tmp, which jobs see replaced by their own).
    config.runtime_dir = Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("assay-runtime"));
    config
}

pub fn limits(wall_secs: u64) -> Limits {
    Limits {
        wall: Duration::from_secs(wall_secs),
        memory_bytes: 1 << 30,
        ..Limits::default()
    }
}

pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .expect("runtime")
    })
}

/// Runs a test body on the shared runtime.
pub fn run<F: Future>(future: F) -> F::Output {
    runtime().block_on(future)
}

/// The engine shared by every test of this binary.
pub fn engine() -> Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            runtime()
                .block_on(Engine::start(config()))
                .expect("engine starts")
        })
        .clone()
}

pub const TRIVIAL_TEST: &str = r#"
import unittest

class TestCases(unittest.TestCase):
    def test_double(self):
        self.assertEqual(task_func(2), 4)

    def test_zero(self):
        self.assertEqual(task_func(0), 0)
"#;

pub const DOUBLE: &str = "def task_func(x):\n    return x * 2\n";

/// A process name unique to this test process and call: `prefix` (three characters at most)
/// and two numbers, 15 characters at most, as `PR_SET_NAME` takes them.
pub fn marker(prefix: &str) -> String {
    static MARKS: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{prefix}{}x{}",
        std::process::id() % 10_000,
        MARKS.fetch_add(1, Ordering::SeqCst)
    )
}

/// A Python expression that names the process evaluating it `mark` (`PR_SET_NAME`), so that
/// the host can see the code running.
pub fn name_process(mark: &str) -> String {
    format!("__import__('ctypes').CDLL(None).prctl(15, b'{mark}', 0, 0, 0)")
}

/// Processes on the host whose name or command line carries `marker`.
pub fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        for file in ["comm", "cmdline"] {
            let mut text = Vec::new();
            if let Ok(mut f) = std::fs::File::open(entry.path().join(file)) {
                let _ = f.read_to_end(&mut text);
            }
            if String::from_utf8_lossy(&text).contains(marker) {
                found.push(format!("pid {pid}: {}", String::from_utf8_lossy(&text)));
            }
        }
    }
    found
}

/// Returns once `count` processes on the host carry `mark`: the code that names them is
/// running. Panics with what `job` came to if it ends first, so the wait is bounded by the
/// job's own limits.
pub async fn until_running<F>(mark: &str, count: usize, job: &mut F)
where
    F: Future + Unpin,
    F::Output: std::fmt::Debug,
{
    while processes_with(mark).len() < count {
        tokio::select! {
            out = &mut *job => panic!("the job ended before {count} processes named {mark} ran: {out:?}"),
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
}

/// The JSON document a script printed, which must have exited cleanly.
pub fn json_report(out: &ScriptOutcome) -> serde_json::Value {
    assert_eq!(
        out.status,
        Status::Pass,
        "{} {}",
        out.reason,
        out.stderr.text
    );
    serde_json::from_str(out.stdout.text.trim()).expect("the script's JSON report")
}

/// Asserts a unittest job passed, showing why not.
pub fn assert_passed(out: &UnittestOutcome) {
    assert_eq!(
        out.status,
        Status::Pass,
        "{} failures {:?} errors {:?} stderr {}",
        out.reason,
        out.failures,
        out.errors,
        out.stderr.text
    );
}

/// Fails, saying why, unless `engine` gives each job a cgroup: what a test that needs a job's
/// CPU quota would otherwise pass without having checked (`needs`: what it needs it for).
pub fn require_cgroup_per_job(engine: &Engine, needs: &str) {
    let report = engine.isolation();
    assert_eq!(
        report.memory_limit,
        assay_sandbox::Enforcement::Cgroup,
        "no cgroup per job here (cgroup: {}), so no CPU quota {needs}; this needs cgroups, \
         i.e. running as root",
        report.cgroup
    );
}

/// A test class of three tests, `test_a`, `test_b` and `test_c`, calling `task_func` with 1,
/// 2 and 3: what per-test budgets are tried on.
pub const THREE_TESTS: &str = "\
import unittest
class TestCases(unittest.TestCase):
    def test_a(self):
        self.assertEqual(task_func(1), 1)
    def test_b(self):
        self.assertEqual(task_func(2), 2)
    def test_c(self):
        self.assertEqual(task_func(3), 3)
";

/// The same budget for each of [`THREE_TESTS`]: `cpu` seconds of CPU time, `waiting` seconds
/// of computing nothing.
pub fn budgets(
    cpu: f64,
    waiting: f64,
) -> std::collections::BTreeMap<String, assay_sandbox::TestBudget> {
    let budget = assay_sandbox::TestBudget {
        cpu: Duration::from_secs_f64(cpu),
        waiting: Duration::from_secs_f64(waiting),
    };
    ["test_a", "test_b", "test_c"]
        .into_iter()
        .map(|t| (t.to_string(), budget))
        .collect()
}
