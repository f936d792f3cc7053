//! The engine: starts the worker, keeps job processes forked ahead of demand, hands them out.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use assay_pyenv::child_env::{self, Inherit};
use tokio::sync::Notify;
use tokio::task::JoinSet;

use crate::cgroup::Cgroups;
use crate::config::{EngineConfig, IsolationMode};
use crate::protocol::zygote::{Init, Mode, PreloadReport, View};
use crate::sandbox::{Sandbox, Workspace};
use crate::slots::{Slot, Slots};
use crate::worker::{Worker, WorkerParams};
use crate::{runtime, seccomp, Error};
use assay_records::{Conditions, Enforcement, IsolationLevel, IsolationReport};

/// How long a worker may take to import its libraries (the bigcodebench set takes ~10 s).
const WORKER_START_TIMEOUT: Duration = Duration::from_secs(600);
/// The uid and gid sandboxed code runs as when assay runs as root (`nobody`, `nogroup`).
const SANDBOX_ID: u32 = 65534;
/// System directories every job may read.
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
];

/// Runs untrusted Python: unittest jobs, scripts and persistent sessions, each in its own
/// confined process forked from a worker that imported the heavy libraries once.
///
/// Cheap to clone; every clone drives the same workers.
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub config: EngineConfig,
    params: WorkerParams,
    /// The worker processes, each restarted if it dies; jobs go to them in turn.
    workers: Vec<tokio::sync::Mutex<Option<Arc<Worker>>>>,
    /// The next worker's turn.
    turn: AtomicUsize,
    ready: Mutex<VecDeque<Sandbox>>,
    refill: Arc<Notify>,
    slots: Slots,
    ids: AtomicU64,
    pub cgroups: Option<Cgroups>,
    report: OnceLock<IsolationReport>,
    pub preload: PreloadReport,
    pub python_version: String,
    /// Private host directory for degraded-mode workspaces; removed with the engine.
    scratch: PathBuf,
    /// Environment every job starts from (see [`Inner::job_env`]).
    base_env: BTreeMap<String, String>,
}

struct PythonPaths {
    prefix: PathBuf,
    base_prefix: PathBuf,
}

async fn probe_python(python: &Path) -> Result<PythonPaths, Error> {
    let script = "import json, sys; print(json.dumps([sys.prefix, sys.base_prefix]))";
    let mut cmd = tokio::process::Command::from(child_env::command(python, Inherit::Nothing));
    cmd.args(["-I", "-c", script])
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .map_err(|_| Error::Start(format!("{} did not answer within 60 s", python.display())))?
        .map_err(|e| Error::Start(format!("cannot run {}: {e}", python.display())))?;
    if !out.status.success() {
        return Err(Error::Start(format!(
            "{} failed: {}",
            python.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let (prefix, base_prefix): (PathBuf, PathBuf) = serde_json::from_slice(&out.stdout)
        .map_err(|e| Error::Start(format!("unexpected answer from {}: {e}", python.display())))?;
    Ok(PythonPaths {
        prefix,
        base_prefix,
    })
}

/// Whether the unprivileged sandbox uid can reach `path` (every ancestor searchable by others).
fn reachable_by_others(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.ancestors().all(|dir| {
        std::fs::metadata(dir)
            .map(|m| !m.is_dir() || m.permissions().mode() & 0o001 != 0)
            .unwrap_or(true)
    })
}

/// `assay-<pid>-<n>`: names this engine's scratch directory and cgroups, unique even when one
/// process runs several engines.
fn instance_name() -> String {
    static ENGINES: AtomicU64 = AtomicU64::new(0);
    let n = ENGINES.fetch_add(1, Ordering::Relaxed);
    format!("assay-{}-{n}", std::process::id())
}

fn make_scratch(config: &EngineConfig, name: &str) -> Result<PathBuf, Error> {
    use std::os::unix::fs::PermissionsExt;
    let dir = match &config.scratch {
        Some(dir) => dir.join(name),
        None => std::env::temp_dir().join(name),
    };
    std::fs::create_dir_all(&dir)
        .and_then(|_| std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o711)))
        .map_err(|e| Error::Start(format!("{}: {e}", dir.display())))?;
    Ok(dir)
}

/// What jobs may read (read-only) and what is hidden even inside that.
fn view(
    config: &EngineConfig,
    paths: PythonPaths,
    runtime_dir: &Path,
) -> Result<(Vec<PathBuf>, Vec<PathBuf>), Error> {
    let mut readonly: Vec<PathBuf> = SYSTEM_DIRS.iter().map(PathBuf::from).collect();
    readonly.extend([paths.base_prefix, paths.prefix, runtime_dir.to_path_buf()]);
    readonly.extend(config.extra_readonly.iter().cloned());
    // Each job's private /tmp is mounted over the view's /tmp, and /ws, /dev and /proc are
    // the sandbox's own: anything the job must read cannot live there.
    if let Some(hidden) = readonly.iter().find(|p| {
        ["/tmp", "/ws", "/dev", "/proc"]
            .iter()
            .any(|reserved| p.starts_with(reserved))
    }) {
        return Err(Error::Start(format!(
            "{} is under a directory the sandbox replaces with its own (/tmp, /ws, /dev, \
             /proc), so jobs could not see it; keep the interpreter, its environment and \
             assay's cache (ASSAY_CACHE_DIR) elsewhere",
            hidden.display()
        )));
    }
    // Masked where they lie inside a bound tree. One that holds a tree jobs must read (a
    // $HOME with the environment in it) cannot be covered whole, and needs no cover: of it,
    // the view shows only the bound trees.
    let mut masks: Vec<PathBuf> = config
        .hidden
        .iter()
        .filter(|hidden| !readonly.iter().any(|bound| bound.starts_with(hidden)))
        .cloned()
        .collect();
    if let Ok(exe) = std::env::current_exe() {
        masks.push(exe);
    }
    Ok((readonly, masks))
}

/// The environment workers and jobs start from: an allow-list, never the supervisor's own.
fn base_env(python: &Path) -> BTreeMap<String, String> {
    let path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin",
        python.parent().unwrap_or(Path::new("/")).display()
    );
    [
        ("PATH", path.as_str()),
        ("LANG", "C.UTF-8"),
        ("TZ", "UTC"),
        ("MPLBACKEND", "Agg"),
        ("PYTHONDONTWRITEBYTECODE", "1"),
        // A worker must have no thread but its main one when it forks (another thread's
        // locks would stay locked in the child); jobs get one compute thread each.
        ("OMP_NUM_THREADS", "1"),
        ("OPENBLAS_NUM_THREADS", "1"),
        ("MKL_NUM_THREADS", "1"),
        ("NUMEXPR_NUM_THREADS", "1"),
        ("VECLIB_MAXIMUM_THREADS", "1"),
        // pyarrow (which pandas imports) would start jemalloc's background thread.
        ("JE_ARROW_MALLOC_CONF", "background_thread:false"),
        ("TF_CPP_MIN_LOG_LEVEL", "3"),
        ("TF_ENABLE_ONEDNN_OPTS", "0"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

impl Engine {
    /// Starts the worker, learns what isolation this machine gives, and fills the prefork pool.
    ///
    /// It makes the calling process non-dumpable first: below full isolation a job may run as
    /// this process's uid and see its `/proc` entry, whose `environ` and `mem` would otherwise
    /// be readable to it (API keys); non-dumpable, they need `CAP_SYS_PTRACE`, which no job
    /// has. (Core dumps of this process are off from then on.)
    pub async fn start(config: EngineConfig) -> Result<Engine, Error> {
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
            .map_err(|e| Error::Start(format!("making this process non-dumpable: {e}")))?;
        let paths = probe_python(&config.python).await?;
        let runtime_root = match &config.runtime_dir {
            Some(dir) => dir.clone(),
            None => assay_pyenv::cache_root()
                .map_err(|e| Error::Start(e.to_string()))?
                .join("runtime"),
        };
        let runtime_dir = runtime::materialize(&runtime_root)
            .map_err(|e| Error::Start(format!("writing the worker runtime: {e}")))?;

        let (readonly, masks) = view(&config, paths, &runtime_dir)?;
        let root = rustix::process::geteuid().is_root();
        let (job_uid, job_gid) = if root {
            (SANDBOX_ID, SANDBOX_ID)
        } else {
            (
                rustix::process::getuid().as_raw(),
                rustix::process::getgid().as_raw(),
            )
        };
        let name = instance_name();
        let scratch = make_scratch(&config, &name)?;
        let degraded_drop = root && readonly.iter().all(|p| reachable_by_others(p));
        let cgroups = config.cgroups.then(|| Cgroups::detect(&name)).flatten();
        let init = Init {
            namespaces: config.namespaces,
            landlock: config.landlock,
            network: config.network,
            strict: config.isolation == IsolationMode::Strict,
            drop_to: root.then_some([SANDBOX_ID, SANDBOX_ID]),
            degraded_drop,
            job_uid,
            job_gid,
            view: View { readonly, masks },
            preload: config.preload.clone(),
            seccomp: seccomp::programs(),
            workspace_mib: config.workspace_mib,
            shm_mib: config.shm_mib,
            degraded_home: scratch.join("worker-home"),
        };
        let mut base_env = base_env(&config.python);
        // Fixed at interpreter start, so for the worker and every program a job starts alike.
        base_env.insert("PYTHONHASHSEED".into(), config.conditions.seed.to_string());
        let mut worker_env = base_env.clone();
        worker_env.insert("HOME".into(), "/".into());
        base_env.extend(config.env.clone());
        let params = WorkerParams {
            python: config.python.clone(),
            runtime_dir,
            env: worker_env.into_iter().collect(),
            init,
            start_timeout: WORKER_START_TIMEOUT,
        };
        if degraded_drop {
            std::os::unix::fs::chown(&scratch, Some(SANDBOX_ID), Some(SANDBOX_ID))
                .map_err(|e| Error::Start(format!("{}: {e}", scratch.display())))?;
        }
        let worker = Worker::start(&params).await.map_err(Error::Start)?;
        for (module, load) in &worker.ready.preload.modules {
            if load.failed() {
                let error = load.error.as_deref().unwrap_or("(no reason given)");
                tracing::warn!("preloading {module} failed: {error}");
            }
        }
        let namespaced = worker.ready.mode == Mode::Namespaced;
        let cgroup_kind = cgroups.as_ref().map_or("none", |c| c.kind()).to_string();
        let tree_kill = if namespaced {
            "pid-namespace"
        } else if cgroups.is_some() {
            "cgroup"
        } else {
            "process-group"
        };
        let memory_limit = if cgroups.is_some() {
            Enforcement::Cgroup
        } else {
            Enforcement::Rlimit
        };
        let concurrency = config.concurrency.max(1);
        let engine = Engine {
            inner: Arc::new(Inner {
                preload: worker.ready.preload.clone(),
                python_version: worker.ready.python.clone(),
                params,
                workers: std::iter::once(Some(worker))
                    .chain(std::iter::repeat_with(|| None))
                    .take(config.workers.max(1))
                    .map(tokio::sync::Mutex::new)
                    .collect(),
                turn: AtomicUsize::new(0),
                ready: Mutex::new(VecDeque::new()),
                refill: Arc::new(Notify::new()),
                slots: Slots::new(concurrency, config.max_running),
                ids: AtomicU64::new(1),
                cgroups,
                report: OnceLock::new(),
                scratch,
                base_env,
                config,
            }),
        };
        // The first job process tells us what confinement jobs really get.
        let probe = engine
            .inner
            .spawn_sandbox(None)
            .await
            .map_err(Error::Start)?;
        let layers = probe.layers.clone();
        let level = layers.level();
        if engine.inner.config.isolation == IsolationMode::Strict && level < IsolationLevel::Full {
            return Err(Error::Isolation(format!(
                "strict isolation was requested but this machine only reaches `{level:?}` \
                 (layers: {layers:?})"
            )));
        }
        let report = IsolationReport {
            level,
            layers,
            cgroup: cgroup_kind,
            memory_limit,
            tree_kill: tree_kill.into(),
        };
        engine.inner.report.set(report).expect("set once");
        engine
            .inner
            .ready
            .lock()
            .expect("poisoned")
            .push_back(probe);
        tokio::spawn(refill_loop(
            Arc::downgrade(&engine.inner),
            engine.inner.refill.clone(),
        ));
        engine.inner.refill.notify_one();
        Ok(engine)
    }

    /// What this machine gives: the isolation level and layers, and how limits are enforced.
    pub fn isolation(&self) -> &IsolationReport {
        self.inner.report.get().expect("set during start")
    }

    /// What the worker preloaded: each module's import (done, not installed, or failed), and
    /// each library warmed after import.
    pub fn preload_report(&self) -> &PreloadReport {
        &self.inner.preload
    }

    /// The host pid of the current worker (zygote), if one is running: for diagnostics, and
    /// for tests that kill it.
    pub async fn worker_pid(&self) -> Option<i32> {
        let worker = self.inner.workers[0].lock().await;
        worker.as_ref().filter(|w| w.is_alive()).map(|w| w.host_pid)
    }

    /// The sandbox's Python version (`3.11.7`).
    pub fn python_version(&self) -> &str {
        &self.inner.python_version
    }

    /// The conditions every job of this engine runs under.
    pub fn conditions(&self) -> Conditions {
        self.inner.config.conditions
    }

    /// Its CPU slots: jobs computing at once.
    pub fn concurrency(&self) -> usize {
        self.inner.config.concurrency.max(1)
    }

    /// Jobs running at once at most, counting those that lent their slot: what a caller that
    /// feeds the engine a few jobs at a time (an evaluation) sizes its feed by, so that no
    /// place waits for work.
    pub fn max_running(&self) -> usize {
        self.inner.config.max_running.max(self.concurrency())
    }

    /// Jobs running now: what a service's metrics report.
    pub fn jobs_running(&self) -> usize {
        self.inner.slots.running()
    }
}

impl Inner {
    pub(crate) fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// The live worker, restarting it if it died.
    pub(crate) async fn worker(&self) -> Result<Arc<Worker>, String> {
        let turn = self.turn.fetch_add(1, Ordering::Relaxed) % self.workers.len();
        let mut current = self.workers[turn].lock().await;
        if let Some(worker) = current.as_ref() {
            if worker.is_alive() {
                return Ok(worker.clone());
            }
            tracing::warn!("the worker died; starting a new one");
        }
        *current = None;
        let worker = Worker::start(&self.params).await?;
        *current = Some(worker.clone());
        Ok(worker)
    }

    /// A fresh job process with its own new workspace (or `workspace`, reused).
    pub(crate) async fn spawn_sandbox(
        &self,
        workspace: Option<Arc<Workspace>>,
    ) -> Result<Sandbox, String> {
        // A workspace kept from an earlier job lives in its worker (a tmpfs of its mount
        // namespace): the new job is forked there.
        let worker = match &workspace {
            Some(ws) => ws.worker().clone(),
            None => self.worker().await?,
        };
        let id = self.next_id();
        let workspace = match workspace {
            Some(ws) => ws,
            None => Arc::new(self.new_workspace(id, &worker)?),
        };
        let cgroup = match &self.cgroups {
            Some(cgroups) => Some(
                cgroups
                    .create(id)
                    .map_err(|e| format!("creating the job's cgroup: {e}"))?,
            ),
            None => None,
        };
        Sandbox::spawn(id, worker, workspace, cgroup).await
    }

    fn new_workspace(&self, id: u64, worker: &Arc<Worker>) -> Result<Workspace, String> {
        if worker.ready.mode == Mode::Namespaced {
            return Ok(Workspace::new(id, worker.clone(), None));
        }
        use std::os::unix::fs::PermissionsExt;
        let dir = self.scratch.join("ws").join(id.to_string());
        std::fs::create_dir_all(&dir)
            .and_then(|_| std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        if self.params.init.degraded_drop {
            std::os::unix::fs::chown(&dir, Some(SANDBOX_ID), Some(SANDBOX_ID))
                .map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        Ok(Workspace::new(id, worker.clone(), Some(dir)))
    }

    /// A ready job process: preforked if one is waiting, else forked now.
    pub(crate) async fn take_sandbox(&self) -> Result<Sandbox, String> {
        let preforked = loop {
            let candidate = self.ready.lock().expect("poisoned").pop_front();
            match candidate {
                Some(mut sandbox) => {
                    if sandbox.is_usable() {
                        break Some(sandbox);
                    }
                }
                None => break None,
            }
        };
        self.refill.notify_one();
        match preforked {
            Some(sandbox) => Ok(sandbox),
            None => self.spawn_sandbox(None).await,
        }
    }

    /// A place and a slot for a job expected to take `expected` seconds (0: unknown): the
    /// longest expected start first.
    pub(crate) async fn slot(&self, expected: f64) -> Slot<'_> {
        self.slots.take(expected).await
    }

    /// The environment a job starts with: the built-in allow-list, the engine's extra
    /// variables, then the job's own.
    pub(crate) fn job_env(
        &self,
        home: &Path,
        tmp: &Path,
        extra: &BTreeMap<String, String>,
    ) -> BTreeMap<String, String> {
        let mut env = self.base_env.clone();
        let home_s = home.display().to_string();
        env.insert("HOME".into(), home_s.clone());
        env.insert("TMPDIR".into(), tmp.display().to_string());
        env.insert(
            "MPLCONFIGDIR".into(),
            format!("{home_s}/.config/matplotlib"),
        );
        env.insert("XDG_CACHE_HOME".into(), format!("{home_s}/.cache"));
        env.insert("XDG_CONFIG_HOME".into(), format!("{home_s}/.config"));
        env.extend(extra.clone());
        env
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// Keeps `prefork` job processes ready, forking as many at once as are missing (each one's
/// confinement and warm-up run in the new process, so on many cores they overlap rather than
/// queue). Exits when the engine is gone.
async fn refill_loop(inner: Weak<Inner>, refill: Arc<Notify>) {
    let mut failures = 0u32;
    let mut spawning = JoinSet::new();
    loop {
        let Some(engine) = inner.upgrade() else {
            return;
        };
        let have = engine.ready.lock().expect("poisoned").len() + spawning.len();
        for _ in have..engine.config.prefork {
            let engine = engine.clone();
            spawning.spawn(async move { engine.spawn_sandbox(None).await.map(|s| (engine, s)) });
        }
        drop(engine);
        tokio::select! {
            Some(spawned) = spawning.join_next(), if !spawning.is_empty() => match spawned {
                Ok(Ok((engine, sandbox))) => {
                    failures = 0;
                    engine.ready.lock().expect("poisoned").push_back(sandbox);
                }
                Ok(Err(e)) => {
                    failures += 1;
                    tracing::warn!("preforking a job process failed ({failures} in a row): {e}");
                    let backoff = Duration::from_millis(100 << failures.min(6));
                    tokio::time::sleep(backoff).await;
                }
                Err(e) => tracing::warn!("preforking a job process panicked: {e}"),
            },
            _ = refill.notified() => {}
        }
    }
}
