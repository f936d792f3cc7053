//! The hostile suite: code that attacks the harness. Every attack is bounded (short limits, a
//! small memory and process cap, a small workspace) so that a broken sandbox cannot take the
//! machine down, and every attack asserts that:
//!
//! * the verdict is never `pass`;
//! * the engine keeps serving jobs (a correct solution passes right after);
//! * nothing it started survives (no process carrying its marker exists afterwards) and it
//!   left no file on the host;
//! * the secret in the supervisor's environment appears nowhere in what came back.

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use assay_sandbox::{Engine, Limits, Status, UnittestJob, UnittestOutcome};
use common::{marker, name_process, processes_with, run, until_running, DOUBLE, TRIVIAL_TEST};

const SECRET: &str = "sk-assay-hostile-suite-7f3a9c21e4";

/// One engine for the whole suite, started with an API key in the supervisor's environment.
fn engine() -> Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            // Set while every other test thread waits on this initializer, so nothing reads
            // the environment concurrently.
            std::env::set_var("OPENAI_API_KEY", SECRET);
            let mut config = common::config();
            config.limits = limits();
            config.workspace_mib = 64;
            config.shm_mib = 16;
            common::runtime()
                .block_on(Engine::start(config))
                .expect("engine starts")
        })
        .clone()
}

fn limits() -> Limits {
    Limits {
        wall: Duration::from_secs(4),
        cpu: Some(Duration::from_secs(4)),
        memory_bytes: 384 << 20,
        processes: 64,
        cpus: 1.0,
        output_bytes: 64 << 10,
        file_size_bytes: 32 << 20,
        open_files: 256,
        stack_bytes: None,
    }
}

/// A directory on the host the attacks must not reach: it stands for the harness's run
/// directory, with tests and ground truth in it.
fn host_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("assay-hostile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("groundtruth_tests.py"),
            format!("GROUND_TRUTH = 'canonical-solution-marker'\nKEY = '{SECRET}'\n"),
        )
        .unwrap();
        dir
    })
}

/// Host places an attack might have written to.
fn host_files_with(marker: &str) -> Vec<PathBuf> {
    [
        std::env::temp_dir(),
        host_dir().to_path_buf(),
        PathBuf::from("/etc"),
        PathBuf::from("/usr"),
    ]
    .iter()
    .filter_map(|dir| std::fs::read_dir(dir).ok())
    .flat_map(|entries| entries.flatten())
    .map(|e| e.path())
    .filter(|p| p.to_string_lossy().contains(marker))
    .collect()
}

/// Python helper: how many processes the job can see with `name` as their name.
const RUNNING: &str = r#"
def running(name):
    import os
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            count += open(f"/proc/{pid}/comm").read().strip() == name
        except OSError:
            pass
    return count
"#;

/// Runs an attack and checks everything every attack must satisfy. `{MARK}` in the code is
/// replaced by a marker unique to this attack (15 characters at most: a process name).
fn attack(name: &str, code: &str, test: &str, limits: Option<Limits>) -> UnittestOutcome {
    let engine = engine();
    let mark = marker("amk");
    let code = code
        .replace("{MARK}", &mark)
        .replace("{HOST_DIR}", &host_dir().display().to_string());
    let mut job = UnittestJob::new(code, test);
    job.limits = limits;
    // The sandbox must hold on its own: the official guards would stop some attacks (a
    // `setsid` child, `kill` commands) before they reach it.
    job.guards = false;
    let outcome = run(engine.run_unittest(job));
    assert_ne!(
        outcome.status,
        Status::Pass,
        "{name}: a hostile job passed: {}",
        outcome.reason
    );
    let everything = serde_json::to_string(&outcome).unwrap();
    assert!(
        !everything.contains(SECRET),
        "{name}: the secret leaked into the outcome"
    );
    assert!(
        !everything.contains("canonical-solution-marker"),
        "{name}: the ground truth leaked into the outcome"
    );
    // The verdict comes as soon as the job reports; the kernel finishes tearing its PID
    // namespace down a few milliseconds later. Give it a moment, bounded: a survivor stays for
    // good, and 30 s is thousands of times a teardown, even on a loaded machine.
    let mut leaked = processes_with(&mark);
    for _ in 0..1500 {
        if leaked.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        leaked = processes_with(&mark);
    }
    assert!(leaked.is_empty(), "{name}: processes survived: {leaked:?}");
    let files = host_files_with(&mark);
    assert!(
        files.is_empty(),
        "{name}: files left on the host: {files:?}"
    );
    let sane = run(engine.run_unittest(UnittestJob::new(DOUBLE, TRIVIAL_TEST)));
    assert_eq!(
        sane.status,
        Status::Pass,
        "{name}: the engine stopped serving: {}",
        sane.reason
    );
    outcome
}

fn attack_code(name: &str, code: &str) -> UnittestOutcome {
    attack(name, code, TRIVIAL_TEST, None)
}

#[test]
fn infinite_loop() {
    let out = attack_code(
        "infinite loop",
        "def task_func(x):\n    while True:\n        pass\n",
    );
    assert_eq!(out.status, Status::Timeout);
}

#[test]
fn busy_threads() {
    let code = r#"
import threading
def spin():
    while True:
        pass
def task_func(x):
    for _ in range(16):
        threading.Thread(target=spin, daemon=True).start()
    spin()
"#;
    assert_eq!(attack_code("busy threads", code).status, Status::Timeout);
}

#[test]
fn memory_bomb() {
    let code = "def task_func(x):\n    hog = []\n    while True:\n        hog.append(bytearray(8 << 20))\n";
    assert_eq!(attack_code("memory bomb", code).status, Status::Oom);
}

#[test]
fn bounded_fork_bomb() {
    let code = r#"
import ctypes, os, time
def task_func(x):
    for _ in range(10_000):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            ctypes.CDLL(None).prctl(15, b"{MARK}", 0, 0, 0)
            time.sleep(1000)
            os._exit(0)
    time.sleep(0.5)
    print(running("{MARK}"), "forks running")
    return -1
"#;
    let code = format!("{RUNNING}{code}");
    let out = attack_code("fork bomb", &code);
    let forks: usize = out
        .stdout
        .text
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        forks > 10 && forks < 64,
        "the process cap stops the bomb: {}",
        out.stdout.text
    );
    assert!(
        matches!(out.status, Status::Fail | Status::Timeout),
        "{}",
        out.reason
    );
}

/// Runs `task_func` whose body `spawn` starts one process named `{MARK}` meant to outlive the
/// job; checks it really ran (the job counts it) and, through `attack`, that it died.
fn escapee_attack(name: &str, imports: &str, spawn: &str) {
    let code = format!(
        "{RUNNING}import time\n{imports}\ndef task_func(x):\n{spawn}    time.sleep(0.5)\n    \
         print(running(\"{{MARK}}\"), \"escapees running\")\n    return -1\n"
    );
    let out = attack_code(name, &code);
    assert_eq!(out.status, Status::Fail);
    assert!(
        out.stdout.text.contains("1 escapees running"),
        "{}",
        out.stdout.text
    );
}

#[test]
fn setsid_escapee() {
    let spawn = r#"    subprocess.Popen(
        [sys.executable, "-c",
         "import ctypes, time; ctypes.CDLL(None).prctl(15, b'{MARK}', 0, 0, 0); time.sleep(1000)"],
        start_new_session=True)
"#;
    escapee_attack("setsid escapee", "import subprocess, sys", spawn);
}

#[test]
fn double_fork_escapee() {
    let spawn = r#"    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            ctypes.CDLL(None).prctl(15, b"{MARK}", 0, 0, 0)
            time.sleep(1000)
        os._exit(0)
"#;
    escapee_attack("double fork", "import ctypes, os", spawn);
}

#[test]
fn stdout_flood() {
    let code = "import sys\ndef task_func(x):\n    while True:\n        sys.__stdout__.write('flood ' * 1000)\n";
    let out = attack_code("stdout flood", code);
    assert_eq!(out.status, Status::Timeout);
    assert!(out.stdout.truncated && out.stdout.text.len() == 64 << 10);
}

#[test]
fn one_huge_line() {
    let code = "import sys\ndef task_func(x):\n    sys.__stdout__.write('x' * (100 << 20))\n    sys.__stdout__.flush()\n    return -1\n";
    let out = attack_code("huge line", code);
    assert!(out.stdout.truncated && out.stdout.text.len() == 64 << 10);
    assert!(out.stdout.total_bytes >= 100 << 20 || out.status != Status::Fail);
}

#[test]
fn disk_fill() {
    let code = r#"
import os
def task_func(x):
    chunk = b"\0" * (1 << 20)
    for place in ("/tmp", ".", "/dev/shm"):
        try:
            for i in range(10_000):
                with open(f"{place}/fill-{MARK}-{i}", "wb") as f:
                    for _ in range(4):
                        f.write(chunk)
        except OSError as e:
            print(place, "stopped:", e.strerror)
    return -1
"#;
    let out = attack_code("disk fill", code);
    assert_eq!(out.status, Status::Fail);
    assert!(
        out.stdout.text.contains("No space left on device"),
        "{}",
        out.stdout.text
    );
}

#[test]
fn writing_outside_the_workspace() {
    let code = r#"
import os, sys
def task_func(x):
    targets = ["/etc/{MARK}", "/usr/{MARK}", "{HOST_DIR}/{MARK}",
               os.path.join(sys.prefix, "{MARK}"), "/{MARK}", "/proc/sys/kernel/{MARK}"]
    for t in targets:
        try:
            open(t, "w").write("owned")
            print("WROTE", t)
        except OSError as e:
            print("refused", t, e.strerror)
    return -1
"#;
    let out = attack_code("write outside", code);
    assert!(!out.stdout.text.contains("WROTE"), "{}", out.stdout.text);
}

#[test]
fn reading_an_api_key_from_the_environment() {
    let code = r#"
import glob, os
def task_func(x):
    print(dict(os.environ))
    for path in glob.glob("/proc/*/environ"):
        try:
            print(path, open(path, "rb").read())
        except OSError as e:
            print(path, e)
    return -1
"#;
    let out = attack_code("read secret", code);
    assert!(
        !out.stdout.text.contains("OPENAI_API_KEY"),
        "{}",
        out.stdout.text
    );
}

#[test]
fn reading_the_tests_from_disk() {
    let code = r#"
import os
def task_func(x):
    try:
        print(open("{HOST_DIR}/groundtruth_tests.py").read())
    except OSError as e:
        print("direct read refused:", e.strerror)
    for root, dirs, files in os.walk("/"):
        dirs[:] = [d for d in dirs if root != "/" or d not in ("proc", "sys", "dev")]
        for name in files:
            if "groundtruth" in name:
                print(open(os.path.join(root, name)).read())
    return -1
"#;
    let out = attack_code("read tests", code);
    assert!(
        out.stdout.text.contains("direct read refused"),
        "{}",
        out.stdout.text
    );
}

#[test]
fn connecting_to_a_loopback_listener() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let code = format!(
        r#"
import socket
def task_func(x):
    for host in ("127.0.0.1", "localhost", "1.1.1.1", "example.com"):
        try:
            socket.create_connection((host, {port}), timeout=1)
            print("CONNECTED", host)
        except OSError as e:
            print("refused", host, e)
    return -1
"#
    );
    let out = attack_code("loopback", &code);
    assert!(
        !out.stdout.text.contains("CONNECTED"),
        "{}",
        out.stdout.text
    );
    assert!(
        listener.accept().is_err(),
        "the listener accepted a connection from the sandbox"
    );
}

#[test]
fn killing_the_parent() {
    let code = r#"
import os, signal
def task_func(x):
    for target in [os.getppid(), 1, -1, 0] + list(range(2, 3000)):
        try:
            os.kill(target, signal.SIGKILL)
        except OSError:
            pass
    return -1
"#;
    let out = attack_code("kill parent", code);
    assert_ne!(out.status, Status::Infra, "{}", out.reason);
}

#[test]
fn ignoring_sigterm() {
    let code = r#"
import signal, time
def task_func(x):
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1):
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
    while True:
        time.sleep(0.1)
"#;
    assert_eq!(attack_code("ignore sigterm", code).status, Status::Timeout);
}

#[test]
fn faking_a_pass_by_patching_unittest() {
    let code = r#"
import unittest
unittest.TestCase.assertEqual = lambda self, *args, **kwargs: None
def task_func(x):
    return -1
"#;
    let out = attack_code("patch unittest", code);
    assert_eq!(out.status, Status::Fail);
    assert!(out.reason.contains("tampered"), "{}", out.reason);
}

#[test]
fn faking_a_pass_by_patching_the_result_class() {
    let code = r#"
import unittest
unittest.TestResult.wasSuccessful = lambda self: True
unittest.TestResult.addFailure = lambda self, test, err: None
def task_func(x):
    return -1
"#;
    assert_eq!(attack_code("patch result", code).status, Status::Fail);
}

#[test]
fn faking_a_pass_with_os_exit_at_import() {
    let out = attack_code("os._exit(0) at import", "import os\nos._exit(0)\n");
    assert_eq!(out.status, Status::Error);
}

#[test]
fn faking_a_pass_with_os_exit_in_a_test() {
    let code = "import os\ndef task_func(x):\n    os._exit(0)\n";
    let out = attack_code("os._exit(0) in test", code);
    assert_eq!(out.status, Status::Fail);
}

#[test]
fn faking_a_pass_with_sys_exit() {
    let out = attack_code("sys.exit(0)", "import sys\nsys.exit(0)\n");
    assert_eq!(out.status, Status::Error);
}

#[test]
fn closing_every_output_descriptor() {
    // Even a correct solution can't pass if it destroys the channel its verdict travels on:
    // the verdict is unknown, never assumed.
    let code = "import os, sys\nos.closerange(1, 1024)\nsys.stdout = None\n".to_string() + DOUBLE;
    let out = attack_code("close stdout", &code);
    assert!(
        matches!(out.status, Status::Error | Status::Fail),
        "{}",
        out.reason
    );
}

#[test]
fn printing_a_fake_report_on_stdout() {
    let code = r#"
import os, json, struct, sys
fake = json.dumps({"ev": "tests_done", "tests_run": 2, "failures": [],
                   "errors": [], "aborted": None, "integrity": [],
                   "rusage": {"utime": 0.0, "stime": 0.0, "maxrss_kib": 0}}).encode()
os.write(1, struct.pack("<I", len(fake)) + fake)
print("..\nRan 2 tests in 0.001s\n\nOK")
def task_func(x):
    return -1
"#;
    assert_eq!(attack_code("fake stdout report", code).status, Status::Fail);
}

#[test]
fn forging_a_summary_on_the_results_descriptor() {
    let code = r#"
import os, json, struct
def task_func(x):
    fake = json.dumps({"ev": "tests_done", "tests_run": 2, "failures": [],
                       "errors": [], "aborted": None, "integrity": [],
                       "rusage": {"utime": 0.0, "stime": 0.0, "maxrss_kib": 0}}).encode()
    for fd in range(3, 64):
        try:
            os.write(fd, struct.pack("<I", len(fake)) + fake)
        except OSError:
            pass
    os._exit(0)
"#;
    let out = attack_code("forged summary", code);
    assert_eq!(out.status, Status::Fail, "{}", out.reason);
}

#[test]
fn forging_a_summary_that_ran_no_tests() {
    let code = r#"
import os, json, struct
def task_func(x):
    fake = json.dumps({"ev": "tests_done", "tests_run": 0, "failures": [],
                       "errors": [], "aborted": None, "integrity": [],
                       "rusage": {"utime": 0.0, "stime": 0.0, "maxrss_kib": 0}}).encode()
    os.write(4, struct.pack("<I", len(fake)) + fake)
    os._exit(0)
"#;
    let out = attack_code("forged empty summary", code);
    assert_eq!(out.status, Status::Fail, "{}", out.reason);
}

#[test]
fn silencing_the_running_result_object() {
    let code = r#"
import sys
def task_func(x):
    frame = sys._getframe()
    while frame is not None:
        for value in frame.f_locals.values():
            if hasattr(value, "addFailure") and hasattr(value, "testsRun"):
                value.addFailure = value.addError = lambda *a, **k: None
        frame = frame.f_back
    return -1
"#;
    assert_eq!(attack_code("silenced result", code).status, Status::Fail);
}

#[test]
fn stopping_the_run_before_the_failing_tests() {
    let code = r#"
import sys
def task_func(x):
    frame = sys._getframe()
    while frame is not None:
        for value in frame.f_locals.values():
            if hasattr(value, "shouldStop"):
                value.shouldStop = True
        frame = frame.f_back
    return x * 2 if x == 0 else -1
"#;
    assert_eq!(attack_code("shouldStop", code).status, Status::Fail);
}

#[test]
fn claiming_a_harness_failure() {
    let code = r#"
import os, json, struct
def task_func(x):
    fake = json.dumps({"ev": "internal_error", "stage": "prepare", "error": "not me"}).encode()
    os.write(4, struct.pack("<I", len(fake)) + fake)
    os._exit(0)
"#;
    let out = attack_code("fake infra", code);
    assert_ne!(out.status, Status::Infra, "{}", out.reason);
}

/// Frames the protocol refuses, written by the code once it runs: each ends the job as
/// something the code did (never `infra`, which would take the sample out of the score, and
/// never a pass), and the reason names what arrived.
#[test]
fn frames_the_protocol_refuses_are_the_codes_doing() {
    let cases = [
        // Not JSON.
        ("garbage", "b'{{{'"),
        // An event no job sends.
        ("unknown event", r#"json.dumps({"ev": "victory"}).encode()"#),
        // A real event with a field renamed.
        (
            "renamed field",
            r#"json.dumps({"ev": "test", "name": "test_x", "result": "pass", "detail": "",
                           "seconds": 0.0}).encode()"#,
        ),
        // A real event at a point it may not come: `started` again.
        (
            "second started",
            r#"json.dumps({"ev": "started"}).encode()"#,
        ),
    ];
    for (label, frame) in cases {
        // Written at import (before `loaded`) and from inside a test (after it).
        for at_import in [true, false] {
            let write = "os.write(4, struct.pack('<I', len(f)) + f)";
            let code = if at_import {
                format!("import os, json, struct\nf = {frame}\n{write}\n{DOUBLE}")
            } else {
                format!(
                    "import os, json, struct\ndef task_func(x):\n    f = {frame}\n    {write}\n    return x * 2\n"
                )
            };
            let out = attack_code(label, &code);
            assert!(
                matches!(out.status, Status::Fail | Status::Error),
                "{label} (at import: {at_import}): {:?} {}",
                out.status,
                out.reason
            );
            assert!(
                out.reason.contains("what arrived"),
                "{label} (at import: {at_import}): {}",
                out.reason
            );
        }
    }
}

#[test]
fn a_busy_neighbour_cannot_starve_a_job() {
    let engine = engine();
    // What keeps the hog's 48 processes to one CPU is the job's cgroup CPU quota. Without
    // cgroups (not root) the engine has no such quota, and rlimits have no equivalent (they
    // bound each process's CPU time, not a tree's share of the machine): the property does not
    // hold there, so this fails rather than passing without having checked anything.
    common::require_cgroup_per_job(&engine, "(a busy neighbour can starve a job)");
    // The hog spins 48 processes for HOG seconds; the victim, started once they all spin,
    // needs one or two seconds of CPU (two tests of 25M additions). With the quota and the
    // equal share it gets a CPU and finishes while the hog still spins, even on a loaded
    // machine (a third of a CPU would do); without, it gets 2/49 of the machine and finishes,
    // if at all, after the hog has stopped. Compared: when the victim finished and when the
    // hog stopped, not how long either took.
    const HOG: u64 = 12;
    let mark = marker("hog");
    let name = name_process(&mark);
    // The children wait (blocked, not spinning) until all 48 exist, then learn when to stop
    // and name themselves: forking under a one-CPU quota is slow, and HOG counts from then.
    let hog = format!(
        r#"
import os, time
def task_func(x):
    wake, go = os.pipe()
    for _ in range(48):
        if os.fork() == 0:
            os.setsid()  # each its own session: its own autogroup, where the kernel has them
            end = float(os.read(wake, 32))
            {name}
            while time.time() < end:
                pass
            os._exit(0)
    end = time.time() + {HOG}
    os.write(go, b"%31.6f\n" % end * 48)  # 48 records of 32 bytes, one write
    print("hog ends", repr(end), flush=True)
    time.sleep(max(0.0, end - time.time()))
    return -1
"#
    );
    let victim = r#"
import time
def task_func(x):
    total = 0
    for i in range(25_000_000):
        total += i
    print("victim done", repr(time.time()), flush=True)
    return x * 2
"#;
    let (hog_out, victim_out) = run(async {
        let hog_engine = engine.clone();
        // One test: one round of spinning.
        let once = "import unittest\nclass TestCases(unittest.TestCase):\n    def test_hog(self):\n        self.assertEqual(task_func(1), 2)\n";
        let mut hog_job = UnittestJob::new(hog, once);
        hog_job.limits = Some(Limits {
            wall: Duration::from_secs(HOG + 4),
            ..limits()
        });
        let mut hog_run = tokio::spawn(async move { hog_engine.run_unittest(hog_job).await });
        until_running(&mark, 48, &mut hog_run).await;
        let mut victim_job = UnittestJob::new(victim, TRIVIAL_TEST);
        victim_job.limits = Some(Limits {
            wall: Duration::from_secs(HOG + 8),
            cpu: Some(Duration::from_secs(HOG)),
            ..limits()
        });
        let victim_out = engine.run_unittest(victim_job).await;
        (hog_run.await.unwrap(), victim_out)
    });
    assert_ne!(hog_out.status, Status::Pass);
    assert_eq!(victim_out.status, Status::Pass, "{}", victim_out.reason);
    let last = |out: &UnittestOutcome, label: &str| -> f64 {
        out.stdout
            .text
            .lines()
            .filter_map(|l| l.strip_prefix(label)?.trim().parse().ok())
            .next_back()
            .unwrap_or_else(|| panic!("no `{label}` in {:?}", out.stdout.text))
    };
    let (done, hog_end) = (last(&victim_out, "victim done"), last(&hog_out, "hog ends"));
    assert!(
        done < hog_end,
        "the victim finished at {done}, {:.1} s after the hog stopped: it was starved",
        done - hog_end
    );
}

#[test]
fn segfault_via_ctypes() {
    let code = "import ctypes\ndef task_func(x):\n    ctypes.string_at(0)\n";
    let out = attack_code("segfault", code);
    assert_eq!(out.status, Status::Fail);
    assert!(out.reason.contains("SIGSEGV"), "{}", out.reason);
}

#[test]
fn recursion_bomb() {
    let code = "import sys\nsys.setrecursionlimit(10**8)\ndef task_func(x):\n    return task_func(x + 1)\n";
    let out = attack_code("recursion bomb", code);
    // Python 3.11 keeps Python frames on the heap: the bomb ends in a crash, the memory limit
    // or, when MemoryError leaves a traceback millions of frames deep to format, the clock.
    assert!(
        matches!(out.status, Status::Fail | Status::Oom | Status::Timeout),
        "{}",
        out.reason
    );
}

#[test]
fn escaping_through_kernel_interfaces() {
    let code = r#"
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def task_func(x):
    attempts = {
        "ptrace": lambda: libc.ptrace(16, 1, 0, 0),
        "unshare_user": lambda: libc.unshare(0x10000000),
        "mount": lambda: libc.mount(b"none", b"/tmp", b"tmpfs", 0, None),
        "setns": lambda: libc.setns(os.open("/proc/self/ns/net", os.O_RDONLY), 0),
        "chroot": lambda: libc.chroot(b"/tmp"),
    }
    for name, attempt in attempts.items():
        print(name, "ALLOWED" if attempt() == 0 else "refused")
    for path in ("/proc/1/mem", "/dev/mem", "/sys/kernel/security"):
        try:
            open(path, "rb").read(1)
            print(path, "READ")
        except OSError as e:
            print(path, "refused")
    return -1
"#;
    let out = attack_code("kernel interfaces", code);
    assert!(!out.stdout.text.contains("ALLOWED"), "{}", out.stdout.text);
    assert!(!out.stdout.text.contains("READ"), "{}", out.stdout.text);
}

#[test]
fn exhausting_file_descriptors() {
    let code = r#"
def task_func(x):
    held = []
    try:
        while True:
            held.append(open("/dev/null"))
    except OSError as e:
        print("stopped at", len(held), e.strerror)
    return -1
"#;
    let out = attack_code("fd exhaustion", code);
    assert!(
        out.stdout.text.contains("Too many open files"),
        "{}",
        out.stdout.text
    );
}

#[test]
fn blocking_every_signal_and_sleeping() {
    let code = r#"
import signal, time
def task_func(x):
    signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals) - {signal.SIGKILL, signal.SIGSTOP})
    time.sleep(1000)
"#;
    assert_eq!(attack_code("blocked signals", code).status, Status::Timeout);
}

#[test]
fn a_killed_worker_is_replaced_and_its_jobs_get_a_verdict() {
    // Its own engine: killing the shared one's worker would disturb the other attacks.
    run(async {
        let engine = Engine::start(common::config()).await.expect("engine");
        let pid = engine.worker_pid().await.expect("a running worker");
        // Killed while the job runs: once the job is seen on the host under its marker.
        let mark = marker("kw");
        let slow = format!(
            "import time\ndef task_func(x):\n    {}\n    time.sleep(30)\n",
            name_process(&mark)
        );
        let mut job = tokio::spawn({
            let engine = engine.clone();
            async move {
                engine
                    .run_unittest(UnittestJob::new(slow, TRIVIAL_TEST))
                    .await
            }
        });
        until_running(&mark, 1, &mut job).await;
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid).unwrap(),
            rustix::process::Signal::KILL,
        )
        .unwrap();
        let out = job.await.unwrap();
        assert_eq!(out.status, Status::Infra, "{}", out.reason);
        assert!(out.reason.contains("worker"), "{}", out.reason);
        let after = engine
            .run_unittest(UnittestJob::new(DOUBLE, TRIVIAL_TEST))
            .await;
        assert_eq!(after.status, Status::Pass, "{}", after.reason);
        assert_ne!(engine.worker_pid().await, Some(pid));
    });
}

#[test]
fn workspaces_are_released_after_jobs() {
    run(async {
        let mut config = common::config();
        config.prefork = 1;
        let engine = Engine::start(config).await.expect("engine");
        let writer = "open('/tmp/big', 'wb').write(b'x' * (8 << 20))\n".to_string() + DOUBLE;
        let jobs: Vec<_> = (0..6)
            .map(|_| {
                let engine = engine.clone();
                let code = writer.clone();
                tokio::spawn(async move {
                    engine
                        .run_unittest(UnittestJob::new(code, TRIVIAL_TEST))
                        .await
                })
            })
            .collect();
        for job in jobs {
            assert_eq!(job.await.unwrap().status, Status::Pass);
        }
        let pid = engine.worker_pid().await.unwrap();
        let ws = PathBuf::from(format!("/proc/{pid}/root/ws"));
        let count = || {
            std::fs::read_dir(&ws)
                .unwrap()
                .flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .bytes()
                        .all(|b| b.is_ascii_digit())
                })
                .count()
        };
        // Released asynchronously (in milliseconds); the preforked processes keep one each.
        // Waited for up to 30 s: a leaked workspace stays mounted for good.
        let mut left = count();
        for _ in 0..300 {
            if left <= 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            left = count();
        }
        assert!(left <= 2, "{left} workspaces still mounted");
    });
}
