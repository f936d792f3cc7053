//! The reference solutions, run like samples: which tasks this environment can pass at all
//! (the official `gt_pass_rate` and `failed_tasks`), and how long each takes, which sets the
//! time budgets of evaluations.
//!
//! Results are kept per dataset and environment in a run directory under assay's cache, so a
//! task's reference is run once, resumes if interrupted, and the set grows as evaluations
//! need more tasks.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use assay_records::{
    Conditions, GroundTruthSummary, Identity, Kind, Manifest, ProcessPeaks, ReferenceResult,
    SampleRecord, Status, OFFICIAL_TIMEOUT_SECONDS,
};
use assay_rundir::{RunDir, RunDirError};
use assay_sandbox::{default_processes, Engine, Limits};
use assay_tasks::bigcodebench::{Dataset, Task};
use tokio::sync::watch;

use super::judge::{digest, judge, Finished, Job};
use super::options::{Options, STACK_BYTES};
use super::sample_times::{self, SampleTimes};
use super::verdict::Environment;

/// The reference runs' directory in assay's cache.
pub const CACHE_DIR: &str = "ground-truth";

/// How long a reference solution may run: the official ground-truth limit.
pub const REFERENCE_TIMEOUT: Duration = Duration::from_secs(OFFICIAL_TIMEOUT_SECONDS);
/// Processes and threads a reference may have at once: twice the default for samples, so that
/// the references' measured peaks, not a cap, are what set that default
/// (`assay_sandbox::default_processes`).
pub fn reference_processes() -> u64 {
    2 * default_processes()
}
/// Memory a reference solution may use, whatever an evaluation's `--memory`: the results are
/// shared by every evaluation of the dataset.
pub const REFERENCE_MEMORY_BYTES: u64 = 8 << 30;

/// The reference results known for one dataset in one environment, by task.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroundTruth {
    /// Task → how its reference fared.
    pub tasks: BTreeMap<String, ReferenceResult>,
}

impl GroundTruth {
    fn insert(&mut self, result: &SampleRecord) {
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
                None => Some((t.task_id.clone(), NOT_RUN.to_string())),
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
pub const PEAKS_LISTED: usize = 10;

/// The `failed_tasks` reason of a task whose reference has not been run here.
const NOT_RUN: &str = "not run";

/// Whether a `failed_tasks` reason, as [`GroundTruth::failures`] writes it, is of a reference
/// that could not run here (`infra`: the environment decided, say no internet or no NLTK
/// data; or not run at all) rather than one that ran and did not pass. The official
/// `failed_tasks` lists both alike; what assay says apart from it tells them apart.
pub fn could_not_run(reason: &str) -> bool {
    reason == NOT_RUN
        || reason
            .strip_prefix(Status::Infra.as_str())
            .is_some_and(|rest| rest.starts_with(": "))
}

/// `failed_tasks` in the official order (task order).
pub fn failed_ids(summary: &GroundTruthSummary) -> Vec<&str> {
    let mut ids: Vec<&str> = summary.failed_tasks.keys().map(String::as_str).collect();
    ids.sort_by_key(|id| assay_tasks::bigcodebench::task_number(id));
    ids
}

/// The reference run directory of one dataset in one environment, shared by every
/// evaluation that needs it, even at once.
pub struct References {
    dir: RunDir,
    guards: bool,
    /// What is known so far.
    pub truth: GroundTruth,
    /// How long the samples of each task took in evaluations here, as when this opened.
    pub sample_times: SampleTimes,
}

impl References {
    /// Opens (or creates) `cache/ground-truth/<dataset digest>-<environment>-<settings>`:
    /// reference results depend on the network, the official guards (see `Options::guards`),
    /// the conditions jobs run under (the engine's) and the limits as much as on the data and
    /// the environment.
    pub fn open(
        cache: &Path,
        dataset: &Dataset,
        environment: &str,
        options: &Options,
        conditions: Conditions,
    ) -> Result<Self, RunDirError> {
        let guards = options.guards;
        let identity = cache_identity(&dataset.digest, environment, options, conditions);
        let name = cache_name(&dataset.digest, environment, &identity);
        let path = cache.join(CACHE_DIR).join(name);
        let mut manifest = Manifest::new(Kind::BigcodebenchGroundTruth, identity);
        manifest.dataset = Some(dataset.source.clone());
        let opened = RunDir::open_shared::<SampleRecord>(&path, &manifest)?;
        let mut truth = GroundTruth::default();
        for record in &opened.records {
            truth.insert(record);
        }
        Ok(References {
            sample_times: SampleTimes::load(opened.dir.path()),
            dir: opened.dir,
            guards,
            truth,
        })
    }

    /// Where the reference results are kept.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Keeps a finished reference run.
    pub fn record(&mut self, result: &SampleRecord) -> Result<(), RunDirError> {
        self.dir.append(result)?;
        self.truth.insert(result);
        Ok(())
    }

    /// Forces every kept result to disk.
    pub fn sync(&mut self) -> Result<(), RunDirError> {
        self.dir.sync()
    }

    /// Keeps how long an evaluation's samples took, for the order of later ones. Read again
    /// first: another evaluation may have written since this one opened (and if two write at
    /// once, one's times are lost, which costs only order).
    pub fn remember_sample_times(
        &mut self,
        walls: &BTreeMap<String, f64>,
    ) -> Result<(), RunDirError> {
        let mut times = SampleTimes::load(self.dir.path());
        times.learn(walls);
        self.dir.write_json(sample_times::FILE, &times)?;
        self.sample_times = times;
        Ok(())
    }

    /// How long a sample of `task_id` is expected to take: its reference's time or its
    /// samples' in earlier evaluations here, whichever is longer (0 when neither is known).
    /// What orders work longest first, so that the slowest tasks do not end a run alone.
    pub fn expected_seconds(&self, task_id: &str) -> f64 {
        let reference = self.truth.tasks.get(task_id).map(|r| r.seconds);
        self.sample_times.expected(task_id, reference)
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

    /// The job that runs `task`'s reference solution.
    pub(crate) fn reference_job(&self, task: &Task) -> Job {
        let program = task.reference_solution();
        Job {
            index: task.number() as usize,
            task_id: task.task_id.clone(),
            digest: digest(&program),
            program,
            test: task.test.clone(),
            limits: reference_limits(),
            test_budgets: Default::default(),
            guards: self.guards,
            gamed_as_official: false,
            note: None,
            later: None,
            start: Default::default(),
        }
    }

    /// The reference runs that every task in `tasks` not known yet needs, and, by task, where
    /// their results will show.
    pub(crate) fn missing(&self, tasks: &[Task]) -> (Vec<Measuring>, Pending) {
        let mut measuring = Vec::new();
        let mut pending = BTreeMap::new();
        for task in tasks {
            if self.truth.tasks.contains_key(&task.task_id) {
                continue;
            }
            let (result, rx) = watch::channel(None);
            pending.insert(task.task_id.clone(), rx);
            measuring.push(Measuring {
                job: self.reference_job(task),
                result,
            });
        }
        (measuring, pending)
    }
}

/// Reference runs under way, by task: each one's result shows on its watch when it ends (or
/// the watch closes with none, if its job died).
pub(crate) type Pending = BTreeMap<String, watch::Receiver<Option<ReferenceResult>>>;

/// A reference run to make: its job, and where its result goes.
pub(crate) struct Measuring {
    pub job: Job,
    result: watch::Sender<Option<ReferenceResult>>,
}

impl Measuring {
    /// Runs it: the result goes to whoever waits on the task, and the record comes back to
    /// be kept.
    pub(crate) async fn run(self, engine: &Engine, environment: &Environment) -> Finished {
        let record = judge(engine, environment, self.job).await;
        let _ = self.result.send(Some(ReferenceResult::of(&record)));
        Finished::Reference(record)
    }
}

/// What decides a reference run's verdict and time, besides the code: the cache's identity.
fn cache_identity(
    dataset_digest: &str,
    environment: &str,
    options: &Options,
    conditions: Conditions,
) -> Identity {
    Identity {
        dataset_digest: Some(dataset_digest.to_string()),
        environment: Some(environment.to_string()),
        network: Some(options.network),
        guards: Some(options.guards),
        conditions: Some(conditions),
        timeout_seconds: Some(REFERENCE_TIMEOUT.as_secs()),
        memory_bytes: Some(REFERENCE_MEMORY_BYTES),
        processes: Some(reference_processes()),
        ..Identity::default()
    }
}

/// The cache directory's name: everything that can change a reference's verdict or time names
/// it, so a cache kept from another setting (or an older assay) is never mistaken for this
/// one. The digest is of the identity's compact JSON, keys sorted: the name every assay since
/// the cache began has given the same settings.
fn cache_name(dataset_digest: &str, environment: &str, identity: &Identity) -> String {
    let settings = serde_json::to_value(identity).expect("identities serialize");
    let settings = blake3::hash(settings.to_string().as_bytes()).to_hex();
    format!("{dataset_digest}-{environment}-{}", &settings[..8])
}

/// The limits of a reference run (the official ground truth's).
fn reference_limits() -> Limits {
    Limits {
        wall: REFERENCE_TIMEOUT,
        memory_bytes: REFERENCE_MEMORY_BYTES,
        processes: reference_processes(),
        stack_bytes: Some(STACK_BYTES),
        ..Limits::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use assay_records::Status;
    use assay_tasks::bigcodebench::Subset;

    fn reference(status: Status, seconds: f64) -> ReferenceResult {
        ReferenceResult {
            status,
            seconds,
            reason: format!("{status}"),
            processes_peak: None,
            tests: Default::default(),
        }
    }

    #[test]
    fn the_cache_keeps_its_name_for_the_same_settings() {
        let options = Options {
            split: assay_records::Split::Complete,
            calibrated: true,
            limits: Limits::default(),
            time: assay_records::TimePolicy::DEFAULT,
            network: false,
            guards: true,
            gamed_as_official: false,
        };
        let conditions = Conditions::default();
        let mut identity = cache_identity("c6fa81716b54c153", "env-1", &options, conditions);
        identity.processes = Some(144);
        // The compact JSON with sorted keys: the same settings name the same cache in every
        // assay (the conditions joined them with the fixed listing order and seeds).
        let settings = "{\"conditions\":{\"listing\":\"hashed\",\"listing_key\":0,\"seed\":0},\
                        \"dataset_digest\":\"c6fa81716b54c153\",\"environment\":\"env-1\",\
                        \"guards\":true,\"memory_bytes\":8589934592,\"network\":false,\
                        \"processes\":144,\"timeout_seconds\":240}";
        assert_eq!(
            serde_json::to_value(&identity).unwrap().to_string(),
            settings
        );
        let hash = blake3::hash(settings.as_bytes()).to_hex();
        assert_eq!(
            cache_name("c6fa81716b54c153", "env-1", &identity),
            format!("c6fa81716b54c153-env-1-{}", &hash[..8])
        );
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
        // The reference that failed is told apart from those that could not run here.
        let unrun: Vec<bool> = tasks[1..]
            .iter()
            .map(|t| could_not_run(&failures[&t.task_id]))
            .collect();
        assert_eq!(unrun, [false, true, true]);
        assert!(!could_not_run("fail: infrastructure: test_x"));
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
}
