//! Running untrusted Python fast and safely.
//!
//! assay evaluates code written by models, so everything here treats that code as hostile: it
//! may loop, fork, allocate, flood its output, fill disks, open sockets, kill its parent, read
//! secrets or fake a passing test. None of that may change another job's verdict, the harness's
//! health, or the machine.
//!
//! # How
//!
//! An [`Engine`] starts a *worker*: a Python process (the zygote) that enters its own user,
//! mount, PID, network, IPC and UTS namespaces, swaps its root for a read-only view holding only
//! the system directories, the interpreter and its environment, imports the heavy libraries
//! (numpy, pandas, matplotlib...) once, then forks one process per job. Each job process becomes
//! PID 1 of a fresh PID namespace, gets its own network namespace (loopback only), its own
//! tmpfs as `/tmp`, drops to an unprivileged uid with no capabilities, and installs Landlock and
//! seccomp before its code runs. Killing it takes its whole tree, double-forked or not. Job
//! processes are forked and confined ahead of demand, so a job pays neither the imports nor the
//! fork. Where the kernel lacks a mechanism the engine degrades and says so
//! ([`IsolationReport`]), or refuses ([`IsolationMode::Strict`]).
//!
//! Results travel on a dedicated pipe as framed JSON, never parsed from the job's stdout; the
//! job process checks unittest's integrity before reporting and streams one event per test, so
//! that exiting early or patching the test machinery yields a failure, not a pass.
//!
//! # Jobs
//!
//! * [`Engine::run_unittest`]: code + tests in one module, BigCodeBench's semantics.
//! * [`Engine::run_script`]: code as `__main__` in a working directory, files collected.
//! * [`Engine::open_session`]: a persistent interpreter ([`Session`]) for agents.
//! * [`Engine::run_command`]: a program (a coding agent's CLI) in a working directory, with one
//!   loopback port relayed to a socket its caller serves.
//!
//! ```no_run
//! # async fn demo() -> Result<(), assay_sandbox::Error> {
//! use assay_sandbox::{Engine, EngineConfig, UnittestJob, Status};
//! let mut config = EngineConfig::new("/path/to/venv/bin/python");
//! config.preload = vec!["numpy".into(), "pandas".into()];
//! let engine = Engine::start(config).await?;
//! let code = "def task_func(x):\n    return x * 2\n";
//! let test = "import unittest\nclass TestCases(unittest.TestCase):\n    \
//!             def test_double(self):\n        self.assertEqual(task_func(2), 4)\n";
//! let outcome = engine.run_unittest(UnittestJob::new(code, test)).await;
//! assert_eq!(outcome.status, Status::Pass);
//! # Ok(()) }
//! ```

mod capture;
mod cgroup;
mod collect;
mod config;
mod deadlock;
mod declared;
mod drive;
mod engine;
mod frames;
mod job;
mod meter;
mod outcome;
mod protocol;
mod runtime;
mod sandbox;
mod seccomp;
mod seqpacket;
mod session;
mod slots;
mod timing;
mod worker;

pub use assay_records::{
    Captured, Conditions, Enforcement, IsolationLevel, IsolationReport, Layers, ListingOrder,
    Status, TestBudget, TestOutcome, TestResult,
};
pub use config::{default_processes, EngineConfig, IsolationMode, Limits};
pub use declared::declared_tests;
pub use engine::Engine;
pub use job::{
    CommandJob, Connections, InputFile, Provisional, ScriptJob, Start, UnittestJob, Unsettled,
};
pub use outcome::{ExecOutcome, OutputFile, PyError, ScriptOutcome, UnittestOutcome, Usage};
pub use protocol::zygote::{ModuleLoad, PreloadReport, WarmUp};
pub use session::{Session, SessionSpec, Tree};
pub use timing::{LaterLimits, TimeLimits};

/// Why the engine, or a session, could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The worker could not be started (interpreter missing, import failure...).
    #[error("the sandbox engine could not start: {0}")]
    Start(String),
    /// Strict isolation was requested and this machine cannot provide it.
    #[error("{0}")]
    Isolation(String),
    /// A job process could not be prepared.
    #[error("sandbox: {0}")]
    Sandbox(String),
    /// The request itself is malformed.
    #[error("invalid job: {0}")]
    InvalidJob(String),
}
