//! Persistent interpreter sessions: what an agent drives turn after turn.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::process::Signal;
use tokio::time::Instant;

use crate::collect::{self, is_plain_name, is_plain_relative, Budget};
use crate::config::Limits;
use crate::drive::{ending, finish, run_until, End, Ending, Streams};
use crate::engine::{Engine, Inner};
use crate::job::{encode_files, InputFile};
use crate::meter::CpuMeter;
use crate::outcome::{ExecOutcome, OutputFile, PyError};
use crate::protocol::job::{Control, Event, ExecDone};
use crate::sandbox::{Sandbox, Signaller, Workspace};
use crate::timing::Timing;
use crate::Error;
use assay_records::Captured;
use assay_records::IsolationLevel;
use assay_records::Status;

/// After a cell's time limit, how long the interrupt (KeyboardInterrupt) may take to land
/// before the session is killed.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);
/// How long a cell's code may take to enter the control pipe (a session that stopped reading
/// it is stuck).
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// A folder of a session's working directory, as read back.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// Its files, sorted by path.
    pub files: Vec<OutputFile>,
    /// Its folders, empty ones too, sorted.
    pub dirs: Vec<String>,
}

/// How to open a [`Session`].
#[derive(Debug, Clone)]
pub struct SessionSpec {
    /// Files placed in the working directory before the first cell.
    pub files: Vec<InputFile>,
    /// Empty directories made in the working directory before the first cell (relative,
    /// plain).
    pub dirs: Vec<String>,
    /// The working directory's name inside the workspace. Default `work`.
    pub workdir: String,
    /// Extra environment variables.
    pub env: BTreeMap<String, String>,
    /// `wall` and `cpu` apply to each cell; the rest to the session's process tree.
    /// `None`: the engine's default limits.
    pub limits: Option<Limits>,
}

impl Default for SessionSpec {
    fn default() -> Self {
        SessionSpec {
            files: Vec::new(),
            dirs: Vec::new(),
            workdir: "work".into(),
            env: BTreeMap::new(),
            limits: None,
        }
    }
}

/// A persistent Python interpreter in its own sandbox. Variables and imports live from one
/// [`exec`](Session::exec) to the next; files persist in its workspace across
/// [`restart`](Session::restart)s. Cells run one at a time; [`interrupt`](Session::interrupt)
/// may be called from anywhere while one runs.
pub struct Session {
    engine: Arc<Inner>,
    state: tokio::sync::Mutex<State>,
    signaller: Mutex<Option<Signaller>>,
    /// Set when an `exec` was dropped while its cell ran (see [`CellInFlight`]).
    abandoned: AtomicBool,
    spec: SessionSpec,
    limits: Limits,
}

/// Guards a running cell. If the `exec` future is dropped before the cell's answer, the cell
/// would run on unsupervised, and its output and answer would land in the next cell: the
/// session is killed instead, and the next `exec` says so.
struct CellInFlight<'a> {
    abandoned: &'a AtomicBool,
    signaller: Signaller,
    answered: bool,
}

impl Drop for CellInFlight<'_> {
    fn drop(&mut self) {
        if !self.answered {
            self.signaller.send(Signal::KILL);
            self.abandoned.store(true, Ordering::SeqCst);
        }
    }
}

struct State {
    sandbox: Option<Sandbox>,
    workspace: Arc<Workspace>,
    /// Why the session is not running, when it isn't.
    dead: Option<String>,
    cells: u64,
}

fn exec_outcome(status: Status, reason: String, alive: bool) -> ExecOutcome {
    ExecOutcome {
        status,
        reason,
        result: None,
        error: None,
        output: Captured::default(),
        figures: Vec::new(),
        wall: Duration::ZERO,
        session_alive: alive,
        isolation: IsolationLevel::Minimal,
    }
}

impl Engine {
    /// Opens a session: a confined interpreter waiting for its first cell.
    pub async fn open_session(&self, spec: SessionSpec) -> Result<Session, Error> {
        if !is_plain_name(&spec.workdir) {
            return Err(Error::InvalidJob(format!(
                "workdir {:?} must be one plain name",
                spec.workdir
            )));
        }
        let paths = spec.files.iter().map(|f| &f.path).chain(&spec.dirs);
        if let Some(bad) = paths.into_iter().find(|p| !is_plain_relative(p)) {
            return Err(Error::InvalidJob(format!(
                "path {bad:?} must be relative and plain"
            )));
        }
        let inner = self.inner.clone();
        let limits = spec
            .limits
            .clone()
            .unwrap_or_else(|| inner.config.limits.clone());
        let mut sandbox = inner.sandbox_for(&limits).await.map_err(Error::Sandbox)?;
        start(&inner, &mut sandbox, &spec, &limits, &spec.files)
            .await
            .map_err(Error::Sandbox)?;
        let session = Session {
            abandoned: AtomicBool::new(false),
            signaller: Mutex::new(Some(sandbox.signaller())),
            state: tokio::sync::Mutex::new(State {
                workspace: sandbox.workspace.clone(),
                sandbox: Some(sandbox),
                dead: None,
                cells: 0,
            }),
            engine: inner,
            spec,
            limits,
        };
        Ok(session)
    }
}

/// Sends the session spec that turns a fresh job process into a session.
async fn start(
    inner: &Inner,
    sandbox: &mut Sandbox,
    spec: &SessionSpec,
    limits: &Limits,
    files: &[InputFile],
) -> Result<(), String> {
    let control = Control::Session {
        base: inner.job_base(sandbox, &spec.workdir, &spec.env, limits, false),
        files: encode_files(files),
        dirs: spec.dirs.clone(),
    };
    sandbox
        .send(&control)
        .await
        .map_err(|e| format!("starting the session: {e}"))
}

impl Session {
    /// Runs one cell with the session's per-cell limits.
    pub async fn exec(&self, code: &str) -> ExecOutcome {
        self.exec_with(code, self.limits.wall, self.limits.cpu())
            .await
    }

    /// Runs one cell with its own wall-clock and CPU-time limits. At the wall limit the cell
    /// is interrupted (KeyboardInterrupt, state kept); if it does not stop within a grace
    /// period, the session is killed and must be restarted.
    pub async fn exec_with(&self, code: &str, wall: Duration, cpu: Duration) -> ExecOutcome {
        let mut guard = self.state.lock().await;
        let state = &mut *guard;
        // A cell computes: it holds one of the engine's CPU slots while it runs, and only
        // then (an agent waiting on its model holds none).
        let _slot = self.engine.slot(0.0).await;
        if self.abandoned.swap(false, Ordering::SeqCst) {
            if let Some(mut sandbox) = state.sandbox.take() {
                sandbox.kill();
            }
            state.dead =
                Some("an earlier exec was cancelled while its cell ran, so it was killed".into());
            *self.signaller.lock().expect("poisoned") = None;
        }
        let Some(sandbox) = state.sandbox.as_mut() else {
            let why = state.dead.clone().unwrap_or_else(|| "it was closed".into());
            return exec_outcome(
                Status::Error,
                format!("the session is not running ({why}); restart it"),
                false,
            );
        };
        state.cells += 1;
        let id = state.cells;
        let isolation = sandbox.layers.level();
        let request = Control::Exec {
            id,
            code: code.to_string(),
            cpu_seconds: cpu.as_secs_f64().ceil() as u64,
        };
        let started = Instant::now();
        let mut streams = Streams::new(self.limits.output_bytes);
        sandbox.results.reset_budget();
        // The answer to this cell (`expect` admits no other cell's), or the harness's own
        // failure report (the session ends).
        let matches = |frame: &Event, _: &CpuMeter| {
            matches!(frame, Event::ExecDone(_) | Event::InternalError { .. })
        };
        let mut in_flight = CellInFlight {
            abandoned: &self.abandoned,
            signaller: sandbox.signaller(),
            answered: false,
        };
        let mut end = match tokio::time::timeout(SEND_TIMEOUT, sandbox.send(&request)).await {
            Ok(Ok(())) => {
                run_until(
                    sandbox,
                    &mut streams,
                    started,
                    &mut Timing::fixed(wall),
                    matches,
                )
                .await
            }
            Ok(Err(e)) => End::Garbled(format!("sending the cell: {e}")),
            Err(_) => End::Garbled(format!(
                "the session did not take the cell within {} s",
                SEND_TIMEOUT.as_secs()
            )),
        };
        let mut interrupted = false;
        if matches!(end, End::Deadline) {
            interrupted = true;
            sandbox.signaller().send(Signal::INT);
            end = run_until(
                sandbox,
                &mut streams,
                Instant::now(),
                &mut Timing::fixed(INTERRUPT_GRACE),
                matches,
            )
            .await;
        }
        let timeout_reason = || {
            format!(
                "the cell's time limit of {} s was reached",
                wall.as_secs_f64()
            )
        };
        in_flight.answered = true;
        let end = match end {
            End::Final(Event::ExecDone(answer)) => {
                streams.drain_now(sandbox);
                let mut outcome = cell_answer(answer);
                if interrupted {
                    outcome.status = Status::Timeout;
                    outcome.reason = format!("{}; it was interrupted", timeout_reason());
                }
                outcome.output = merged(&mut streams);
                outcome.wall = started.elapsed();
                outcome.isolation = isolation;
                return outcome;
            }
            End::Final(Event::InternalError { error, .. }) => {
                End::Garbled(format!("the session's runtime failed: {error}"))
            }
            other => other,
        };
        // The session is over: killed for time, or dead on its own.
        let aftermath = finish(sandbox, &mut streams).await;
        let (status, reason) = if interrupted {
            (
                Status::Timeout,
                format!(
                    "{} and the interrupt did not stop it; the session was killed",
                    timeout_reason()
                ),
            )
        } else {
            match ending(&end, &aftermath, &self.limits, true, |_| None::<()>) {
                Ending::Stopped(status, reason) => (status, reason),
                Ending::HarnessFailed(reason) => (Status::Infra, reason),
                Ending::Unreported(cause) => (Status::Error, format!("the session ended: {cause}")),
                // No frame counts as a report here: a cell's answer returned above.
                Ending::Reported(_) => (Status::Error, "the session ended".into()),
            }
        };
        let mut outcome = exec_outcome(status, reason.clone(), false);
        outcome.output = merged(&mut streams);
        outcome.wall = started.elapsed();
        outcome.isolation = isolation;
        state.sandbox = None;
        state.dead = Some(reason);
        *self.signaller.lock().expect("poisoned") = None;
        outcome
    }

    /// Raises KeyboardInterrupt in the running cell (a no-op between cells). Returns whether
    /// the signal was delivered.
    pub fn interrupt(&self) -> bool {
        match self.signaller.lock().expect("poisoned").as_ref() {
            Some(signaller) => signaller.send(Signal::INT),
            None => false,
        }
    }

    /// Replaces the interpreter with a fresh one: all state is lost, files in the workspace
    /// stay (unless the worker itself died, which takes the workspace with it).
    pub async fn restart(&self) -> Result<(), Error> {
        let mut state = self.state.lock().await;
        if let Some(mut old) = state.sandbox.take() {
            old.kill();
        }
        self.abandoned.store(false, Ordering::SeqCst);
        *self.signaller.lock().expect("poisoned") = None;
        let inner = &self.engine;
        let reuse = state.workspace.alive().then(|| state.workspace.clone());
        let fresh = reuse.is_none();
        let mut sandbox = match reuse {
            Some(ws) => inner.spawn_sandbox(Some(ws)).await,
            None => inner.spawn_sandbox(None).await,
        }
        .map_err(Error::Sandbox)?;
        if let Some(cgroup) = sandbox.cgroup.as_mut() {
            cgroup
                .start(
                    self.limits.memory_bytes,
                    self.limits.processes,
                    self.limits.cpus,
                )
                .map_err(|e| Error::Sandbox(format!("setting the session's cgroup limits: {e}")))?;
        }
        // A fresh workspace needs the input files again; a kept one already has them.
        let files: &[InputFile] = if fresh { &self.spec.files } else { &[] };
        start(inner, &mut sandbox, &self.spec, &self.limits, files)
            .await
            .map_err(Error::Sandbox)?;
        *self.signaller.lock().expect("poisoned") = Some(sandbox.signaller());
        state.workspace = sandbox.workspace.clone();
        state.sandbox = Some(sandbox);
        state.dead = None;
        Ok(())
    }

    /// The files now in the session's working directory (64 MiB of content at most).
    pub async fn files(&self) -> Result<Vec<OutputFile>, Error> {
        Ok(self.files_under(None, Budget::default().bytes).await?.files)
    }

    /// What is now under `dir` (relative, plain) of the working directory, or in all of it:
    /// its files (at most `max_bytes` of content in all; a file past that comes back cut) and
    /// its folders, empty ones too; paths relative to the working directory.
    pub async fn files_under(&self, dir: Option<&str>, max_bytes: u64) -> Result<Tree, Error> {
        if let Some(bad) = dir.filter(|d| !is_plain_relative(d)) {
            return Err(Error::InvalidJob(format!(
                "path {bad:?} must be relative and plain"
            )));
        }
        let root = self.state.lock().await.workspace.host_path();
        let workdir = self.spec.workdir.clone();
        let prefix = dir.map(|d| format!("{d}/")).unwrap_or_default();
        let sub = match dir {
            Some(d) => format!("{workdir}/{d}"),
            None => workdir,
        };
        let budget = Budget {
            bytes: max_bytes,
            ..Budget::default()
        };
        let tree = tokio::task::spawn_blocking(move || collect::collect_tree(&root, &sub, budget))
            .await
            .map_err(|e| Error::Sandbox(e.to_string()))?;
        match tree {
            Ok((mut files, dirs)) => {
                for file in &mut files {
                    file.path = format!("{prefix}{}", file.path);
                }
                let dirs = dirs.into_iter().map(|d| format!("{prefix}{d}")).collect();
                Ok(Tree { files, dirs })
            }
            Err(e) => Err(Error::Sandbox(format!("reading the session's files: {e}"))),
        }
    }

    /// Whether an interpreter is running (false after it died, until a restart).
    pub async fn is_alive(&self) -> bool {
        self.state.lock().await.sandbox.is_some()
    }

    /// Ends the session and frees its workspace.
    pub async fn close(self) {
        let mut state = self.state.lock().await;
        if let Some(sandbox) = state.sandbox.as_mut() {
            let close = Control::Close {};
            let _ = tokio::time::timeout(Duration::from_secs(1), sandbox.send(&close)).await;
            sandbox.kill();
        }
        state.sandbox = None;
    }
}

/// The cell's output. The session writes both streams to its stdout pipe; the stderr pipe can
/// only hold what the process wrote before it merged them, which goes last.
fn merged(streams: &mut Streams) -> Captured {
    let mut output = streams.out.take();
    let early = streams.err.take();
    if early.total_bytes > 0 {
        output.text.push_str(&early.text);
        output.total_bytes += early.total_bytes;
        output.truncated |= early.truncated;
    }
    output
}

fn cell_answer(answer: ExecDone) -> ExecOutcome {
    use base64::Engine as _;
    let engine = base64::engine::general_purpose::STANDARD;
    let error: Option<PyError> = answer.error.map(Into::into);
    let (status, reason) = match &error {
        None => (Status::Pass, "the cell ran".to_string()),
        Some(e) if e.name == "MemoryError" => (Status::Oom, "MemoryError".to_string()),
        Some(e) if e.name == "CpuBudgetExceeded" => (
            Status::Timeout,
            "the cell's CPU-time limit was reached".to_string(),
        ),
        Some(e) => (Status::Error, format!("{}: {}", e.name, e.message)),
    };
    let mut outcome = exec_outcome(status, reason, true);
    outcome.result = answer.result;
    outcome.error = error;
    outcome.figures = answer
        .figures
        .iter()
        .filter_map(|f| engine.decode(f).ok())
        .collect();
    if let Some(why) = answer.figure_error {
        tracing::warn!("a cell's figures were cut: {why}");
    }
    outcome
}
