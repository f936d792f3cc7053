//! `cargo bench -p assay-sandbox`: the engine against the usual approach, a fresh `python3`
//! process per job, in one run, on this machine.
//!
//! Cases: a trivial unittest job, a pandas + matplotlib unittest job, and a session cell round
//! trip; plus what preforking buys and, when the `bigcodebench` environment is installed, the
//! same jobs on its much heavier worker. Prints medians and ratios, and the issue's targets
//! (trivial job ≤ 5 ms, pandas + matplotlib ≥ 10× faster, session round trip ≤ 2 ms).
//!
//! `ASSAY_BENCH_QUICK=1` runs fewer repetitions.

// A test starts its own processes as it needs (assay's own children are made by
// `assay_pyenv::child_env`, which the workspace's clippy rule enforces).
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use assay_pyenv::{EnvStatus, Environment, Interpreter, Profile, SilentObserver};
use assay_sandbox::{
    Conditions, Engine, EngineConfig, IsolationMode, ListingOrder, SessionSpec, Status, UnittestJob,
};

const TRIVIAL_CODE: &str = "def task_func(x):\n    return x * 2\n";
const TRIVIAL_TEST: &str = "import unittest\n\nclass TestCases(unittest.TestCase):\n    def test_double(self):\n        self.assertEqual(task_func(2), 4)\n";

const PLOT_CODE: &str = r#"
import pandas as pd
import matplotlib.pyplot as plt

def task_func(rows):
    df = pd.DataFrame(rows, columns=["day", "sales"])
    summary = df.groupby("day")["sales"].sum()
    ax = summary.plot(kind="bar", title="Sales by day")
    return summary, ax
"#;
const PLOT_TEST: &str = r#"
import unittest
import matplotlib.pyplot as plt

class TestCases(unittest.TestCase):
    def tearDown(self):
        plt.close("all")

    def test_totals(self):
        summary, _ = task_func([("mon", 3), ("tue", 4), ("mon", 5)])
        self.assertEqual(summary["mon"], 8)

    def test_title(self):
        _, ax = task_func([("mon", 1)])
        self.assertEqual(ax.get_title(), "Sales by day")
"#;

/// Lists a directory of 1,000 files 20 times, the ways code does: what the listing order costs.
const LISTING_CODE: &str = r#"
import glob, os

def task_func(n):
    os.makedirs("many", exist_ok=True)
    for i in range(n):
        open(os.path.join("many", f"file{i}.txt"), "w").close()
    seen = 0
    for _ in range(10):
        seen += len(os.listdir("many")) + len(glob.glob("many/*.txt"))
    return seen
"#;
const LISTING_TEST: &str = "import unittest\n\nclass TestCases(unittest.TestCase):\n    def test_listed(self):\n        self.assertEqual(task_func(1000), 20000)\n";

/// The usual approach: a fresh interpreter runs code + tests with unittest.
const FRESH_RUNNER: &str = r#"
import sys, types, unittest
code, test = open(sys.argv[1]).read(), open(sys.argv[2]).read()
module = types.ModuleType("__test__")
exec(compile(code + "\n" + test, "__test__.py", "exec"), module.__dict__)
result = unittest.TestResult()
unittest.TestLoader().loadTestsFromTestCase(module.TestCases).run(result)
sys.exit(0 if result.wasSuccessful() else 1)
"#;

fn quick() -> bool {
    std::env::var_os("ASSAY_BENCH_QUICK").is_some()
}

fn reps(full: usize) -> usize {
    if quick() {
        (full / 5).max(3)
    } else {
        full
    }
}

struct Stats {
    median: Duration,
    p90: Duration,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Stats {
        median: at(0.5),
        p90: at(0.9),
    }
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else if ms >= 10.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{ms:.2} ms")
    }
}

fn environment(name: &str, set_up: bool) -> Option<PathBuf> {
    let profile = Profile::by_name(name).ok()?;
    let env = Environment::locate(profile, Interpreter::discover(None).ok()?).ok()?;
    match env.status() {
        EnvStatus::Complete(_) => Some(env.python()),
        _ if set_up => env.ensure(&SilentObserver).ok().map(|_| env.python()),
        _ => None,
    }
}

/// A fresh `python` per job, `n` times; every run must succeed.
fn fresh_jobs(python: &Path, code: &str, test: &str, n: usize) -> Stats {
    let dir = std::env::temp_dir().join(format!("assay-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (runner, code_file, test_file) =
        (dir.join("run.py"), dir.join("code.py"), dir.join("test.py"));
    std::fs::write(&runner, FRESH_RUNNER).unwrap();
    std::fs::write(&code_file, code).unwrap();
    std::fs::write(&test_file, test).unwrap();
    let samples = (0..n)
        .map(|_| {
            let started = Instant::now();
            let status = Command::new(python)
                .arg(&runner)
                .arg(&code_file)
                .arg(&test_file)
                .env("MPLBACKEND", "Agg")
                .current_dir(&dir)
                .status()
                .expect("run python");
            assert!(status.success(), "the fresh-process baseline failed");
            started.elapsed()
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    stats(samples)
}

fn fresh_cells(python: &Path, n: usize) -> Stats {
    stats(
        (0..n)
            .map(|_| {
                let started = Instant::now();
                let out = Command::new(python)
                    .args(["-c", "print(1 + 1)"])
                    .output()
                    .unwrap();
                assert!(out.status.success());
                started.elapsed()
            })
            .collect(),
    )
}

async fn engine_jobs(engine: &Engine, code: &str, test: &str, n: usize) -> Stats {
    // One warm-up job: the first use of some lazily imported modules.
    let warm = engine.run_unittest(UnittestJob::new(code, test)).await;
    assert_eq!(warm.status, Status::Pass, "{}", warm.reason);
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let out = engine.run_unittest(UnittestJob::new(code, test)).await;
        samples.push(started.elapsed());
        assert_eq!(out.status, Status::Pass, "{}", out.reason);
        // Let the prefork pool refill, as it does between jobs under a steady load.
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    stats(samples)
}

async fn session_cells(engine: &Engine, n: usize) -> Stats {
    let session = engine.open_session(SessionSpec::default()).await.unwrap();
    session.exec("x = 0").await;
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let out = session.exec("x += 1\nx").await;
        samples.push(started.elapsed());
        assert_eq!(out.status, Status::Pass);
    }
    session.close().await;
    stats(samples)
}

fn rss_mib(pid: i32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

async fn start(python: &Path, profile: &str, prefork: usize) -> Engine {
    start_under(python, profile, prefork, Conditions::default()).await
}

async fn start_under(
    python: &Path,
    profile: &str,
    prefork: usize,
    conditions: Conditions,
) -> Engine {
    let mut config = EngineConfig::new(python);
    config.conditions = conditions;
    config.preload = Profile::by_name(profile).unwrap().preload_modules();
    config.isolation = IsolationMode::Strict;
    config.concurrency = 2;
    config.prefork = prefork;
    let engine = Engine::start(config)
        .await
        .expect("engine starts at full isolation");
    let failed: Vec<_> = engine
        .preload_report()
        .modules
        .iter()
        .filter(|(_, load)| !load.ok)
        .map(|(name, load)| format!("{name}: {:?}", load.error))
        .collect();
    assert!(
        failed.is_empty(),
        "preloading failed, figures would be off: {failed:?}"
    );
    engine
}

fn row(case: &str, fresh: &Stats, ours: &Stats) {
    let ratio = fresh.median.as_secs_f64() / ours.median.as_secs_f64();
    println!(
        "  {case:<34} {:>10} {:>10}   {:>10} {:>10}   {ratio:>6.1}x",
        ms(fresh.median),
        ms(fresh.p90),
        ms(ours.median),
        ms(ours.p90)
    );
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "MISSED"
    }
}

fn main() {
    // `cargo bench` passes --bench; nothing else to parse.
    let python = environment("test", true).expect("the test environment");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let engine = start(&python, "test", 2).await;
        let report = engine.isolation().clone();
        let worker = engine.worker_pid().await.unwrap();
        println!(
            "assay engine bench: isolation {:?} (cgroup: {}, tree kill: {}), {} CPUs, Python {}",
            report.level,
            report.cgroup,
            report.tree_kill,
            std::thread::available_parallelism().map_or(1, |n| n.get()),
            engine.python_version()
        );
        println!(
            "profile `test` (worker {:.0} MiB RSS)\n  {:<34} {:>21}   {:>21}   {:>7}",
            rss_mib(worker),
            "case (median, p90)",
            "fresh python3 per job",
            "assay",
            "ratio"
        );
        let fresh_trivial = fresh_jobs(&python, TRIVIAL_CODE, TRIVIAL_TEST, reps(30));
        let trivial = engine_jobs(&engine, TRIVIAL_CODE, TRIVIAL_TEST, reps(200)).await;
        row("trivial unittest job", &fresh_trivial, &trivial);
        let fresh_plot = fresh_jobs(&python, PLOT_CODE, PLOT_TEST, reps(10));
        let plot = engine_jobs(&engine, PLOT_CODE, PLOT_TEST, reps(40)).await;
        row("pandas + matplotlib unittest job", &fresh_plot, &plot);
        let fresh_cell = fresh_cells(&python, reps(30));
        let cell = session_cells(&engine, reps(500)).await;
        row("session exec round trip", &fresh_cell, &cell);
        drop(engine);

        let cold = start(&python, "test", 0).await;
        let unforked = engine_jobs(&cold, TRIVIAL_CODE, TRIVIAL_TEST, reps(50)).await;
        row("trivial job without prefork", &fresh_trivial, &unforked);
        drop(cold);

        // The listing order: the filesystem's own against the default (hashed), in one job
        // that lists 1,000 files 20 times.
        let mut orders = Vec::new();
        for listing in [ListingOrder::Kernel, ListingOrder::Hashed] {
            let conditions = Conditions {
                listing,
                ..Conditions::default()
            };
            let engine = start_under(&python, "test", 2, conditions).await;
            orders.push(engine_jobs(&engine, LISTING_CODE, LISTING_TEST, reps(20)).await);
        }
        println!(
            "  listing 1,000 files 20 times: kernel order {} (p90 {}), hashed {} (p90 {})",
            ms(orders[0].median),
            ms(orders[0].p90),
            ms(orders[1].median),
            ms(orders[1].p90)
        );

        let plot_ratio = fresh_plot.median.as_secs_f64() / plot.median.as_secs_f64();
        println!("targets (full isolation):");
        println!(
            "  trivial job overhead <= 5 ms: {} ({})",
            ms(trivial.median),
            verdict(trivial.median <= Duration::from_millis(5))
        );
        println!(
            "  pandas + matplotlib job >= 10x faster than a fresh process: {plot_ratio:.1}x ({})",
            verdict(plot_ratio >= 10.0)
        );
        println!(
            "  session exec round trip <= 2 ms: {} ({})",
            ms(cell.median),
            verdict(cell.median <= Duration::from_millis(2))
        );

        if let Some(heavy) = environment("bigcodebench", false) {
            let started = Instant::now();
            let engine = start(&heavy, "bigcodebench", 2).await;
            let boot = started.elapsed();
            let worker = engine.worker_pid().await.unwrap();
            println!(
                "profile `bigcodebench` (worker {:.0} MiB RSS, started in {})",
                rss_mib(worker),
                ms(boot)
            );
            let fresh = fresh_jobs(&heavy, PLOT_CODE, PLOT_TEST, reps(10));
            let ours = engine_jobs(&engine, PLOT_CODE, PLOT_TEST, reps(40)).await;
            row("pandas + matplotlib unittest job", &fresh, &ours);
            let trivial = engine_jobs(&engine, TRIVIAL_CODE, TRIVIAL_TEST, reps(100)).await;
            row("trivial unittest job", &fresh_trivial, &trivial);
            drop(engine);
            let cold = start(&heavy, "bigcodebench", 0).await;
            let unforked = engine_jobs(&cold, TRIVIAL_CODE, TRIVIAL_TEST, reps(30)).await;
            row("trivial job without prefork", &fresh_trivial, &unforked);
        } else {
            println!(
                "(the bigcodebench environment is not installed: `assay env setup` adds that row)"
            );
        }
    });
}
