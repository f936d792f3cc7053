//! How much CPU a job's process tree has used: read from its cgroup's accounting where it has
//! one, else from `/proc`, as a [`CpuMeter`]; and the readers of the kernel's counter files
//! behind it. Its own module because the cgroup hands out a meter for its job and the slots
//! follow one: with the meter in either, each would import the other.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Reads the CPU time a job's process tree has used.
pub(crate) enum CpuMeter {
    /// The job's cgroup counts every process in it, gone or alive.
    Cgroup { dir: PathBuf, v2: bool },
    /// Without a cgroup: the live processes from the job's root down (`/proc`).
    Tree(i32),
}

impl CpuMeter {
    pub fn read(&self) -> Option<Duration> {
        match self {
            CpuMeter::Cgroup { dir, v2 } => cpu_used(dir, *v2),
            CpuMeter::Tree(root) => {
                // Each live process's own time (utime, stime) and that of the children it
                // reaped (cutime, cstime): work done in short-lived subprocesses counts too.
                let ticks: u64 = tree(*root)?
                    .iter()
                    .filter_map(|pid| stat_after_command(&format!("/proc/{pid}/stat")))
                    .map(|rest| {
                        let fields: Vec<&str> = rest.split_whitespace().collect();
                        // Numbered as in proc(5); the slice starts at field 3, the state.
                        let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
                        (14..=17).filter_map(field).sum::<u64>()
                    })
                    .sum();
                Some(Duration::from_secs_f64(ticks as f64 / clock_ticks()))
            }
        }
    }

    /// The ids of the job's live threads, as the host sees them.
    pub fn threads(&self) -> Vec<i32> {
        match self {
            CpuMeter::Cgroup { dir, v2 } => {
                let list = dir.join(if *v2 { "cgroup.threads" } else { "tasks" });
                std::fs::read_to_string(list)
                    .unwrap_or_default()
                    .split_whitespace()
                    .filter_map(|tid| tid.parse().ok())
                    .collect()
            }
            CpuMeter::Tree(root) => tree(*root)
                .unwrap_or_default()
                .iter()
                .flat_map(|pid| {
                    std::fs::read_dir(format!("/proc/{pid}/task"))
                        .into_iter()
                        .flatten()
                        .flatten()
                        .filter_map(|task| task.file_name().to_str()?.parse().ok())
                })
                .collect(),
        }
    }
}

/// The CPU time the processes of the cgroup at `dir` have used, gone or alive.
pub(crate) fn cpu_used(dir: &Path, v2: bool) -> Option<Duration> {
    if v2 {
        read_keyed(&dir.join("cpu.stat"), "usage_usec").map(Duration::from_micros)
    } else {
        read_u64(&dir.join("cpuacct.usage")).map(Duration::from_nanos)
    }
}

pub(crate) fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

pub(crate) fn read_keyed(path: &Path, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// `root` and every live descendant; `None` when `root` itself is gone.
fn tree(root: i32) -> Option<Vec<i32>> {
    std::fs::metadata(format!("/proc/{root}")).ok()?;
    let mut found = Vec::new();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        found.push(pid);
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            stack.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<i32>().ok()),
            );
        }
    }
    Some(found)
}

/// A `/proc/.../stat` file from the field after the command (which may hold spaces and
/// parentheses) on: the state, field 3, first.
pub(crate) fn stat_after_command(path: &str) -> Option<String> {
    let stat = std::fs::read_to_string(path).ok()?;
    Some(stat.get(stat.rfind(')')? + 2..)?.to_string())
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[test]
    fn the_process_tree_meter_counts_this_process() {
        let meter = CpuMeter::Tree(std::process::id() as i32);
        let before = meter.read().unwrap();
        let started = Instant::now();
        let mut x = 0u64;
        while started.elapsed() < Duration::from_millis(300) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let after = meter.read().unwrap();
        assert!(after > before, "{before:?} -> {after:?}");
        assert!(CpuMeter::Tree(i32::MAX).read().is_none());
        // A child that computed and was reaped still counts. (A test's own child: nothing of
        // assay's environment to keep from it.)
        #[allow(clippy::disallowed_methods)]
        let status = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done"])
            .status()
            .unwrap();
        assert!(status.success());
        let reaped = meter.read().unwrap();
        assert!(
            reaped >= after + Duration::from_millis(100),
            "{after:?} -> {reaped:?}"
        );
    }
}
