//! One cgroup per job, where the machine lets us create them (root, with cgroup v2 or the v1
//! memory controller): a memory limit and a process limit for the job's whole tree, an exact
//! out-of-memory signal, and accounting of peak memory and CPU time.
//!
//! Without cgroups the engine falls back to per-process rlimits, and says so in its report.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::meter::{cpu_used, read_keyed, read_u64, CpuMeter};

#[derive(Debug)]
pub(crate) enum Cgroups {
    V2 {
        base: PathBuf,
    },
    V1 {
        memory: PathBuf,
        pids: Option<PathBuf>,
        cpuacct: Option<PathBuf>,
        /// The `cpu` controller, for the CPU quota (often a hierarchy of its own).
        cpu: Option<PathBuf>,
    },
}

/// Per-job cgroup directories.
#[derive(Debug)]
pub(crate) struct JobCgroup {
    v2: bool,
    memory: PathBuf,
    pids: Option<PathBuf>,
    /// CPU accounting (`cpuacct` in v1).
    cpu: Option<PathBuf>,
    /// CPU quota (`cpu` in v1).
    quota: Option<PathBuf>,
    cpu_start: Option<Duration>,
    oom_start: u64,
}

/// What the cgroup saw of a job.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CgroupStats {
    pub memory_peak: Option<u64>,
    /// Most tasks (processes and threads) at once, where the kernel keeps `pids.peak` (6.1+
    /// on v2, 6.13+ on v1).
    pub processes_peak: Option<u64>,
    pub oom_kills: u64,
    pub cpu: Option<Duration>,
}

const ROOT: &str = "/sys/fs/cgroup";

impl Cgroups {
    /// The cgroup layout available to this process, with a fresh parent directory `name` in
    /// each hierarchy; `None` when cgroups can't be used.
    /// `name`: `assay-<pid>-<n>`, unique per engine (one process may run several).
    pub fn detect(name: &str) -> Option<Cgroups> {
        if !rustix::process::geteuid().is_root() {
            return None;
        }
        let root = Path::new(ROOT);
        let result = if root.join("cgroup.controllers").exists() {
            Self::setup_v2(root, name)
        } else if root.join("memory/memory.limit_in_bytes").exists() {
            Self::setup_v1(root, name)
        } else {
            return None;
        };
        match result {
            Ok(cgroups) => Some(cgroups),
            Err(e) => {
                tracing::warn!("cgroups unavailable, limits fall back to rlimits: {e}");
                None
            }
        }
    }

    fn setup_v2(root: &Path, name: &str) -> io::Result<Cgroups> {
        let controllers = std::fs::read_to_string(root.join("cgroup.controllers"))?;
        if !controllers.split_whitespace().any(|c| c == "memory") {
            return Err(io::Error::other(
                "the cgroup v2 root has no memory controller",
            ));
        }
        remove_stale(root);
        let wanted: Vec<&str> = ["memory", "pids", "cpu"]
            .into_iter()
            .filter(|c| controllers.split_whitespace().any(|x| x == *c))
            .collect();
        let enable: String = wanted.iter().map(|c| format!("+{c} ")).collect();
        std::fs::write(root.join("cgroup.subtree_control"), enable.trim())?;
        let base = root.join(name);
        std::fs::create_dir_all(&base)?;
        std::fs::write(base.join("cgroup.subtree_control"), enable.trim())?;
        Ok(Cgroups::V2 { base })
    }

    fn setup_v1(root: &Path, name: &str) -> io::Result<Cgroups> {
        let make = |controller: &str| -> Option<PathBuf> {
            let hierarchy = root.join(controller);
            if !hierarchy.is_dir() {
                return None;
            }
            remove_stale(&hierarchy);
            let dir = hierarchy.join(name);
            std::fs::create_dir_all(&dir).ok().map(|_| dir)
        };
        let memory =
            make("memory").ok_or_else(|| io::Error::other("cannot create a memory cgroup"))?;
        let cpuacct = make("cpuacct");
        // Where cpu and cpuacct share a hierarchy (cpu,cpuacct), one directory serves both.
        let cpu = make("cpu").filter(|dir| Some(dir) != cpuacct.as_ref());
        Ok(Cgroups::V1 {
            memory,
            pids: make("pids"),
            cpuacct,
            cpu,
        })
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Cgroups::V2 { .. } => "cgroup-v2",
            Cgroups::V1 { .. } => "cgroup-v1",
        }
    }

    pub fn create(&self, id: u64) -> io::Result<JobCgroup> {
        let name = format!("job-{id}");
        let make = |parent: &Path| -> io::Result<PathBuf> {
            let dir = parent.join(&name);
            std::fs::create_dir(&dir)?;
            Ok(dir)
        };
        let job = match self {
            Cgroups::V2 { base } => {
                let dir = make(base)?;
                JobCgroup {
                    v2: true,
                    pids: Some(dir.clone()),
                    cpu: Some(dir.clone()),
                    quota: Some(dir.clone()),
                    memory: dir,
                    cpu_start: None,
                    oom_start: 0,
                }
            }
            Cgroups::V1 {
                memory,
                pids,
                cpuacct,
                cpu,
            } => {
                let accounting = cpuacct.as_deref().map(make).transpose()?;
                let quota = match cpu {
                    Some(cpu) => Some(make(cpu)?),
                    // cpu,cpuacct in one hierarchy: the accounting directory has both.
                    None => accounting.clone(),
                };
                JobCgroup {
                    v2: false,
                    memory: make(memory)?,
                    pids: pids.as_deref().map(make).transpose()?,
                    cpu: accounting,
                    quota,
                    cpu_start: None,
                    oom_start: 0,
                }
            }
        };
        Ok(job)
    }

    fn dirs(&self) -> Vec<&Path> {
        match self {
            Cgroups::V2 { base } => vec![base],
            Cgroups::V1 {
                memory,
                pids,
                cpuacct,
                cpu,
            } => std::iter::once(memory.as_path())
                .chain(pids.as_deref())
                .chain(cpuacct.as_deref())
                .chain(cpu.as_deref())
                .collect(),
        }
    }
}

impl Drop for Cgroups {
    fn drop(&mut self) {
        for dir in self.dirs() {
            remove_tree(dir);
        }
    }
}

impl JobCgroup {
    fn all(&self) -> impl Iterator<Item = &Path> {
        let mut dirs = vec![self.memory.as_path()];
        for extra in [&self.pids, &self.cpu, &self.quota].into_iter().flatten() {
            if !dirs.contains(&extra.as_path()) {
                dirs.push(extra);
            }
        }
        dirs.into_iter()
    }

    /// Moves `pid` (a host pid) into the job's groups; its future children follow.
    pub fn attach(&self, pid: i32) -> io::Result<()> {
        for dir in self.all() {
            std::fs::write(dir.join("cgroup.procs"), pid.to_string())?;
        }
        Ok(())
    }

    /// Sets the limits for the job about to run and starts its accounting from zero. `cpus`:
    /// how many CPUs' worth of time the job's whole tree may use, so that one job spinning up
    /// many busy processes cannot starve its neighbours into timeouts.
    pub fn start(&mut self, memory_bytes: u64, processes: u64, cpus: f64) -> io::Result<()> {
        if self.v2 {
            std::fs::write(self.memory.join("memory.max"), memory_bytes.to_string())?;
            // Without swap limits a "limited" job would page out instead of stopping.
            let _ = std::fs::write(self.memory.join("memory.swap.max"), "0");
        } else {
            std::fs::write(
                self.memory.join("memory.limit_in_bytes"),
                memory_bytes.to_string(),
            )?;
            let _ = std::fs::write(self.memory.join("memory.max_usage_in_bytes"), "0");
        }
        if let Some(pids) = &self.pids {
            std::fs::write(pids.join("pids.max"), processes.to_string())?;
        }
        if let Some(quota) = &self.quota {
            const PERIOD_US: u64 = 100_000;
            let allowed = ((cpus.max(0.01) * PERIOD_US as f64) as u64).max(1000);
            if self.v2 {
                std::fs::write(quota.join("cpu.max"), format!("{allowed} {PERIOD_US}"))?;
            } else {
                std::fs::write(quota.join("cpu.cfs_period_us"), PERIOD_US.to_string())?;
                std::fs::write(quota.join("cpu.cfs_quota_us"), allowed.to_string())?;
            }
        }
        self.cpu_start = self.cpu_usage();
        self.oom_start = self.oom_kills();
        Ok(())
    }

    /// Kills every process in the job's groups (for machines without PID namespaces).
    pub fn kill_all(&self) {
        if self.v2 {
            let _ = std::fs::write(self.memory.join("cgroup.kill"), "1");
            return;
        }
        for _ in 0..10 {
            let Ok(procs) = std::fs::read_to_string(self.memory.join("cgroup.procs")) else {
                return;
            };
            let pids: Vec<_> = procs
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .filter_map(rustix::process::Pid::from_raw)
                .collect();
            if pids.is_empty() {
                return;
            }
            for pid in pids {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }

    pub fn stats(&self) -> CgroupStats {
        let peak_file = if self.v2 {
            "memory.peak"
        } else {
            "memory.max_usage_in_bytes"
        };
        CgroupStats {
            memory_peak: read_u64(&self.memory.join(peak_file)),
            processes_peak: self
                .pids
                .as_ref()
                .and_then(|pids| read_u64(&pids.join("pids.peak"))),
            oom_kills: self.oom_kills().saturating_sub(self.oom_start),
            cpu: match (self.cpu_usage(), self.cpu_start) {
                (Some(now), Some(start)) => Some(now.saturating_sub(start)),
                (now, _) => now,
            },
        }
    }

    fn oom_kills(&self) -> u64 {
        let (file, key) = if self.v2 {
            ("memory.events", "oom_kill")
        } else {
            ("memory.oom_control", "oom_kill")
        };
        read_keyed(&self.memory.join(file), key).unwrap_or(0)
    }

    /// A meter of the job's CPU time while it runs.
    pub fn cpu_meter(&self) -> Option<CpuMeter> {
        Some(CpuMeter::Cgroup {
            dir: self.cpu.clone()?,
            v2: self.v2,
        })
    }

    fn cpu_usage(&self) -> Option<Duration> {
        cpu_used(self.cpu.as_ref()?, self.v2)
    }
}

impl Drop for JobCgroup {
    fn drop(&mut self) {
        let dirs: Vec<PathBuf> = self.all().map(Path::to_path_buf).collect();
        let remove = move || {
            for dir in dirs {
                remove_dir_retrying(&dir);
            }
        };
        // Removal may have to wait for the kernel to finish with the last process: never on
        // an async worker thread.
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(remove)),
            Err(_) => remove(),
        }
    }
}

/// A cgroup can only be removed once its last process is gone, which trails the process's
/// exit by a moment; retry briefly, then leave it for the next start's stale sweep.
fn remove_dir_retrying(dir: &Path) {
    for attempt in 0..50 {
        match std::fs::remove_dir(dir) {
            Ok(()) => return,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return,
            Err(_) => std::thread::sleep(Duration::from_millis(2 * (attempt + 1))),
        }
    }
    tracing::debug!(
        "cgroup {} is still busy; left for later cleanup",
        dir.display()
    );
}

fn remove_tree(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                remove_dir_retrying(&entry.path());
            }
        }
    }
    remove_dir_retrying(dir);
}

/// Removes `assay-<pid>-<n>` groups left by assay processes that no longer exist.
fn remove_stale(hierarchy: &Path) {
    let Ok(entries) = std::fs::read_dir(hierarchy) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("assay-"))
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            remove_tree(&entry.path());
        }
    }
}
