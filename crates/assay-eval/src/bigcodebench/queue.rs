//! The samples waiting for the sandbox. Each waits for its task's reference run (whose time
//! sets its limit), then joins a queue served longest first, handed to the engine no more than
//! it runs at once: whenever answers wait for the sandbox, the slowest tasks start first
//! instead of ending the run alone, and otherwise every answer starts the moment it arrives.
//! (Answers that arrive together, a samples file's, come slowest first already: the engine
//! takes the first ones before the rest arrive.)

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use assay_records::{ReferenceResult, TimePolicy};
use assay_sandbox::Engine;
use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::{mpsc, watch};

use super::judge::{judge, Finished, Job};
use super::sample_times::SampleTimes;
use super::verdict::Environment;

/// A task's reference result, as a sample finds it.
pub(crate) enum Reference {
    /// Measured before (none: the task has no reference result, so the default limit).
    Known(Option<ReferenceResult>),
    /// Running now: its result comes on the channel.
    Pending(watch::Receiver<Option<ReferenceResult>>),
}

impl Reference {
    async fn measured(self) -> Option<ReferenceResult> {
        match self {
            Reference::Known(known) => known,
            // A reference job that died without a result leaves the default limit.
            Reference::Pending(mut rx) => rx.wait_for(Option::is_some).await.ok()?.clone(),
        }
    }
}

/// A sample's job, waiting for its reference.
pub(crate) struct Queued {
    pub job: Job,
    pub reference: Reference,
}

/// A job ready to run, and how long it is expected to take.
struct Ready {
    expected: f64,
    /// Arrival order: equal expectations run first come, first served.
    order: u64,
    job: Job,
}

impl Ord for Ready {
    fn cmp(&self, other: &Self) -> Ordering {
        self.expected
            .total_cmp(&other.expected)
            .then(other.order.cmp(&self.order))
    }
}

impl PartialOrd for Ready {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ready {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ready {}

/// How the queue runs its jobs.
pub(crate) struct Queue {
    pub engine: Engine,
    pub environment: Environment,
    pub time: TimePolicy,
    /// What earlier evaluations here took per task: with the reference's time, the order.
    pub times: SampleTimes,
}

impl Queue {
    /// Runs every job `queued` brings, sending each record to `done`, until `queued` closes
    /// and the last job has ended. Meant for a task of its own: the jobs are polled here,
    /// never held up by whoever writes their records.
    pub(crate) async fn serve(
        self,
        mut queued: mpsc::UnboundedReceiver<Queued>,
        done: mpsc::UnboundedSender<Finished>,
    ) {
        let Queue {
            engine,
            environment,
            time,
            times,
        } = self;
        let at_once = engine.max_running();
        let mut waiting = FuturesUnordered::new();
        let mut ready = BinaryHeap::new();
        let mut running = FuturesUnordered::new();
        let mut open = true;
        let mut arrived = 0u64;
        loop {
            while running.len() < at_once {
                let Some(Ready { job, .. }) = ready.pop() else {
                    break;
                };
                running.push(judge(&engine, &environment, job));
            }
            if !open && waiting.is_empty() && ready.is_empty() && running.is_empty() {
                return;
            }
            tokio::select! {
                next = queued.recv(), if open => match next {
                    Some(Queued { job, reference }) => {
                        arrived += 1;
                        let order = arrived;
                        waiting.push(async move { (job, order, reference.measured().await) });
                    }
                    None => open = false,
                },
                Some((mut job, order, measured)) = waiting.next(), if !waiting.is_empty() => {
                    job.limit(&time, measured.as_ref());
                    let expected = times.expected(&job.task_id, measured.map(|r| r.seconds));
                    ready.push(Ready { expected, order, job });
                }
                Some(record) = running.next(), if !running.is_empty() => {
                    // Nobody left to keep verdicts (the judging stopped): start nothing more.
                    if done.send(Finished::Sample(record)).is_err() {
                        return;
                    }
                }
            }
        }
    }
}
