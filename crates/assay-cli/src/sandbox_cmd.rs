//! `assay sandbox ...`: the execution engine from the command line: check what isolation this
//! machine gives, run a script, run code against its unittest tests.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use assay_sandbox::{
    Enforcement, Engine, InputFile, IsolationLevel, Layers, Limits, ScriptJob, SessionSpec, Status,
    UnittestJob,
};
use clap::{Args, Subcommand};

use crate::args::{heading, EngineArgs};

#[derive(Subcommand)]
pub enum SandboxCommand {
    /// Check the sandbox: the isolation this machine gives, and a few jobs that must pass.
    ///
    /// The jobs: a unittest job, a pandas and matplotlib job, and an interpreter session.
    Check {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        engine: EngineArgs,
    },
    /// Run a Python script in the sandbox; its exit code becomes assay's.
    Run {
        /// The script to run.
        script: PathBuf,
        /// Arguments for the script, after `--`.
        #[arg(last = true)]
        args: Vec<String>,
        /// A file to place in the working directory (repeatable; its name is kept).
        #[arg(long = "file", value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Copy the files the script leaves in its working directory here.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        #[command(flatten)]
        limits: LimitArgs,
        #[command(flatten)]
        engine: EngineArgs,
    },
    /// Run code against its unittest tests, as BigCodeBench does, and print the verdict.
    Test {
        /// The code under test.
        code: PathBuf,
        /// The tests (a unittest.TestCase subclass).
        tests: PathBuf,
        /// The test class to run.
        #[arg(long, default_value = "TestCases")]
        class: String,
        /// Print the full outcome as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        limits: LimitArgs,
        #[command(flatten)]
        engine: EngineArgs,
    },
}

#[derive(Args, Clone)]
#[command(next_help_heading = heading::LIMITS)]
pub struct LimitArgs {
    /// Wall-clock limit in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub timeout: f64,
    /// Memory limit in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 4096)]
    pub memory: u64,
}

impl LimitArgs {
    fn limits(&self) -> Result<Limits> {
        let wall = Duration::try_from_secs_f64(self.timeout)
            .ok()
            .filter(|d| !d.is_zero())
            .context("--timeout must be a positive number of seconds")?;
        Ok(Limits {
            wall,
            memory_bytes: self.memory << 20,
            ..Limits::default()
        })
    }
}

/// Starts an engine on the chosen profile, setting the environment up first if it isn't.
async fn start_engine(args: &EngineArgs) -> Result<Engine> {
    let env = args.environment().await?;
    Ok(assay_pipeline::engine::start(&env, &args.settings(), &[]).await?)
}

pub async fn run(cmd: SandboxCommand) -> Result<i32> {
    match cmd {
        SandboxCommand::Check { engine, json } => check(&engine, json).await,
        SandboxCommand::Run {
            script,
            args,
            files,
            out,
            engine,
            limits,
        } => run_script(&script, args, &files, out, &engine, &limits).await,
        SandboxCommand::Test {
            code,
            tests,
            class,
            json,
            engine,
            limits,
        } => run_test(&code, &tests, class, json, &engine, &limits).await,
    }
}

fn read(path: &PathBuf) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

async fn check(args: &EngineArgs, json: bool) -> Result<i32> {
    let engine = start_engine(args).await?;
    let double = "def task_func(x):\n    return x * 2\n";
    let double_test = "import unittest\nclass TestCases(unittest.TestCase):\n    def test_double(self):\n        self.assertEqual(task_func(21), 42)\n";
    let plot = "import pandas as pd\nimport matplotlib.pyplot as plt\ndef task_func():\n    return pd.Series([1, 2, 3]).plot(title='t')\n";
    let plot_test = "import unittest\nclass TestCases(unittest.TestCase):\n    def test_title(self):\n        self.assertEqual(task_func().get_title(), 't')\n";
    let mut checks = Vec::new();
    for (name, code, test) in [
        ("unittest job", double, double_test),
        ("pandas + matplotlib job", plot, plot_test),
    ] {
        let out = engine.run_unittest(UnittestJob::new(code, test)).await;
        checks.push((name, out.status, out.reason, out.usage.wall));
    }
    // Sessions run their cells in IPython, which only some profiles pin.
    let profile = assay_pyenv::Profile::by_name(&args.select.profile)?;
    if profile.pins_package("ipython") {
        let session = engine.open_session(SessionSpec::default()).await?;
        session.exec("x = 40").await;
        let cell = session.exec("x + 2").await;
        let ok = cell.result.as_deref() == Some("42");
        checks.push((
            "session",
            if ok { Status::Pass } else { cell.status },
            cell.reason,
            cell.wall,
        ));
        session.close().await;
    } else if !json {
        println!(
            "(no session check: sessions run in IPython, which profile `{}` does not have)",
            profile.name
        );
    }
    let passed = checks.iter().all(|c| c.1 == Status::Pass);
    if json {
        let doc = serde_json::json!({
            "isolation": engine.isolation(),
            "python": engine.python_version(),
            "preload": engine.preload_report(),
            "checks": checks.iter().map(|(name, status, reason, wall)| serde_json::json!({
                "name": name, "status": status, "reason": reason, "seconds": wall.as_secs_f64(),
            })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        let report = engine.isolation();
        println!("isolation: {}", level_word(report.level));
        let (have, lack) = layers(&report.layers);
        println!("  layers: {}", have.join(", "));
        if !lack.is_empty() {
            println!("  missing: {}", lack.join(", "));
        }
        println!(
            "  limits: memory by {} ({}); a job's whole process tree is killed via {}",
            enforcement_word(report.memory_limit),
            report.cgroup,
            report.tree_kill
        );
        let modules = engine
            .preload_report()
            .modules
            .iter()
            .map(|(name, load)| match (load.ok, load.missing) {
                (true, _) => name.clone(),
                (_, Some(true)) => format!("{name} (not installed)"),
                _ => format!("{name} (FAILED: {})", load.error.as_deref().unwrap_or("?")),
            })
            .collect::<Vec<_>>()
            .join(", ");
        println!("python {}; preloaded: {modules}", engine.python_version());
        for (name, status, reason, wall) in &checks {
            println!(
                "  {name:<24} {status:<7} {:>7.1} ms  {reason}",
                wall.as_secs_f64() * 1000.0
            );
        }
    }
    Ok(if passed { 0 } else { 1 })
}

/// The isolation level as the JSON report words it.
fn level_word(level: IsolationLevel) -> &'static str {
    match level {
        IsolationLevel::Full => "full",
        IsolationLevel::Partial => "partial",
        IsolationLevel::Minimal => "minimal",
    }
}

/// How memory is limited, as the JSON report words it.
fn enforcement_word(enforcement: Enforcement) -> &'static str {
    match enforcement {
        Enforcement::Cgroup => "cgroup",
        Enforcement::Rlimit => "rlimit",
    }
}

/// The confinement layers a job has, and those it lacks, in words.
fn layers(layers: &Layers) -> (Vec<String>, Vec<String>) {
    let landlock = match layers.landlock_abi {
        0 => "Landlock".to_string(),
        abi => format!("Landlock (ABI {abi})"),
    };
    let all = [
        ("user namespace", layers.user_ns),
        ("mount namespace", layers.mount_ns),
        ("PID namespace", layers.pid_ns),
        ("IPC namespace", layers.ipc_ns),
        (
            if layers.network {
                "network (allowed)"
            } else {
                "network namespace (no network)"
            },
            layers.net_ns || layers.network,
        ),
        ("private /tmp", layers.private_tmp),
        ("private /dev/shm", layers.private_shm),
        ("unprivileged uid", layers.unprivileged),
        ("no_new_privs", layers.no_new_privs),
        (landlock.as_str(), layers.landlock_abi > 0),
        ("seccomp", layers.seccomp),
    ];
    let (have, lack): (Vec<_>, Vec<_>) = all.into_iter().partition(|(_, on)| *on);
    let names = |list: Vec<(&str, bool)>| list.into_iter().map(|(n, _)| n.to_string()).collect();
    (names(have), names(lack))
}

async fn run_script(
    script: &PathBuf,
    args: Vec<String>,
    files: &[PathBuf],
    out: Option<PathBuf>,
    engine_args: &EngineArgs,
    limits: &LimitArgs,
) -> Result<i32> {
    let mut job = ScriptJob::new(read(script)?);
    job.argv = args;
    job.limits = Some(limits.limits()?);
    for path in files {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .with_context(|| format!("{}: not a file name", path.display()))?;
        let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        job.files.push(InputFile {
            path: name.to_string(),
            data,
        });
    }
    let engine = start_engine(engine_args).await?;
    let outcome = engine.run_script(job).await;
    print!("{}", outcome.stdout.text);
    eprint!("{}", outcome.stderr.text);
    for (stream, captured) in [("stdout", &outcome.stdout), ("stderr", &outcome.stderr)] {
        if captured.truncated {
            eprintln!(
                "assay: {stream} cut at {} of {} bytes",
                captured.text.len(),
                captured.total_bytes
            );
        }
    }
    if let Some(dir) = out {
        for file in &outcome.files {
            let target = dir.join(&file.path);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            std::fs::write(&target, &file.data)
                .with_context(|| format!("writing {}", target.display()))?;
        }
        eprintln!(
            "assay: {} files written to {}",
            outcome.files.len(),
            dir.display()
        );
    }
    if outcome.status != Status::Pass {
        eprintln!("assay: {}: {}", outcome.status, outcome.reason);
    }
    Ok(match (outcome.status, outcome.exit_code) {
        (Status::Pass, _) => 0,
        (Status::Error, Some(code)) if code != 0 => code,
        _ => 1,
    })
}

async fn run_test(
    code: &PathBuf,
    tests: &PathBuf,
    class: String,
    json: bool,
    engine_args: &EngineArgs,
    limits: &LimitArgs,
) -> Result<i32> {
    let mut job = UnittestJob::new(read(code)?, read(tests)?);
    job.test_class = class;
    job.limits = Some(limits.limits()?);
    let engine = start_engine(engine_args).await?;
    let outcome = engine.run_unittest(job).await;
    if json {
        println!("{}", serde_json::to_string_pretty(&outcome)?);
    } else {
        println!("{}: {}", outcome.status, outcome.reason);
        for test in &outcome.tests {
            println!(
                "  {:<40} {:<8} {:>7.1} ms",
                test.name,
                serde_json::to_value(test.result)?.as_str().unwrap_or("?"),
                test.seconds * 1000.0
            );
        }
        for (name, trace) in outcome.failures.iter().chain(&outcome.errors) {
            println!("\n--- {name}\n{trace}");
        }
        if let Some(error) = &outcome.error {
            println!("\n{}", error.traceback);
        }
    }
    Ok(if outcome.status == Status::Pass { 0 } else { 1 })
}
