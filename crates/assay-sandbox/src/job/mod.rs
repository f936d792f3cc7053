//! Unittest, script and command jobs: one confined process each, from spec to verdict. What
//! the kinds share lives here (the specs of the first two, a job process taken and driven to
//! its end); how each reads its frames into a verdict is its own file.

mod command;
mod script;
mod unittest;

pub use command::{CommandJob, Connections};
pub use unittest::{Provisional, Unsettled};

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::collect::{self, Budget};
use crate::config::{IsolationMode, Limits};
use crate::drive::{finish, run_until, settle, Aftermath, End, Read, Streams};
use crate::engine::Inner;
use crate::meter::CpuMeter;
use crate::outcome::{OutputFile, ScriptOutcome};
use crate::protocol::job::{Control, Event, FileData, JobBase, Rlimits};
use crate::sandbox::{Sandbox, Workspace};
use crate::timing::{LaterLimits, Timing};
use assay_records::IsolationLevel;
use assay_records::{Status, TestBudget};

/// Source code and its `unittest` tests, run together in one module, as BigCodeBench does.
#[derive(Debug, Clone)]
pub struct UnittestJob {
    /// The code under test.
    pub code: String,
    /// Its tests: the source of a `unittest.TestCase` subclass.
    pub test: String,
    /// The `unittest.TestCase` subclass to run. Default `TestCases`.
    pub test_class: String,
    /// Budgets of single test methods, by name: a test that computes past its CPU budget, or
    /// waits computing nothing past its waiting budget, ends the job as a timeout naming it,
    /// long before the job's own wall limit. Tests without one have only the job's limit.
    pub test_budgets: BTreeMap<String, TestBudget>,
    /// `None`: the engine's default limits.
    pub limits: Option<Limits>,
    /// How long the job is expected to take, in seconds (0, the default: unknown), and
    /// whom to tell when it starts. Jobs waiting for the engine start longest expected
    /// first, so that a caller handing over many at once has the slowest start first instead
    /// of ending its run alone.
    pub start: Start,
    /// Time limits that come once the job has started (`None`: the ones above are final):
    /// the job starts under the wall limit and budgets above, and these replace them when
    /// they arrive, as if known from the start (see [`crate::TimeLimits`]).
    pub later_limits: Option<LaterLimits>,
    /// Extra environment variables.
    pub env: BTreeMap<String, String>,
    /// The official harness's process guards (`os.kill` limited to the job's own children,
    /// commands mentioning `kill` skipped, `exec` ignored...; see `official_guards.py`): on by
    /// default, because some official verdicts depend on them.
    pub guards: bool,
    /// Files placed in the job's working directory before it starts (what a check reads).
    pub files: Vec<InputFile>,
    /// Empty directories made in the working directory before it starts (relative, plain).
    pub dirs: Vec<String>,
}

impl UnittestJob {
    /// `code` against `test`'s `TestCases`, with the engine's limits and the official guards.
    pub fn new(code: impl Into<String>, test: impl Into<String>) -> Self {
        UnittestJob {
            code: code.into(),
            test: test.into(),
            test_class: "TestCases".into(),
            test_budgets: BTreeMap::new(),
            limits: None,
            start: Start::default(),
            later_limits: None,
            env: BTreeMap::new(),
            guards: true,
            files: Vec::new(),
            dirs: Vec::new(),
        }
    }
}

/// When a job starts: how long it is expected to take, and whom to tell once it has its
/// slot.
#[derive(Debug, Clone, Default)]
pub struct Start {
    /// Seconds (0: unknown): jobs waiting start longest expected first.
    pub expected_seconds: f64,
    /// Sent `id` when the job starts (has its slot and its process).
    pub signal: Option<(mpsc::UnboundedSender<u64>, u64)>,
}

/// A file placed in a job's working directory before it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFile {
    /// Relative to the working directory; plain components only (no `..`, no leading `/`).
    pub path: String,
    /// Its content.
    pub data: Vec<u8>,
}

/// Code run as `__main__` in a working directory, like `python main.py ARGS`.
#[derive(Debug, Clone)]
pub struct ScriptJob {
    /// The script.
    pub code: String,
    /// Its arguments (`sys.argv[1:]`).
    pub argv: Vec<String>,
    /// Files placed in the working directory first.
    pub files: Vec<InputFile>,
    /// The working directory's name inside the workspace. Default `work`.
    pub workdir: String,
    /// `None`: the engine's default limits.
    pub limits: Option<Limits>,
    /// Extra environment variables.
    pub env: BTreeMap<String, String>,
    /// Read back the files left in the working directory. Default `true`.
    pub collect_files: bool,
    /// What the script reads on its standard input. `None` (the default): `/dev/null`.
    pub stdin: Option<String>,
}

impl ScriptJob {
    /// `code` in a working directory `work`, with the engine's limits.
    pub fn new(code: impl Into<String>) -> Self {
        ScriptJob {
            code: code.into(),
            argv: Vec::new(),
            files: Vec::new(),
            workdir: "work".into(),
            limits: None,
            env: BTreeMap::new(),
            collect_files: true,
            stdin: None,
        }
    }
}

/// The rlimits a job process applies to itself before its code runs.
pub(crate) fn rlimits(limits: &Limits, sandbox: &Sandbox, cpu: bool) -> Rlimits {
    let cgroup = sandbox.cgroup.is_some();
    Rlimits {
        cpu_seconds: cpu.then(|| limits.cpu().as_secs_f64().ceil() as u64),
        file_size_bytes: limits.file_size_bytes,
        open_files: limits.open_files,
        // Without a cgroup, RLIMIT_NPROC is the process cap; it counts per user namespace, so
        // it is only per-job when the job has its own.
        processes: (!cgroup && sandbox.layers.user_ns).then_some(limits.processes),
        data_bytes: (!cgroup).then_some(limits.memory_bytes),
        stack_bytes: limits.stack_bytes,
    }
}

/// Where a job's directories are, as the job sees them.
pub(crate) struct Layout {
    pub cwd: String,
    pub home: String,
    pub tmp: String,
}

pub(crate) fn layout(sandbox: &Sandbox, workdir: &str) -> Layout {
    let root = sandbox.workspace.job_path();
    let tmp = if sandbox.layers.private_tmp {
        root.clone()
    } else {
        root.join("tmp")
    };
    Layout {
        cwd: root.join(workdir).display().to_string(),
        home: root.join("home").display().to_string(),
        tmp: tmp.display().to_string(),
    }
}

fn infra<T>(reason: String, make: impl FnOnce(Status, String) -> T) -> T {
    make(Status::Infra, reason)
}

/// `tmp` + 8 characters, like the directory `tempfile.TemporaryDirectory()` gives the official
/// harness's jobs.
fn temp_name(id: u64) -> String {
    let seed = format!("{id}-{:?}", std::time::SystemTime::now());
    format!("tmp{}", &blake3::hash(seed.as_bytes()).to_hex()[..8])
}

impl Inner {
    /// A ready job process that meets the isolation the engine insists on, with its cgroup
    /// limits set.
    pub(crate) async fn sandbox_for(&self, limits: &Limits) -> Result<Sandbox, String> {
        let mut sandbox = self.take_sandbox().await?;
        let level = sandbox.layers.level();
        if self.config.isolation == IsolationMode::Strict && level < IsolationLevel::Full {
            return Err(format!(
                "strict isolation was requested but the job process only reached `{level:?}`"
            ));
        }
        if let Some(cgroup) = sandbox.cgroup.as_mut() {
            cgroup
                .start(limits.memory_bytes, limits.processes, limits.cpus)
                .map_err(|e| format!("setting the job's cgroup limits: {e}"))?;
        }
        Ok(sandbox)
    }
}

/// What one job process's run produced, for the job kind to turn into its outcome.
struct Ran {
    end: End,
    /// The job said untrusted code was about to run: from then on, the results pipe may carry
    /// what the code wrote, and no failure is the harness's.
    started: bool,
    aftermath: Aftermath,
    streams: Streams,
    wall: Duration,
    isolation: IsolationLevel,
    workspace: Arc<Workspace>,
}

impl Inner {
    /// What every job kind starts from: its directories, environment and rlimits. `cpu`:
    /// whether the CPU limit covers the whole job (not for sessions, whose cells each get
    /// their own).
    pub(crate) fn job_base(
        &self,
        sandbox: &Sandbox,
        workdir: &str,
        env: &BTreeMap<String, String>,
        limits: &Limits,
        cpu: bool,
    ) -> JobBase {
        let dirs = layout(sandbox, workdir);
        JobBase {
            env: self.job_env(Path::new(&dirs.home), Path::new(&dirs.tmp), env),
            cwd: dirs.cwd,
            make_dirs: vec![dirs.home, dirs.tmp],
            limits: rlimits(limits, sandbox, cpu),
            conditions: self.config.conditions,
        }
    }

    /// Takes a slot (in the order `start` says, and tells it) and a ready job process,
    /// sends it the job `job` makes of its base and workspace, and reads until `on_frame`
    /// says a frame is the one awaited, the job ends, its time (`timing`) is up, or `stop`
    /// says why the caller wants it ended.
    #[allow(clippy::too_many_arguments)]
    async fn run_job(
        &self,
        workdir: Option<&str>,
        env: &BTreeMap<String, String>,
        limits: &Limits,
        timing: &mut Timing,
        start: &Start,
        mut job: impl FnMut(JobBase, &Workspace) -> Result<Control, String>,
        on_frame: impl FnMut(&Event, &CpuMeter) -> Read,
        stop: impl Future<Output = String>,
    ) -> Result<Ran, String> {
        let mut slot = self.slot(start.expected_seconds).await;
        if let Some((tx, id)) = &start.signal {
            let _ = tx.send(*id);
        }
        // A ready process can die while it waits (the kernel's OOM killer picks job processes
        // first): if it can't take the job, the job hasn't started; try one fresh process.
        let mut attempts = 0;
        let (mut sandbox, started) = loop {
            attempts += 1;
            let mut sandbox = self.sandbox_for(limits).await?;
            let workdir = workdir.map_or_else(|| temp_name(sandbox.workspace.id), str::to_string);
            let spec = job(
                self.job_base(&sandbox, &workdir, env, limits, true),
                &sandbox.workspace,
            )?;
            let started = Instant::now();
            match sandbox.send(&spec).await {
                Ok(()) => break (sandbox, started),
                Err(e) if attempts >= 2 => {
                    return Err(format!("no job process could take the job: {e}"))
                }
                Err(e) => tracing::warn!("a ready job process could not take its job: {e}"),
            }
        };
        let mut streams = Streams::new(limits.output_bytes);
        let meter = sandbox.cpu_meter();
        let run = run_until(&mut sandbox, &mut streams, started, timing, on_frame);
        tracing::debug!("job started");
        let end = tokio::select! {
            end = run => end,
            never = slot.follow(&meter) => match never {},
            reason = stop => End::Stopped(reason),
        };
        drop(slot);
        tracing::debug!(wall = ?started.elapsed(), end = end.label(), "job ended");
        let code_started = sandbox.results.code_started();
        let isolation = sandbox.layers.level();
        let workspace = sandbox.workspace.clone();
        let aftermath = match &end {
            End::Final(last) => settle(sandbox, &mut streams, last),
            _ => finish(&mut sandbox, &mut streams).await,
        };
        Ok(Ran {
            end,
            started: code_started,
            aftermath,
            streams,
            wall: started.elapsed(),
            isolation,
            workspace,
        })
    }
}

impl Ran {
    /// A script's or command's `outcome` completed with what the run read: the files left in
    /// `workdir` (when `collect` and the harness did not fail; `kind` names the job in a
    /// warning), its output, usage and isolation.
    async fn complete(
        mut self,
        mut outcome: ScriptOutcome,
        collect: bool,
        workdir: String,
        kind: &'static str,
    ) -> ScriptOutcome {
        if collect && outcome.status != Status::Infra {
            outcome.files = collect_workdir(self.workspace.host_path(), workdir, kind).await;
        }
        outcome.stdout = self.streams.out.take();
        outcome.stderr = self.streams.err.take();
        outcome.usage = self.aftermath.usage(self.wall);
        outcome.isolation = self.isolation;
        outcome
    }
}

/// The files left in `workdir` of the workspace at `root` (none, with a warning naming the
/// `kind` of job, if they cannot be read).
async fn collect_workdir(root: PathBuf, workdir: String, kind: &'static str) -> Vec<OutputFile> {
    let collected =
        tokio::task::spawn_blocking(move || collect::collect(&root, &workdir, Budget::default()))
            .await;
    match collected {
        Ok(Ok(files)) => files,
        Ok(Err(e)) => {
            tracing::warn!("collecting the {kind}'s files: {e}");
            Vec::new()
        }
        Err(e) => {
            tracing::warn!("collecting the {kind}'s files: {e}");
            Vec::new()
        }
    }
}

pub(crate) fn encode_files(files: &[crate::InputFile]) -> Vec<FileData> {
    let engine = base64::engine::general_purpose::STANDARD;
    files
        .iter()
        .map(|f| FileData {
            path: f.path.clone(),
            data: engine.encode(&f.data),
        })
        .collect()
}
