//! Judging answers one at a time, as a service is asked for them (`assay serve`): each with
//! the official semantics and the time budget an evaluation would give it, the task's
//! reference run measured the first time any answer to it needs one and shared from then on,
//! through the same cache `assay eval` and `assay check` keep.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use assay_records::{ReferenceResult, SampleRecord};
use assay_sandbox::Engine;
use assay_tasks::bigcodebench::{Dataset, Subset, Task};
use tokio::sync::watch;

use super::ground_truth::References;
use super::judge::{digest, judge, later_limits, Job};
use super::options::Options;
use super::queue::Reference;
use super::samples::program;
use super::verdict::Environment;
use crate::error::EvalError;

/// Why an answer could not be judged.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// No such dataset version.
    #[error("{0}")]
    Dataset(#[from] assay_tasks::Error),
    /// The dataset has no such task.
    #[error("BigCodeBench {version} has no task `{task_id}`")]
    UnknownTask {
        /// The version asked for.
        version: String,
        /// The task asked for.
        task_id: String,
    },
    /// The environment could not be probed, or the reference cache opened.
    #[error(transparent)]
    Eval(#[from] EvalError),
}

/// A judged answer: its record, and the time budget it ran under.
#[derive(Debug, Clone)]
pub struct Verification {
    /// The verdict, as `results.jsonl` holds it.
    pub record: SampleRecord,
    /// The whole job's wall-clock limit.
    pub time_limit: Duration,
    /// The task's reference run, whose time set the budgets (none: it has none).
    pub reference: Option<ReferenceResult>,
}

/// Judges answers to the embedded BigCodeBench tasks on demand. Cheap to share; every method
/// takes `&self`.
pub struct Verifier {
    engine: Engine,
    options: Options,
    /// The longest any answer may run, whatever its budget.
    max_wall: Duration,
    cache: PathBuf,
    environment_key: String,
    /// Each dataset version once asked for: loaded, probed, its reference cache open.
    datasets: tokio::sync::Mutex<BTreeMap<String, Arc<Loaded>>>,
}

/// One dataset version, ready to judge answers to.
struct Loaded {
    dataset: Dataset,
    environment: Environment,
    /// The reference results: read when an answer arrives, written when a reference ends.
    /// Locked before `measuring` wherever both are held.
    references: Mutex<References>,
    /// References running now, by task: answers to the same task wait on one run.
    measuring: Mutex<HashMap<String, watch::Receiver<Option<ReferenceResult>>>>,
}

impl Verifier {
    /// A verifier over `engine`, judging with `options` (its `calibrated` is the default of
    /// [`Verifier::verify`]'s callers, not used here), its reference results kept under
    /// `cache` for the environment named `environment_key`; no answer runs longer than
    /// `max_wall` (a service's maximum), whatever its budget.
    pub fn new(
        engine: Engine,
        options: Options,
        cache: PathBuf,
        environment_key: String,
        max_wall: Duration,
    ) -> Self {
        Verifier {
            engine,
            options,
            max_wall,
            cache,
            environment_key,
            datasets: tokio::sync::Mutex::new(BTreeMap::new()),
        }
    }

    /// Loads dataset `version` (the first time: probes which of its libraries the
    /// environment lacks and opens its reference cache), so that the first answer does not
    /// wait for it.
    pub async fn load(&self, version: &str) -> Result<(), VerifyError> {
        self.loaded(version).await.map(|_| ())
    }

    async fn loaded(&self, version: &str) -> Result<Arc<Loaded>, VerifyError> {
        let mut datasets = self.datasets.lock().await;
        if let Some(loaded) = datasets.get(version) {
            return Ok(loaded.clone());
        }
        let dataset = Dataset::embedded(version, Subset::Full)?;
        let environment = Environment::probe(&self.engine, &dataset, self.options.network).await?;
        let references = References::open(
            &self.cache,
            &dataset,
            &self.environment_key,
            &self.options,
            self.engine.conditions(),
        )
        .map_err(EvalError::from)?;
        let loaded = Arc::new(Loaded {
            dataset,
            environment,
            references: Mutex::new(references),
            measuring: Mutex::new(HashMap::new()),
        });
        datasets.insert(version.to_string(), loaded.clone());
        Ok(loaded)
    }

    /// How long an answer to `task_id` of dataset `version` is expected to take, in seconds,
    /// as far as is known here (0 when nothing is): what orders a batch longest first, as an
    /// evaluation orders its samples, so that the slowest tasks do not end it alone.
    pub async fn expected_seconds(&self, version: &str, task_id: &str) -> f64 {
        match self.loaded(version).await {
            Ok(loaded) => loaded
                .references
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .expected_seconds(task_id),
            Err(_) => 0.0,
        }
    }

    /// Task `task_id` of dataset `version`.
    pub async fn task(&self, version: &str, task_id: &str) -> Result<Task, VerifyError> {
        let loaded = self.loaded(version).await?;
        loaded
            .dataset
            .get(task_id)
            .cloned()
            .ok_or_else(|| VerifyError::UnknownTask {
                version: version.to_string(),
                task_id: task_id.to_string(),
            })
    }

    /// Judges `solution` (a whole program) against `task` of dataset `version`, behind the
    /// calibration prefix if `calibrated`, under the budget its reference's time gives;
    /// `note` (why the answer is empty) is said first in the reason. Dropping the future
    /// kills the job; a reference run it started goes on for the answers to come.
    pub async fn verify(
        &self,
        version: &str,
        task: &Task,
        solution: &str,
        calibrated: bool,
        note: Option<String>,
    ) -> Result<Verification, VerifyError> {
        let loaded = self.loaded(version).await?;
        let executed = program(solution, task, calibrated);
        let digest = digest(&executed);
        let mut job = Job::new(0, task, (executed, digest), &self.options);
        job.note = note;
        let time = &self.options.time;
        // The answer starts at once; a reference still running sets its limits when it ends.
        let reference = self.reference(&loaded, task);
        match &reference {
            Reference::Known(known) => {
                job.limit(time, known.as_ref());
                job.limits.wall = job.limits.wall.min(self.max_wall);
            }
            Reference::Pending(rx) => {
                let later = later_limits(time, rx.clone(), self.max_wall);
                job.limit_later(time, later, self.max_wall);
            }
        }
        let record = judge(&self.engine, &loaded.environment, job).await;
        // The verdict waited for the reference, which is known by now.
        let reference = match reference {
            Reference::Known(known) => known,
            Reference::Pending(mut rx) => rx
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|r| r.clone()),
        };
        Ok(Verification {
            record,
            time_limit: time.limit(reference.as_ref()).min(self.max_wall),
            reference,
        })
    }

    /// The reference result of `task`: known, or being measured (by this call, or by an
    /// earlier one).
    fn reference(&self, loaded: &Arc<Loaded>, task: &Task) -> Reference {
        let references = loaded
            .references
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(known) = references.truth.tasks.get(&task.task_id) {
            return Reference::Known(Some(known.clone()));
        }
        let mut measuring = loaded
            .measuring
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(running) = measuring.get(&task.task_id) {
            return Reference::Pending(running.clone());
        }
        let (tx, rx) = watch::channel(None);
        measuring.insert(task.task_id.clone(), rx.clone());
        let job = references.reference_job(task);
        let (engine, loaded) = (self.engine.clone(), loaded.clone());
        tokio::spawn(async move {
            let record = judge(&engine, &loaded.environment, job).await;
            let result = ReferenceResult::of(&record);
            {
                let mut references = loaded
                    .references
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                if let Err(e) = references.record(&record) {
                    tracing::warn!("keeping the reference result of {}: {e}", record.task_id);
                }
                loaded
                    .measuring
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&record.task_id);
            }
            let _ = tx.send(Some(result));
        });
        Reference::Pending(rx)
    }
}
