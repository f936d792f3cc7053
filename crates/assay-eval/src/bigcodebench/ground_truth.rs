//! The reference solutions, run like samples: which tasks this environment can pass at all
//! (the official `gt_pass_rate` and `failed_tasks`), and how long each takes, which sets the
//! time budgets of evaluations.
//!
//! Results are kept per dataset and environment in a run directory under assay's cache, so a
//! task's reference is run once, resumes if interrupted, and the set grows as evaluations
//! need more tasks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use assay_report::RunDir;
use assay_sandbox::{default_processes, Engine, Limits, Status, TestResult};
use assay_tasks::bigcodebench::{Dataset, Task};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::{mpsc, watch};

use super::run::{judge, Finished, SampleResult};
use super::verdict::Environment;

/// The reference runs' directory in assay's cache.
pub const CACHE_DIR: &str = "ground-truth";

/// How long a reference solution may run: the official ground-truth limit.
pub const REFERENCE_TIMEOUT: Duration = Duration::from_secs(240);
/// Processes and threads a reference may have at once: twice the default for samples, so that
/// the references' measured peaks, not a cap, are what set that default
/// (`assay_sandbox::default_processes`).
pub fn reference_processes() -> u64 {
    2 * default_processes()
}
/// Memory a reference solution may use, whatever an evaluation's `--memory`: the results are
/// shared by every evaluation of the dataset.
pub const REFERENCE_MEMORY_BYTES: u64 = 8 << 30;

/// How one task's reference solution fared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceResult {
    pub status: Status,
    pub seconds: f64,
    pub reason: String,
    /// Most processes and threads the reference had at once, where measured.
    pub processes_peak: Option<u64>,
}

impl ReferenceResult {
    fn of(result: &SampleResult) -> Self {
        // The first failing test's last traceback line says more than a count of failures.
        let cause = result
            .tests
            .iter()
            .find(|t| matches!(t.result, TestResult::Fail | TestResult::Error))
            .and_then(|t| t.detail.lines().rev().find(|l| !l.trim().is_empty()));
        let reason = match cause {
            Some(line) if result.status == Status::Fail => {
                format!("{} ({})", result.reason, line.trim())
            }
            _ => result.reason.clone(),
        };
        ReferenceResult {
            status: result.status,
            seconds: result.wall_seconds,
            reason,
            processes_peak: result.processes_peak,
        }
    }

    pub fn passed(&self) -> bool {
        self.status == Status::Pass
    }
}

/// The reference results known for one dataset in one environment, by task.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroundTruth {
    pub tasks: BTreeMap<String, ReferenceResult>,
}

impl GroundTruth {
    fn insert(&mut self, result: &SampleResult) {
        self.tasks
            .insert(result.task_id.clone(), ReferenceResult::of(result));
    }

    /// The official `gt_pass_rate` over `tasks`: the share whose reference passes here.
    pub fn pass_rate(&self, tasks: &[Task]) -> f64 {
        if tasks.is_empty() {
            return 0.0;
        }
        let passed = tasks
            .iter()
            .filter(|t| self.tasks.get(&t.task_id).is_some_and(|r| r.passed()))
            .count();
        passed as f64 / tasks.len() as f64
    }

    /// The official `failed_tasks` among `tasks`, in task order, with why each failed.
    pub fn failures(&self, tasks: &[Task]) -> BTreeMap<String, String> {
        tasks
            .iter()
            .filter_map(|t| match self.tasks.get(&t.task_id) {
                Some(r) if r.passed() => None,
                Some(r) => Some((t.task_id.clone(), format!("{}: {}", r.status, r.reason))),
                None => Some((t.task_id.clone(), "not run".to_string())),
            })
            .collect()
    }

    /// How many processes and threads the references of `tasks` had at once: the basis of
    /// the default process cap (`Limits::processes`).
    pub fn processes(&self, tasks: &[Task]) -> ProcessPeaks {
        let mut peaks: Vec<(u64, &str)> = tasks
            .iter()
            .filter_map(|t| {
                let peak = self.tasks.get(&t.task_id)?.processes_peak?;
                Some((peak, t.task_id.as_str()))
            })
            .collect();
        peaks.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        ProcessPeaks {
            measured: peaks.len(),
            highest: peaks
                .iter()
                .take(PEAKS_LISTED)
                .map(|&(peak, task)| (task.to_string(), peak))
                .collect(),
        }
    }
}

/// Tasks listed by [`GroundTruth::processes`], highest first.
const PEAKS_LISTED: usize = 10;

/// The process peaks of reference runs.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessPeaks {
    /// References whose peak is known (it needs a cgroup and a kernel that keeps it).
    pub measured: usize,
    /// The highest peaks, highest first: (task, processes and threads at once).
    pub highest: Vec<(String, u64)>,
}

/// The official ground-truth figures over a dataset's tasks.
#[derive(Debug, Clone, Serialize)]
pub struct GroundTruthSummary {
    pub pass_rate: f64,
    /// Task → why its reference does not pass here, in task order.
    pub failed_tasks: BTreeMap<String, String>,
    /// Where the reference results are kept.
    pub cache: PathBuf,
    /// How many processes the references needed at once.
    pub processes: ProcessPeaks,
}

impl GroundTruthSummary {
    /// `failed_tasks` in the official order (task order).
    pub fn failed_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.failed_tasks.keys().map(String::as_str).collect();
        ids.sort_by_key(|id| assay_tasks::bigcodebench::task_number(id));
        ids
    }
}

/// The reference run directory of one dataset in one environment, shared by every
/// evaluation that needs it, even at once.
pub struct References {
    dir: RunDir,
    guards: bool,
    pub truth: GroundTruth,
}

impl References {
    /// Opens (or creates) `cache/ground-truth/<dataset digest>-<environment>-<settings>`:
    /// reference results depend on the network, the official guards (see `Options::guards`)
    /// and the limits as much as on the data and the environment.
    pub fn open(
        cache: &Path,
        dataset: &Dataset,
        environment: &str,
        network: bool,
        guards: bool,
    ) -> Result<Self, String> {
        let identity = json!({
            "dataset_digest": dataset.digest,
            "environment": environment,
            "network": network,
            "guards": guards,
            "timeout_seconds": REFERENCE_TIMEOUT.as_secs(),
            "memory_bytes": REFERENCE_MEMORY_BYTES,
            "processes": reference_processes(),
        });
        // Everything that can change a reference's verdict or time names the directory, so a
        // cache kept from another setting (or an older assay) is never mistaken for this one.
        let settings = blake3::hash(identity.to_string().as_bytes()).to_hex();
        let name = format!("{}-{environment}-{}", dataset.digest, &settings[..8]);
        let path = cache.join(CACHE_DIR).join(name);
        let manifest = json!({
            "assay_version": env!("CARGO_PKG_VERSION"),
            "kind": "bigcodebench-ground-truth",
            "identity": identity,
            "dataset": dataset.source,
            "started_at": super::run::now(),
        });
        let opened = RunDir::open_shared(&path, &manifest).map_err(|e| e.to_string())?;
        let mut truth = GroundTruth::default();
        for record in &opened.records {
            let result: SampleResult = serde_json::from_value(record.clone()).map_err(|e| {
                format!(
                    "{}: a record is not a reference result: {e}",
                    path.join(assay_report::RESULTS).display()
                )
            })?;
            truth.insert(&result);
        }
        Ok(References {
            dir: opened.dir,
            guards,
            truth,
        })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Keeps a finished reference run.
    pub fn record(&mut self, result: &SampleResult) -> Result<(), String> {
        self.dir
            .append(&serde_json::to_value(result).expect("results serialize"))
            .map_err(|e| e.to_string())?;
        self.truth.insert(result);
        Ok(())
    }

    pub fn sync(&mut self) -> Result<(), String> {
        self.dir.sync().map_err(|e| e.to_string())
    }

    /// The ground-truth figures over `tasks`.
    pub fn summary(&self, tasks: &[Task]) -> GroundTruthSummary {
        GroundTruthSummary {
            pass_rate: self.truth.pass_rate(tasks),
            failed_tasks: self.truth.failures(tasks),
            cache: self.path().to_path_buf(),
            processes: self.truth.processes(tasks),
        }
    }

    /// Starts the reference run of every task in `tasks` not known yet. Each result arrives
    /// on `done` (to be recorded) and on the task's watch (for the samples waiting on it).
    pub(crate) fn spawn_missing(
        &self,
        engine: &Engine,
        environment: &Environment,
        tasks: &[Task],
        done: &mpsc::UnboundedSender<Finished>,
    ) -> BTreeMap<String, watch::Receiver<Option<ReferenceResult>>> {
        let mut pending = BTreeMap::new();
        for task in tasks {
            if self.truth.tasks.contains_key(&task.task_id) {
                continue;
            }
            let (tx, rx) = watch::channel(None);
            pending.insert(task.task_id.clone(), rx);
            let program = task.reference_solution();
            let digest = super::run::digest(&program);
            let job = super::run::Job {
                index: task.number() as usize,
                task_id: task.task_id.clone(),
                program,
                digest,
                test: task.test.clone(),
                limits: reference_limits(),
                guards: self.guards,
            };
            let (engine, environment, done) = (engine.clone(), environment.clone(), done.clone());
            tokio::spawn(async move {
                let result = judge(&engine, &environment, job).await;
                let _ = tx.send(Some(ReferenceResult::of(&result)));
                let _ = done.send(Finished::Reference(result));
            });
        }
        pending
    }
}

/// The limits of a reference run (the official ground truth's).
fn reference_limits() -> Limits {
    Limits {
        wall: REFERENCE_TIMEOUT,
        memory_bytes: REFERENCE_MEMORY_BYTES,
        processes: reference_processes(),
        stack_bytes: Some(super::run::STACK_BYTES),
        ..Limits::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bigcodebench::run::TimePolicy;
    use assay_tasks::bigcodebench::Subset;

    fn reference(status: Status, seconds: f64) -> ReferenceResult {
        ReferenceResult {
            status,
            seconds,
            reason: format!("{status}"),
            processes_peak: None,
        }
    }

    #[test]
    fn official_rate_and_failed_tasks_count_unmeasured_tasks_as_failed() {
        let hard = Dataset::embedded("v0.1.4", Subset::Hard).unwrap();
        let tasks = &hard.tasks[..4];
        let mut truth = GroundTruth::default();
        truth
            .tasks
            .insert(tasks[0].task_id.clone(), reference(Status::Pass, 0.5));
        truth
            .tasks
            .insert(tasks[1].task_id.clone(), reference(Status::Fail, 0.1));
        truth
            .tasks
            .insert(tasks[2].task_id.clone(), reference(Status::Infra, 0.1));
        assert_eq!(truth.pass_rate(tasks), 0.25);
        let failures = truth.failures(tasks);
        assert_eq!(failures.len(), 3);
        assert_eq!(failures[&tasks[1].task_id], "fail: fail");
        assert_eq!(failures[&tasks[3].task_id], "not run");
        assert_eq!(truth.pass_rate(&[]), 0.0);
    }

    #[test]
    fn process_peaks_are_listed_highest_first_over_the_measured() {
        let hard = Dataset::embedded("v0.1.4", Subset::Hard).unwrap();
        let tasks = &hard.tasks[..4];
        let mut truth = GroundTruth::default();
        for (task, peak) in tasks.iter().zip([Some(3), Some(40), None, Some(40)]) {
            let mut result = reference(Status::Pass, 0.1);
            result.processes_peak = peak;
            truth.tasks.insert(task.task_id.clone(), result);
        }
        let peaks = truth.processes(tasks);
        assert_eq!(peaks.measured, 3);
        let (a, b) = (&tasks[1].task_id, &tasks[3].task_id);
        let (first, second) = if a < b { (a, b) } else { (b, a) };
        assert_eq!(
            peaks.highest,
            [
                (first.clone(), 40),
                (second.clone(), 40),
                (tasks[0].task_id.clone(), 3)
            ]
        );
    }

    #[test]
    fn budgets_follow_the_reference_within_floor_and_cap() {
        let policy = TimePolicy::Budget {
            floor_seconds: 10.0,
            factor: 5.0,
            cap_seconds: 240.0,
        };
        let secs = |r: Option<ReferenceResult>| policy.limit(r.as_ref()).as_secs_f64();
        assert_eq!(secs(Some(reference(Status::Pass, 0.1))), 10.0);
        assert_eq!(secs(Some(reference(Status::Pass, 4.0))), 20.0);
        assert_eq!(secs(Some(reference(Status::Pass, 100.0))), 240.0);
        // A reference that fails or was never measured says nothing: the official limit.
        assert_eq!(secs(Some(reference(Status::Fail, 0.1))), 240.0);
        assert_eq!(secs(None), 240.0);
        // A reference that hangs: whatever passes, passes fast.
        assert_eq!(secs(Some(reference(Status::Timeout, 240.0))), 10.0);
        let fixed = TimePolicy::Fixed { seconds: 3.0 };
        assert_eq!(
            fixed
                .limit(Some(&reference(Status::Pass, 100.0)))
                .as_secs_f64(),
            3.0
        );
    }
}
