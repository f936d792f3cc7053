use assay_records::Conditions;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// How much isolation to insist on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IsolationMode {
    /// Use every mechanism the kernel offers and degrade, recording the level reached, where
    /// one is missing.
    #[default]
    Auto,
    /// Refuse to run anything below [`IsolationLevel::Full`](crate::IsolationLevel::Full).
    Strict,
}

/// Resource limits of one job (or one session cell).
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Wall-clock time, enforced from outside the sandbox by killing it.
    pub wall: Duration,
    /// CPU time of the job process (all its threads); `None`: the same as `wall`.
    pub cpu: Option<Duration>,
    /// Memory of the job's whole process tree with a cgroup, of each process otherwise
    /// (`RLIMIT_DATA`, which unlike `RLIMIT_AS` does not break OpenBLAS's reservations).
    pub memory_bytes: u64,
    /// Processes and threads the job may have at once. Default: [`default_processes`].
    pub processes: u64,
    /// CPUs' worth of time the job's tree may use at once (with a cgroup): one job cannot
    /// starve the others by spreading work over many processes.
    pub cpus: f64,
    /// Bytes kept of each of stdout and stderr; the rest is counted and dropped.
    pub output_bytes: usize,
    /// Largest file the job may write (`RLIMIT_FSIZE`).
    pub file_size_bytes: u64,
    /// Open file descriptors at once (`RLIMIT_NOFILE`).
    pub open_files: u64,
    /// Main-thread stack (`RLIMIT_STACK`); `None` keeps the default.
    pub stack_bytes: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            wall: Duration::from_secs(60),
            cpu: None,
            memory_bytes: 4 << 30,
            processes: default_processes(),
            cpus: 1.0,
            output_bytes: 1 << 20,
            file_size_bytes: 256 << 20,
            open_files: 1024,
            stack_bytes: None,
        }
    }
}

/// The default cap on a job's processes and threads: `2 × (64 + 4 × CPUs)`, 144 on 2 CPUs.
///
/// From what BigCodeBench's 1,140 reference solutions need at most (measured per task, kept in
/// the ground-truth cache; docs/sandbox.md, "Processes"): 63 on 2 CPUs and 59 on 1, both
/// BigCodeBench/289, whose TensorFlow thread pools grow by 4 per CPU; multiprocessing pools
/// grow by one per CPU. So `60 + 4 × CPUs` covers every reference, and the default doubles
/// its rounded-up form: room for solutions less frugal than the references, while a fork bomb
/// stops at a small multiple of what any honest one needs. CPUs are those online, as
/// `os.cpu_count()` (what `multiprocessing` sizes pools by) counts them.
pub fn default_processes() -> u64 {
    // SAFETY: sysconf reads a system value and has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let cpus = u64::try_from(online).unwrap_or(1).max(1);
    2 * (64 + 4 * cpus)
}

impl Limits {
    pub(crate) fn cpu(&self) -> Duration {
        self.cpu.unwrap_or(self.wall)
    }
}

/// Everything an [`Engine`](crate::Engine) needs to start.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The interpreter jobs run on: normally a virtual environment's `bin/python`.
    pub python: PathBuf,
    /// Modules the workers import once before forking jobs (missing ones are skipped).
    pub preload: Vec<String>,
    /// Whether to refuse anything below full isolation.
    pub isolation: IsolationMode,
    /// Use Linux namespaces where the kernel allows (the default). Off, only Landlock,
    /// seccomp, rlimits, cgroups and (as root) an unprivileged uid remain: for hosts where
    /// namespaces misbehave, and to exercise that fallback.
    pub namespaces: bool,
    /// Use a cgroup per job where the machine allows (as root). Off, memory and process
    /// limits fall back to rlimits, as for an unprivileged user.
    pub cgroups: bool,
    /// Confine jobs with Landlock where the kernel has it (the default). Off, as on kernels
    /// without it: for tests of what the other layers hold alone.
    pub landlock: bool,
    /// Give jobs the host's network instead of a private one with loopback only. Off by
    /// default: evaluated code should not reach the internet unless asked for.
    pub network: bool,
    /// CPU slots: jobs computing at once. Default: the number of CPUs.
    pub concurrency: usize,
    /// Jobs running at once at most, counting those that lent their slot while waiting
    /// (sleeping, blocked on a subprocess or a socket): a job whose processes use almost no
    /// CPU lets the next job start. Equal to `concurrency`: no lending. Default:
    /// [`RUNNING_PER_SLOT`] times `concurrency`.
    pub max_running: usize,
    /// Job processes kept forked and confined ahead of demand, so that fork and setup cost
    /// stays off a job's critical path. Default: `concurrency`.
    pub prefork: usize,
    /// Worker processes forking job processes, each from an interpreter holding the
    /// preloaded libraries, one fork at a time (about 15 ms each at BigCodeBench's preload):
    /// each worker starts at most some 60 jobs a second, so many cores need several. Each
    /// costs its own copy of the preloaded libraries in memory. Default: one per
    /// [`SLOTS_PER_WORKER`] slots.
    pub workers: usize,
    /// Default limits of jobs that don't bring their own.
    pub limits: Limits,
    /// Size of each job's private workspace (its `/tmp`), a tmpfs counted against its memory.
    pub workspace_mib: u64,
    /// Size of each job's private `/dev/shm`.
    pub shm_mib: u64,
    /// Extra host paths the sandbox may read (the interpreter, its environment, the system
    /// directories and the worker runtime are always visible).
    pub extra_readonly: Vec<PathBuf>,
    /// Host paths to hide even if they lie inside a visible tree: run directories, samples,
    /// the ground-truth cache, the user's home. Absolute, and existing when the engine starts
    /// (the view is built then). One that contains a visible tree is left alone (it is not
    /// visible beyond that tree). The assay executable itself is always hidden. Without
    /// namespaces only a job that starts as root can mask; elsewhere Landlock shows the
    /// visible trees whole.
    pub hidden: Vec<PathBuf>,
    /// Extra environment variables for every job. Nothing from the supervisor's own
    /// environment reaches a job except through this and the built-in allow-list.
    pub env: BTreeMap<String, String>,
    /// Host directory for workspaces when the kernel offers no mount namespaces.
    /// Default: a private directory under the system temp dir.
    pub scratch: Option<PathBuf>,
    /// Where the embedded worker runtime is written. Default: `runtime/` in assay's cache
    /// ([`assay_pyenv::cache_root`]).
    pub runtime_dir: Option<PathBuf>,
    /// What every job's code ought not to depend on, fixed: the directory listing order and
    /// the seeds of unseeded randomness. Default: a hashed order with key 0, seed 0.
    pub conditions: Conditions,
}

/// Default jobs running at once per CPU slot. Long waits come in clusters (a dataset's slowest
/// tasks are mostly sleepers, and they start first): with 4 per slot, eight sleepers could
/// fill the engine while a CPU sat idle; at 8 the 1,140 BigCodeBench references take 159-161 s
/// instead of 173 s on 2 slots, the longest task's own 155 s being the bound.
pub const RUNNING_PER_SLOT: usize = 8;

/// CPU slots per worker process by default. BigCodeBench's jobs compute for 0.3 to 0.45 s on
/// average (docs/scale.md), so a slot starts two to three a second, and eight slots keep one
/// worker's forking (about 64 a second) under half busy.
pub const SLOTS_PER_WORKER: usize = 8;

impl EngineConfig {
    /// A configuration with defaults for everything but the interpreter.
    pub fn new(python: impl Into<PathBuf>) -> Self {
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let mut config = EngineConfig {
            python: python.into(),
            preload: Vec::new(),
            isolation: IsolationMode::Auto,
            namespaces: true,
            cgroups: true,
            landlock: true,
            network: false,
            // Set just below, together.
            concurrency: 0,
            max_running: 0,
            prefork: 0,
            workers: 1,
            limits: Limits::default(),
            workspace_mib: 1024,
            shm_mib: 256,
            extra_readonly: Vec::new(),
            hidden: Vec::new(),
            env: BTreeMap::new(),
            scratch: None,
            runtime_dir: None,
            conditions: Conditions::default(),
        };
        config.set_concurrency(cpus);
        config
    }

    /// `jobs` CPU slots, with the running bound, the prefork pool and the workers that go
    /// with them.
    pub fn set_concurrency(&mut self, jobs: usize) {
        self.concurrency = jobs;
        self.max_running = RUNNING_PER_SLOT * jobs;
        self.prefork = jobs;
        self.workers = jobs.div_ceil(SLOTS_PER_WORKER).max(1);
    }
}
