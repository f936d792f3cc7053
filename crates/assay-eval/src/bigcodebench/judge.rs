//! One program against its task's tests: the sandbox job, and its record.

use std::collections::BTreeMap;

use assay_records::{
    InfraCause, IsolationLevel, ReferenceResult, SampleRecord, Status, TestBudget, TimePolicy,
    RECORD_OUTPUT_BYTES,
};
use assay_sandbox::{Engine, Limits, UnittestJob};
use assay_tasks::bigcodebench::Task;

use super::options::Options;

use super::verdict::{as_official, infra_cause, official, Environment};

/// A short digest of a program: records name what they executed.
pub fn digest(program: &str) -> String {
    blake3::hash(program.as_bytes()).to_hex()[..16].to_string()
}

/// What a spawned job reports back.
pub(crate) enum Finished {
    Sample(SampleRecord),
    Reference(SampleRecord),
}

/// One program to judge against its task's tests.
pub(crate) struct Job {
    pub index: usize,
    pub task_id: String,
    pub program: String,
    pub digest: String,
    pub test: String,
    pub limits: Limits,
    /// Budgets of single tests (none: the job's limit alone).
    pub test_budgets: BTreeMap<String, TestBudget>,
    pub guards: bool,
    /// See `Options::gamed_as_official`.
    pub gamed_as_official: bool,
    /// Why the answer is empty, when the model gave none: said first in the verdict's reason.
    pub note: Option<String>,
}

impl Job {
    /// Sample `index` of task `task` running `program` (with its digest) against the task's
    /// tests, under `options`; its time limits are set by [`Job::limit`] once the reference's
    /// measurements are known.
    pub(crate) fn new(
        index: usize,
        task: &Task,
        program: (String, String),
        options: &Options,
    ) -> Job {
        let (program, digest) = program;
        Job {
            index,
            task_id: task.task_id.clone(),
            program,
            digest,
            test: task.test.clone(),
            limits: options.limits.clone(),
            test_budgets: Default::default(),
            guards: options.guards,
            gamed_as_official: options.gamed_as_official,
            note: None,
        }
    }

    /// Sets the job's time limit and its tests' budgets from the reference's measurements.
    pub(crate) fn limit(&mut self, time: &TimePolicy, measured: Option<&ReferenceResult>) {
        self.limits.wall = time.limit(measured);
        self.limits.cpu = None;
        self.test_budgets = time.test_budgets(measured);
    }
}

/// Runs one job and turns its outcome into a record.
pub(crate) async fn judge(engine: &Engine, environment: &Environment, job: Job) -> SampleRecord {
    let mut unittest = UnittestJob::new(job.program, job.test);
    unittest.limits = Some(job.limits);
    unittest.test_budgets = job.test_budgets;
    unittest.guards = job.guards;
    let mut outcome = engine.run_unittest(unittest).await;
    if job.gamed_as_official {
        as_official(&mut outcome);
    }
    let infra = infra_cause(&outcome, environment);
    SampleRecord {
        index: job.index,
        task_id: job.task_id,
        program_digest: job.digest,
        status: if infra.is_some() {
            Status::Infra
        } else {
            outcome.status
        },
        reason: {
            let reason = infra
                .as_ref()
                .map_or_else(|| outcome.reason.clone(), |c| c.to_string());
            match job.note {
                Some(note) => format!("{note}; {reason}"),
                None => reason,
            }
        },
        official: if infra.is_some() {
            None
        } else {
            official(&outcome)
        },
        infra,
        tests: outcome.tests,
        integrity: outcome.integrity,
        wall_seconds: outcome.usage.wall.as_secs_f64(),
        cpu_seconds: outcome.usage.cpu.map(|d| d.as_secs_f64()),
        memory_peak_bytes: outcome.usage.memory_peak_bytes,
        processes_peak: outcome.usage.processes_peak,
        isolation: outcome.isolation,
        stdout: outcome.stdout.capped(RECORD_OUTPUT_BYTES),
        stderr: outcome.stderr.capped(RECORD_OUTPUT_BYTES),
    }
}

/// The record of a sample the model never answered.
pub(crate) fn no_answer(
    index: usize,
    task_id: &str,
    why: &str,
    isolation: IsolationLevel,
) -> SampleRecord {
    let cause = InfraCause::NoAnswer(why.to_string());
    SampleRecord {
        index,
        task_id: task_id.to_string(),
        program_digest: String::new(),
        status: Status::Infra,
        reason: cause.to_string(),
        official: None,
        infra: Some(cause),
        tests: Vec::new(),
        integrity: Vec::new(),
        wall_seconds: 0.0,
        cpu_seconds: None,
        memory_peak_bytes: None,
        processes_peak: None,
        isolation,
        stdout: Default::default(),
        stderr: Default::default(),
    }
}
