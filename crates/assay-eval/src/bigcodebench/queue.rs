//! The work for the sandbox: the samples, and the reference runs that set their budgets, each
//! handed to the engine the moment it is known, with how long it is expected to take: the
//! engine starts the longest first whenever work waits for it, so that the slowest tasks do
//! not end the run alone, and otherwise everything starts as it arrives.
//!
//! No sample waits for its task's reference: one whose reference is still running starts
//! under the widest limits the time policy could give it, and takes the reference's as soon
//! as it ends (see `assay_sandbox::TimeLimits`), so that a first run's slowest task runs its
//! reference and its samples side by side rather than one after the other. A sample that ends
//! before its reference has its verdict settled when the reference does.
//!
//! Samples are taken from the judging only while the engine has room for them: twice the jobs
//! it runs at once, handed over and waiting (the references, one per task, all at once). The
//! engine never idles for want of work, and what waits is never more than a few jobs, however
//! many samples the run has: the judging hands them in the order it wants them run.

use std::collections::HashMap;
use std::time::Duration;

use assay_records::{ReferenceResult, TimePolicy};
use assay_sandbox::{Engine, Start};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use super::ground_truth::Measuring;
use super::judge::{judge_provisional, later_limits, Finished, Job, Provisional};
use super::sample_times::SampleTimes;
use super::verdict::Environment;

/// A task's reference result, as a sample finds it.
pub(crate) enum Reference {
    /// Measured before (none: the task has no reference result, so the default limit).
    Known(Option<ReferenceResult>),
    /// Running now: its result comes on the channel.
    Pending(watch::Receiver<Option<ReferenceResult>>),
}

/// A sample's job, and its task's reference.
pub(crate) struct Queued {
    pub job: Job,
    pub reference: Reference,
}

/// Samples handed to the engine and not ended, at most, per job it runs at once.
const WINDOW_PER_RUNNING: usize = 2;

/// Work handed to the engine.
struct Handing {
    engine: Engine,
    environment: Environment,
    /// Where jobs say they started.
    starts: mpsc::UnboundedSender<u64>,
    /// The task, kind and expected time of each job not started yet, by the id its start is
    /// told with.
    waiting: HashMap<u64, (String, bool, f64)>,
    /// The next job's id.
    next: u64,
}

impl Handing {
    /// Has `job` (a reference's run or not), expected to take `expected` seconds, tell its
    /// start.
    fn announce(&mut self, job: &mut Job, reference: bool, expected: f64) {
        job.start = Start {
            expected_seconds: expected,
            signal: Some((self.starts.clone(), self.next)),
        };
        self.waiting
            .insert(self.next, (job.task_id.clone(), reference, expected));
        self.next += 1;
    }

    /// A reference's run, expected to take `expected` seconds, to run in `running`: each job
    /// a task of its own, so that its supervision (its pipes, its meter) runs on any of the
    /// runtime's threads, not all of them on the queue's; dropping `running` kills them all.
    fn reference(
        &mut self,
        running: &mut JoinSet<Finished>,
        mut measuring: Measuring,
        expected: f64,
    ) {
        self.announce(&mut measuring.job, true, expected);
        let (engine, environment) = (self.engine.clone(), self.environment.clone());
        running.spawn(async move { measuring.run(&engine, &environment).await });
    }

    /// A sample's job, as [`Handing::reference`] hands a reference's.
    fn sample(&mut self, running: &mut JoinSet<Provisional>, mut job: Job, expected: f64) {
        self.announce(&mut job, false, expected);
        let (engine, environment) = (self.engine.clone(), self.environment.clone());
        running.spawn(async move { judge_provisional(&engine, &environment, job).await });
    }
}

/// How the queue runs its work.
pub(crate) struct Queue {
    pub engine: Engine,
    pub environment: Environment,
    pub time: TimePolicy,
    /// What earlier evaluations here took per task: with the reference's time, the order.
    pub times: SampleTimes,
}

impl Queue {
    /// Runs `references` and every sample `queued` brings, sending each record to `done` (and
    /// each job's start), until `queued` closes and the last job has ended. Meant for a task
    /// of its own: the jobs are polled here, never held up by whoever writes their records.
    pub(crate) async fn serve(
        self,
        references: Vec<Measuring>,
        mut queued: mpsc::Receiver<Queued>,
        done: mpsc::UnboundedSender<Finished>,
    ) {
        let Queue {
            engine,
            environment,
            time,
            times,
        } = self;
        let (starts, mut started) = mpsc::unbounded_channel();
        let mut handing = Handing {
            engine: engine.clone(),
            environment: environment.clone(),
            starts,
            waiting: HashMap::new(),
            next: 0,
        };
        let window = WINDOW_PER_RUNNING * engine.max_running();
        // Apart, so that the samples' count the window.
        let (mut references_running, mut samples_running) = (JoinSet::new(), JoinSet::new());
        // Longest first: the first to arrive start before the engine orders the rest.
        let mut references: Vec<(f64, Measuring)> = references
            .into_iter()
            .map(|m| (times.expected(&m.job.task_id, None), m))
            .collect();
        references.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (expected, measuring) in references {
            handing.reference(&mut references_running, measuring, expected);
        }
        // Samples that ended before their reference: their verdicts wait for it, holding
        // nothing of the engine.
        let mut settling = JoinSet::new();
        // The limits of tasks whose reference runs, as they will come.
        let mut later = HashMap::new();
        let mut open = true;
        loop {
            let running = references_running.len() + samples_running.len();
            if !open && running == 0 && settling.is_empty() {
                return;
            }
            // Biased, starts first: a job's start is told before its record.
            let finished = tokio::select! {
                biased;
                Some(id) = started.recv() => {
                    let Some((task_id, reference, expected)) = handing.waiting.remove(&id) else {
                        continue;
                    };
                    Finished::Started { task_id, reference, expected }
                }
                next = queued.recv(), if open && samples_running.len() < window => {
                    match next {
                        Some(Queued { mut job, reference }) => {
                            let expected = match reference {
                                Reference::Known(measured) => {
                                    job.limit(&time, measured.as_ref());
                                    times.expected(&job.task_id, measured.map(|r| r.seconds))
                                }
                                Reference::Pending(rx) => {
                                    // One watch per task, shared by its samples.
                                    let later = later
                                        .entry(job.task_id.clone())
                                        .or_insert_with(|| later_limits(&time, rx, Duration::MAX))
                                        .clone();
                                    job.limit_later(&time, later, Duration::MAX);
                                    times.expected(&job.task_id, None)
                                }
                            };
                            handing.sample(&mut samples_running, job, expected);
                        }
                        None => open = false,
                    }
                    continue;
                }
                Some(ran) = references_running.join_next(), if !references_running.is_empty() => {
                    match ran {
                        Ok(finished) => finished,
                        Err(e) => {
                            tracing::error!("a reference's task failed: {e}");
                            continue;
                        }
                    }
                }
                Some(ran) = samples_running.join_next(), if !samples_running.is_empty() => match ran {
                    Ok(Provisional::Record(record)) => Finished::Sample(record),
                    Ok(Provisional::Unsettled(unsettled, label)) => {
                        let environment = environment.clone();
                        settling.spawn(async move {
                            label.record(unsettled.settle().await, &environment)
                        });
                        continue;
                    }
                    // A job task that died sent nothing: its sample is counted unjudged at
                    // the end, and rerunning judges it.
                    Err(e) => {
                        tracing::error!("a judging task failed: {e}");
                        continue;
                    }
                },
                Some(settled) = settling.join_next(), if !settling.is_empty() => match settled {
                    Ok(record) => Finished::Sample(record),
                    Err(e) => {
                        tracing::error!("a judging task failed: {e}");
                        continue;
                    }
                }
            };
            // Nobody left to keep verdicts (the judging stopped): start nothing more.
            if done.send(finished).is_err() {
                return;
            }
        }
    }
}
