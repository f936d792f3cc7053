//! One program against its task's tests: the sandbox job, and its record.

use std::collections::BTreeMap;

use assay_records::{
    InfraCause, IsolationLevel, ReferenceResult, RunEvent, SampleRecord, Status, TestBudget,
    TimePolicy, RECORD_OUTPUT_BYTES,
};
use std::time::Duration;

use assay_sandbox::{
    Engine, LaterLimits, Limits, Start, TimeLimits, UnittestJob, UnittestOutcome, Unsettled,
};
use assay_tasks::bigcodebench::Task;
use tokio::sync::watch;

use super::options::Options;

use super::verdict::{as_official, infra_cause, official, Environment};

/// A short digest of a program: records name what they executed.
pub fn digest(program: &str) -> String {
    blake3::hash(program.as_bytes()).to_hex()[..16].to_string()
}

/// What a spawned job reports back.
pub(crate) enum Finished {
    /// A job started: which task's, whether its reference run, and how long it is expected
    /// to take (0: not known).
    Started {
        task_id: String,
        reference: bool,
        expected: f64,
    },
    Sample(SampleRecord),
    Reference(SampleRecord),
}

impl Finished {
    /// The event a job's start is, for the listener.
    pub(crate) fn started_event(task_id: String, reference: bool, expected: f64) -> RunEvent {
        RunEvent::JobStarted {
            task_id,
            reference,
            expected_seconds: (expected > 0.0).then_some(expected),
        }
    }
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
    /// Time limits still to come (see [`Job::limit_later`]).
    pub later: Option<LaterLimits>,
    /// How long it is expected to take (the engine starts the longest first), and whom to
    /// tell when it starts.
    pub start: Start,
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
            later: None,
            start: Start::default(),
        }
    }

    /// Sets the job's time limit and its tests' budgets from the reference's measurements.
    pub(crate) fn limit(&mut self, time: &TimePolicy, measured: Option<&ReferenceResult>) {
        self.limits.wall = time.limit(measured);
        self.limits.cpu = None;
        self.test_budgets = time.test_budgets(measured);
    }

    /// Sets the job's limits for a reference still running: the job starts at once under the
    /// widest limits `time` could give it, no more than `max_wall`, and takes `later`'s (see
    /// [`later_limits`]) as soon as the reference ends.
    pub(crate) fn limit_later(
        &mut self,
        time: &TimePolicy,
        later: Option<LaterLimits>,
        max_wall: Duration,
    ) {
        self.limit(time, None);
        self.limits.wall = self.limits.wall.min(max_wall);
        self.later = later;
    }

    /// The sandbox's job, and what its record says besides the outcome.
    fn split(self) -> (UnittestJob, Label) {
        let mut unittest = UnittestJob::new(self.program, self.test);
        unittest.limits = Some(self.limits);
        unittest.test_budgets = self.test_budgets;
        unittest.later_limits = self.later;
        unittest.start = self.start;
        unittest.guards = self.guards;
        let label = Label {
            index: self.index,
            task_id: self.task_id,
            digest: self.digest,
            gamed_as_official: self.gamed_as_official,
            note: self.note,
        };
        (unittest, label)
    }
}

/// The limits `time` gives a task once its reference's result comes on `reference`, no more
/// than `max_wall` (see `assay_sandbox::TimeLimits`), for every job of the task that starts
/// before: none when they do not depend on the reference.
pub(crate) fn later_limits(
    time: &TimePolicy,
    mut reference: watch::Receiver<Option<ReferenceResult>>,
    max_wall: Duration,
) -> Option<LaterLimits> {
    if !time.follows_reference() {
        return None;
    }
    let (limits, later) = watch::channel(None);
    let time = time.clone();
    tokio::spawn(async move {
        // A reference job that died without a result leaves the limits the jobs have.
        let Ok(measured) = reference.wait_for(Option::is_some).await else {
            return;
        };
        let measured = measured.clone();
        let _ = limits.send(Some(TimeLimits {
            wall: time.limit(measured.as_ref()).min(max_wall),
            test_budgets: time.test_budgets(measured.as_ref()),
        }));
    });
    Some(later)
}

/// What a job's record says besides its outcome.
pub(crate) struct Label {
    index: usize,
    task_id: String,
    digest: String,
    gamed_as_official: bool,
    note: Option<String>,
}

/// A job whose process is gone: its record, or, if it ended before its time limits arrived,
/// what waits for them.
#[allow(
    clippy::large_enum_variant,
    reason = "one per job, handed over at once, never kept in bulk"
)]
pub(crate) enum Provisional {
    Record(SampleRecord),
    Unsettled(Box<Unsettled>, Label),
}

/// Runs one job and turns its outcome into a record.
pub(crate) async fn judge(engine: &Engine, environment: &Environment, job: Job) -> SampleRecord {
    let (unittest, label) = job.split();
    label.record(engine.run_unittest(unittest).await, environment)
}

/// Runs one job like [`judge`], but returns as soon as its process is gone (see
/// `Engine::run_unittest_provisional`).
pub(crate) async fn judge_provisional(
    engine: &Engine,
    environment: &Environment,
    job: Job,
) -> Provisional {
    let (unittest, label) = job.split();
    match engine.run_unittest_provisional(unittest).await {
        assay_sandbox::Provisional::Final(outcome) => {
            Provisional::Record(label.record(outcome, environment))
        }
        assay_sandbox::Provisional::AwaitingLimits(unsettled) => {
            Provisional::Unsettled(unsettled, label)
        }
    }
}

impl Label {
    /// The record of the job's `outcome`.
    pub(crate) fn record(
        self,
        mut outcome: UnittestOutcome,
        environment: &Environment,
    ) -> SampleRecord {
        let job = self;
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
