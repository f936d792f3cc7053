//! Unittest jobs end to end: verdicts for each status, the official semantics, limits.

mod common;

use std::time::Duration;

use assay_sandbox::{IsolationLevel, Limits, Status, TestBudget, TestResult, UnittestJob};
use common::{assert_passed, budgets, engine, run, DOUBLE, THREE_TESTS, TRIVIAL_TEST};

fn job(code: &str, test: &str) -> UnittestJob {
    UnittestJob::new(code, test)
}

#[test]
fn a_correct_solution_passes_with_every_test_reported() {
    let engine = engine();
    let out = run(engine.run_unittest(job(DOUBLE, TRIVIAL_TEST)));
    assert_eq!(out.status, Status::Pass, "{}", out.reason);
    assert_eq!(out.isolation, IsolationLevel::Full);
    let modules = &engine.preload_report().modules;
    assert_eq!(modules.len(), 4);
    assert!(modules.values().all(|m| m.ok), "{modules:?}");
    let names: Vec<_> = out
        .tests
        .iter()
        .map(|t| (t.name.as_str(), t.result))
        .collect();
    assert_eq!(
        names,
        [
            ("test_double", TestResult::Pass),
            ("test_zero", TestResult::Pass)
        ]
    );
    assert!(out.failures.is_empty() && out.errors.is_empty() && out.integrity.is_empty());
    assert!(out.reported);
    // Usage is measured. How fast a job is, is the bench's business (`cargo bench`): a bound
    // here would measure the machine's load.
    assert!(!out.usage.wall.is_zero(), "{:?}", out.usage);
}

#[test]
fn a_test_that_patches_os_still_has_its_body_witnessed() {
    // The witness writes its frame while the test body runs, under the test's own patches of
    // `os` (mocks here; pyfakefs's fake filesystem, as BigCodeBench/719's tests use, refuses
    // the real descriptors).
    let test = r#"
import os
import unittest
from unittest.mock import patch

class TestCases(unittest.TestCase):
    @patch("os.write")
    @patch("os.read")
    def test_double(self, read, write):
        self.assertEqual(task_func(2), 4)
        # The patches are in force while the body ends.
        self.assertIs(os.write, write)
        self.assertIs(os.read, read)

    def test_zero(self):
        self.assertEqual(task_func(0), 0)
"#;
    assert_passed(&run(engine().run_unittest(job(DOUBLE, test))));
}

#[test]
fn a_skip_inside_a_subtest_is_named_although_the_body_ran_on() {
    // unittest swallows the skip of a subtest and runs the body to its end, then records the
    // test as skipped: the finding says which test and how.
    let code = "import unittest\ndef task_func(x):\n    raise unittest.SkipTest('later')\n";
    let test = r#"
import unittest

class TestCases(unittest.TestCase):
    def test_each(self):
        for x in (1, 2):
            with self.subTest(x=x):
                self.assertEqual(task_func(x), 2 * x)
"#;
    let out = run(engine().run_unittest(job(code, test)));
    assert_eq!(out.status, Status::Fail, "{}", out.reason);
    let found: Vec<String> = out.integrity.iter().map(|f| f.to_string()).collect();
    assert_eq!(
        found,
        ["the code skipped its tests: SkipTest raised from task_func in a subtest in test_each"],
        "{}",
        out.reason
    );
}

#[test]
fn a_wrong_answer_fails_with_the_official_failure_key_and_traceback() {
    let engine = engine();
    let out = run(engine.run_unittest(job("def task_func(x):\n    return x + 1\n", TRIVIAL_TEST)));
    assert_eq!(out.status, Status::Fail);
    assert_eq!(out.failures.len(), 2, "{:?}", out.failures);
    assert_eq!(out.failures[0].0, "test_double");
    assert!(
        out.failures[0].1.contains("AssertionError: 3 != 4"),
        "{}",
        out.failures[0].1
    );
    assert!(out.reason.contains("2 of 2 tests failed"), "{}", out.reason);
}

#[test]
fn an_exception_in_a_test_is_an_error_entry() {
    let engine = engine();
    let code =
        "def task_func(x):\n    if x:\n        raise ValueError('bad input')\n    return 0\n";
    let out = run(engine.run_unittest(job(code, TRIVIAL_TEST)));
    assert_eq!(out.status, Status::Fail);
    assert_eq!(out.errors.len(), 1);
    assert_eq!(out.errors[0].0, "test_double");
    assert!(out.errors[0].1.contains("ValueError: bad input"));
    let results: Vec<_> = out.tests.iter().map(|t| t.result).collect();
    assert_eq!(results, [TestResult::Error, TestResult::Pass]);
}

#[test]
fn code_that_fails_before_its_tests_is_an_error() {
    let engine = engine();
    for (code, name) in [
        ("def task_func(x:\n    pass\n", "SyntaxError"),
        ("import numpy_but_misspelled\n", "ModuleNotFoundError"),
        ("undefined_name + 1\n", "NameError"),
    ] {
        let out = run(engine.run_unittest(job(code, TRIVIAL_TEST)));
        assert_eq!(out.status, Status::Error, "{code}: {}", out.reason);
        assert_eq!(out.error.as_ref().unwrap().name, name);
        assert!(out.tests.is_empty());
    }
}

#[test]
fn the_official_module_environment_holds() {
    let engine = engine();
    let code = r#"
import tempfile
def task_func(x):
    return x * 2
CWD = os.getcwd()
FACTS = {
    "file": __file__, "environ": environ is os.environ, "exit": exit is None,
    "tz": os.environ.get("TZ"), "cwd_empty": os.listdir(CWD) == [],
    "cwd_in_tmp": CWD.startswith("/tmp/tmp"), "tmpdir": tempfile.gettempdir(),
}
"#;
    let test = r#"
import unittest
class TestCases(unittest.TestCase):
    def test_facts(self):
        self.assertEqual(FACTS, {"file": "__test__.py", "environ": True, "exit": True,
                                 "tz": "UTC", "cwd_empty": True, "cwd_in_tmp": True,
                                 "tmpdir": "/tmp"})
"#;
    let out = run(engine.run_unittest(job(code, test)));
    assert_passed(&out);
}

#[test]
fn printed_output_is_swallowed_from_the_test_but_captured() {
    let engine = engine();
    let code = "import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\n".to_string()
        + DOUBLE;
    let out = run(engine.run_unittest(job(&code, TRIVIAL_TEST)));
    assert_eq!(out.status, Status::Pass);
    // The official harness sends both streams to one swallowed stream: so does this.
    assert!(out.stdout.text.contains("to stdout") && out.stdout.text.contains("to stderr"));
}

#[test]
fn pandas_and_matplotlib_work_preloaded() {
    let engine = engine();
    let code = r#"
import pandas as pd
import matplotlib.pyplot as plt
def task_func(values):
    df = pd.DataFrame({"v": values})
    ax = df.plot(y="v", title="values")
    return df["v"].sum(), ax
"#;
    let test = r#"
import unittest
import matplotlib
class TestCases(unittest.TestCase):
    def test_sum_and_plot(self):
        total, ax = task_func([1, 2, 3])
        self.assertEqual(total, 6)
        self.assertEqual(ax.get_title(), "values")
        self.assertEqual(matplotlib.get_backend().lower(), "agg")
"#;
    let out = run(engine.run_unittest(job(code, test)));
    assert_passed(&out);
}

#[test]
fn the_wall_clock_limit_gives_timeout() {
    let engine = engine();
    let mut j = job(
        "def task_func(x):\n    while True:\n        pass\n",
        TRIVIAL_TEST,
    );
    j.limits = Some(Limits {
        wall: Duration::from_secs(2),
        ..common::limits(2)
    });
    let out = run(engine.run_unittest(j));
    assert_eq!(out.status, Status::Timeout, "{}", out.reason);
    assert!(!out.reported);
    assert!(out.reason.contains("wall-clock"), "{}", out.reason);
    // Not cut before its 2 s limit (both are counted from the moment the job was sent), and
    // cut at it rather than left to run on: 30 s is 15 times the limit, far beyond any
    // scheduling delay.
    assert!(
        out.usage.wall >= Duration::from_secs(2) && out.usage.wall < Duration::from_secs(30),
        "{:?}",
        out.usage.wall
    );
    assert_eq!(out.tests[0].result, TestResult::Crashed);
}

#[test]
fn the_cpu_limit_gives_timeout() {
    let engine = engine();
    let mut j = job(
        "def task_func(x):\n    while True:\n        pass\n",
        TRIVIAL_TEST,
    );
    j.limits = Some(Limits {
        cpu: Some(Duration::from_secs(1)),
        ..common::limits(30)
    });
    let out = run(engine.run_unittest(j));
    assert_eq!(out.status, Status::Timeout, "{}", out.reason);
    // The CPU limit ended it, not the 30 s wall-clock limit (which would say "wall-clock"),
    // after the job had used its second of CPU time.
    assert!(out.reason.contains("CPU"), "{}", out.reason);
    let cpu = out.usage.cpu.expect("CPU time measured");
    assert!(cpu >= Duration::from_secs(1), "{:?}", out.usage);
}

#[test]
fn the_memory_limit_gives_oom() {
    let engine = engine();
    let code = "def task_func(x):\n    blocks = []\n    while True:\n        blocks.append(bytearray(16 << 20))\n";
    let mut j = job(code, TRIVIAL_TEST);
    j.limits = Some(Limits {
        memory_bytes: 256 << 20,
        ..common::limits(30)
    });
    let out = run(engine.run_unittest(j));
    assert_eq!(out.status, Status::Oom, "{}", out.reason);
    assert!(
        out.usage.memory_peak_bytes.unwrap() <= 300 << 20,
        "{:?}",
        out.usage
    );
}

#[test]
fn many_jobs_at_once_all_get_their_own_verdict() {
    let engine = engine();
    let outcomes = run(async {
        let jobs = (0..12).map(|i| {
            let engine = engine.clone();
            let code = if i % 3 == 0 {
                "def task_func(x):\n    return -1\n".to_string()
            } else {
                DOUBLE.to_string()
            };
            tokio::spawn(async move { (i, engine.run_unittest(job(&code, TRIVIAL_TEST)).await) })
        });
        let mut outcomes = Vec::new();
        for handle in jobs {
            outcomes.push(handle.await.unwrap());
        }
        outcomes
    });
    for (i, out) in outcomes {
        let expected = if i % 3 == 0 {
            Status::Fail
        } else {
            Status::Pass
        };
        assert_eq!(out.status, expected, "job {i}: {}", out.reason);
    }
}

#[test]
fn jobs_do_not_see_each_other() {
    let engine = engine();
    let writer = "open('/tmp/left-behind', 'w').write('x')\nimport os\nos.makedirs('/dev/shm/x', exist_ok=True)\n"
        .to_string()
        + DOUBLE;
    assert_eq!(
        run(engine.run_unittest(job(&writer, TRIVIAL_TEST))).status,
        Status::Pass
    );
    let reader = "import os\nassert not os.path.exists('/tmp/left-behind')\nassert os.listdir('/dev/shm') == []\n"
        .to_string()
        + DOUBLE;
    let out = run(engine.run_unittest(job(&reader, TRIVIAL_TEST)));
    assert_eq!(out.status, Status::Pass, "{}: {:?}", out.reason, out.error);
}

#[test]
fn a_runtime_under_tmp_is_refused_with_the_reason() {
    let mut config = common::config();
    config.runtime_dir = Some(std::env::temp_dir().join("assay-runtime-under-tmp"));
    let err = match run(assay_sandbox::Engine::start(config)) {
        Ok(_) => panic!("the engine started with its runtime under /tmp"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("/tmp") && err.contains("ASSAY_CACHE_DIR"),
        "{err}"
    );
}

#[test]
fn the_network_is_shared_only_when_asked_for() {
    let mut config = common::config();
    config.network = true;
    let online = run(assay_sandbox::Engine::start(config)).expect("engine");
    let layers = &online.isolation().layers;
    assert!(layers.network && !layers.net_ns, "{layers:?}");
    assert_eq!(online.isolation().level, IsolationLevel::Full);
    // The host's interfaces are visible: more than loopback.
    let code =
        "import socket\nNAMES = [name for _, name in socket.if_nameindex()]\n".to_string() + DOUBLE;
    let test = "import unittest\nclass TestCases(unittest.TestCase):\n    def test_interfaces(self):\n        self.assertGreater(len(NAMES), 1, NAMES)\n";
    let out = run(online.run_unittest(job(&code, test)));
    assert_passed(&out);
    let isolated = engine();
    assert!(isolated.isolation().layers.net_ns && !isolated.isolation().layers.network);
}

/// What the official process guards change, observed from inside a job.
const GUARDED: &str = r#"
import multiprocessing, os, signal, subprocess, time

def task_func():
    seen = {}
    worker = multiprocessing.Process(target=time.sleep, args=(30,))
    worker.start()
    os.kill(worker.pid, signal.SIGKILL)        # not a Popen child: left alone when guarded
    worker.join(0.5)
    seen["foreign_kill_spared"] = worker.is_alive()
    os.kill(999999, signal.SIGTERM)            # no such pid: ignored when guarded
    seen["kill_command"] = subprocess.run(["kill", "-9", str(worker.pid)]).returncode
    seen["ps"] = subprocess.check_output(["ps"])
    child = subprocess.Popen(["sleep", "5"])
    seen["communicate"] = child.communicate(timeout=0.1)
    seen["own_session"] = os.getsid(child.pid) == child.pid
    child.kill()
    seen["exec"] = os.execvp("true", ["true"])
    return seen
"#;

#[test]
fn the_official_process_guards_hold_and_can_be_turned_off() {
    let engine = engine();
    let test = r#"
import unittest
class TestCases(unittest.TestCase):
    def test_guarded(self):
        seen = task_func()
        self.assertEqual(seen, {"foreign_kill_spared": True, "kill_command": 0, "ps": b"",
                                "communicate": (None, None), "own_session": True, "exec": None})
"#;
    let out = run(engine.run_unittest(job(GUARDED, test)));
    assert_passed(&out);
    assert!(
        out.stdout.text.contains("Prevented attempt to kill PID"),
        "{}",
        out.stdout.text
    );

    // Without the guards, the same calls do what they say: the first kill is real.
    let test = r#"
import unittest, subprocess
class TestCases(unittest.TestCase):
    def test_unguarded(self):
        with self.assertRaises(ProcessLookupError):
            task_func()
"#;
    let mut unguarded = job(GUARDED, test);
    unguarded.guards = false;
    let out = run(engine.run_unittest(unguarded));
    assert_passed(&out);
}

#[test]
fn a_multiprocessing_pool_hangs_at_exit_under_the_guards_as_officially() {
    // BigCodeBench/363's reference: the official harness times it out (a pool's exit never
    // returns, with the harness's manager processes around). Whether one exit hangs is a race
    // that the pool nearly always loses; twenty pools make a run without a hang unheard of.
    let engine = engine();
    let code = "from multiprocessing import Pool\nimport math\ndef task_func(n):\n    with Pool(2) as pool:\n        return pool.map(math.factorial, range(n))\n";
    let test = "import unittest\nclass TestCases(unittest.TestCase):\n    def test_pools(self):\n        for n in range(20):\n            self.assertEqual(len(task_func(n % 4)), n % 4)\n";
    let mut guarded = job(code, test);
    guarded.limits = Some(common::limits(5));
    let out = run(engine.run_unittest(guarded.clone()));
    assert_eq!(out.status, Status::Timeout, "{}", out.reason);
    let mut free = guarded;
    free.guards = false;
    let out = run(engine.run_unittest(free));
    assert_passed(&out);
}

#[test]
fn guarded_popen_children_stay_killable_and_a_second_setsid_fails_as_officially() {
    // No `multiprocessing` in the code: the guards' bookkeeping starts with the first child.
    let engine = engine();
    let code = r#"
import os, signal, subprocess
def task_func():
    child = subprocess.Popen(["sleep", "30"])
    os.kill(child.pid, signal.SIGKILL)
    killed = child.wait(timeout=5)
    try:
        subprocess.Popen(["sleep", "30"], start_new_session=True)
        return killed, "started"
    except subprocess.SubprocessError:
        return killed, "refused"
"#;
    let test = "import unittest\nclass TestCases(unittest.TestCase):\n    def test_it(self):\n        self.assertEqual(task_func(), (-9, 'refused'))\n";
    let out = run(engine.run_unittest(job(code, test)));
    assert_passed(&out);
}

/// `task_func` sleeping `seconds_on_three` seconds in the third of [`THREE_TESTS`].
fn sleeper(seconds_on_three: f64) -> String {
    format!(
        "import time\ndef task_func(x):\n    if x == 3:\n        time.sleep({seconds_on_three})\n    return x\n"
    )
}

/// `task_func` computing (a busy loop) for `seconds_on_three` seconds of CPU time in the third
/// test: the same work however busy the machine is.
fn spinner(seconds_on_three: f64) -> String {
    busy_loop("process_time", seconds_on_three)
}

/// `task_func` in a busy loop for `seconds_on_three` seconds of wall-clock time in the third
/// test, however little CPU it gets meanwhile.
fn wall_spinner(seconds_on_three: f64) -> String {
    busy_loop("monotonic", seconds_on_three)
}

fn busy_loop(clock: &str, seconds_on_three: f64) -> String {
    format!(
        "import time\ndef task_func(x):\n    if x == 3:\n        end = time.{clock}() + {seconds_on_three}\n        while time.{clock}() < end:\n            pass\n    return x\n"
    )
}

/// `code` against [`THREE_TESTS`] with `budgets`, within a job limit of 60 s.
fn three_tests(
    code: &str,
    budgets: std::collections::BTreeMap<String, TestBudget>,
) -> assay_sandbox::UnittestOutcome {
    let mut j = job(code, THREE_TESTS);
    j.limits = Some(common::limits(60));
    j.test_budgets = budgets;
    run(engine().run_unittest(j))
}

fn results(out: &assay_sandbox::UnittestOutcome) -> Vec<(&str, TestResult)> {
    out.tests
        .iter()
        .map(|t| (t.name.as_str(), t.result))
        .collect()
}

/// The first two tests passed; the third was running when the job ended.
const ENDED_IN_THE_THIRD: [(&str, TestResult); 3] = [
    ("test_a", TestResult::Pass),
    ("test_b", TestResult::Pass),
    ("test_c", TestResult::Crashed),
];

#[test]
fn a_sample_hanging_in_its_third_test_ends_at_that_tests_waiting_budget() {
    let out = three_tests(&sleeper(600.0), budgets(30.0, 2.0));
    assert_eq!(out.status, Status::Timeout, "{}", out.reason);
    assert_eq!(
        out.reason,
        "test test_c waited, computing nothing, past its budget of 2 s"
    );
    assert_eq!(results(&out), ENDED_IN_THE_THIRD);
    // Ended at the test's 2 s of waiting, not at its 30 s of CPU nor the job's 60 s.
    assert!(
        out.usage.wall < Duration::from_secs(20),
        "{:?}",
        out.usage.wall
    );
}

#[test]
fn a_busy_loop_in_a_test_ends_at_its_cpu_budget() {
    let out = three_tests(&spinner(600.0), budgets(2.0, 30.0));
    assert_eq!(out.status, Status::Timeout, "{}", out.reason);
    assert_eq!(
        out.reason,
        "test test_c computed past its CPU budget of 2 s"
    );
    assert_eq!(results(&out)[2], ("test_c", TestResult::Crashed));
    assert!(
        out.usage.wall < Duration::from_secs(20),
        "{:?}",
        out.usage.wall
    );
}

#[test]
fn slow_tests_within_their_budgets_pass_and_budgets_do_not_add_up() {
    let engine = engine();
    // Each budget is the test's own: 1.5 s of waiting in the third test of a 3 s budget
    // passes, and the budget restarts with each test.
    let mut j = job(&sleeper(1.5), THREE_TESTS);
    j.test_budgets = budgets(30.0, 3.0);
    let out = run(engine.run_unittest(j));
    assert_eq!(out.status, Status::Pass, "{}", out.reason);
    // Computing is not waiting: 3 s of work passes a 1 s waiting budget.
    let mut j = job(&spinner(3.0), THREE_TESTS);
    j.test_budgets = budgets(30.0, 1.0);
    let out = run(engine.run_unittest(j));
    assert_eq!(out.status, Status::Pass, "{}", out.reason);
    // The supervisor measured each test's CPU time: the third computed its 3 s.
    let cpu: Vec<f64> = out.tests.iter().map(|t| t.cpu_seconds.unwrap()).collect();
    assert!(cpu[0] < 0.5 && cpu[2] > 2.0, "{cpu:?}");
    // A test without a budget has only the job's limit.
    let mut j = job(&sleeper(1.5), THREE_TESTS);
    j.test_budgets = budgets(0.5, 0.5);
    j.test_budgets.remove("test_c");
    let out = run(engine.run_unittest(j));
    assert_eq!(out.status, Status::Pass, "{}", out.reason);
}

#[test]
fn the_jobs_own_limit_is_not_blamed_on_a_test() {
    let engine = engine();
    // test_a and test_b take 1.5 s each; test_c hangs from about 3 s. Its 3 s budget would
    // end at about 6 s, after the job's own 4 s: the job's limit ended it, whatever test ran.
    let code =
        "import time\ndef task_func(x):\n    time.sleep(1.5 if x < 3 else 600)\n    return x\n";
    let mut j = job(code, THREE_TESTS);
    j.limits = Some(Limits {
        wall: Duration::from_secs(4),
        ..common::limits(4)
    });
    j.test_budgets = budgets(30.0, 3.0);
    let out = run(engine.run_unittest(j));
    assert_eq!(out.status, Status::Timeout, "{}", out.reason);
    assert_eq!(out.reason, "the wall-clock limit of 4 s was reached");
}

#[test]
fn a_test_starved_of_cpu_is_not_waiting() {
    let engine = engine();
    // A job held to 5% of a CPU by its cgroup quota uses less than the share that counts as
    // waiting, while its thread is runnable all along: like a job on a machine busier than
    // its slots. Its 2 s of spinning must not run down a 1 s waiting budget. The quota needs
    // a cgroup per job: without one this would pass without having checked anything.
    common::require_cgroup_per_job(&engine, "to starve the job with");
    let mut j = job(&wall_spinner(2.0), THREE_TESTS);
    j.limits = Some(Limits {
        cpus: 0.05,
        ..common::limits(60)
    });
    j.test_budgets = budgets(30.0, 1.0);
    let out = run(engine.run_unittest(j));
    assert_eq!(out.status, Status::Pass, "{}", out.reason);
    // It was starved: its third test had far less CPU than its 2 s of wall.
    let third = &out.tests[2];
    assert!(
        third.cpu_seconds.unwrap() < 1.0 && third.seconds > 1.9,
        "{third:?}"
    );
}

/// `task_func(3)` deadlocks: it joins a thread waiting, with no timeout, on an event no one
/// sets, while a second thread serves a socket no one connects to.
const DEADLOCK: &str = r#"
import socket, threading
def task_func(x):
    if x == 3:
        never = threading.Event()
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        threading.Thread(target=listener.accept).start()
        waiter = threading.Thread(target=never.wait)
        waiter.start()
        waiter.join()
    return x
"#;

/// Waits with no timeout that something in the job ends all the same: a timer's signal, a
/// thread that sleeps and then sets the event, a child that exits.
const WAKES_UP: &str = r#"
import os, select, signal, subprocess, threading, time
class Rang(Exception):
    pass
def ring(signum, frame):
    raise Rang()
def task_func(x):
    if x == 1:
        signal.signal(signal.SIGALRM, ring)
        signal.alarm(2)
        r, w = os.pipe()
        try:
            select.select([r], [], [])
        except Rang:
            pass
        # Back to the default: the other tests' waits must be judged on their own.
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
    if x == 2:
        event = threading.Event()
        threading.Timer(2, event.set).start()
        event.wait()
    if x == 3:
        subprocess.Popen(["sleep", "2"]).wait()
    return x
"#;

#[test]
fn a_sample_deadlocked_in_its_third_test_ends_as_hung_long_before_its_budget() {
    // A 60 s waiting budget: only knowing the job hung can end it sooner.
    let out = three_tests(DEADLOCK, budgets(30.0, 60.0));
    assert_eq!(out.status, Status::Timeout, "{}", out.reason);
    assert_eq!(
        out.reason,
        "test test_c hung for good: every thread of the job waited, with no timeout, on another"
    );
    assert_eq!(results(&out), ENDED_IN_THE_THIRD);
}

#[test]
fn waits_something_in_the_job_ends_are_not_called_hung() {
    // Each test waits about 2 s with no timeout, against a waiting budget of 20 s.
    let out = three_tests(WAKES_UP, budgets(30.0, 20.0));
    assert_eq!(out.status, Status::Pass, "{}", out.reason);
    assert!(out.tests.iter().all(|t| t.seconds > 1.9), "{:?}", out.tests);
}

#[test]
fn a_job_on_the_hosts_network_is_never_called_hung() {
    // A peer on the network could end its waits: only its budget ends it.
    let mut config = common::config();
    config.network = true;
    let online = run(assay_sandbox::Engine::start(config)).expect("engine");
    let mut j = job(DEADLOCK, THREE_TESTS);
    j.limits = Some(common::limits(60));
    j.test_budgets = budgets(30.0, 3.0);
    let out = run(online.run_unittest(j));
    assert_eq!(out.status, Status::Timeout, "{}", out.reason);
    assert_eq!(
        out.reason,
        "test test_c waited, computing nothing, past its budget of 3 s"
    );
}
