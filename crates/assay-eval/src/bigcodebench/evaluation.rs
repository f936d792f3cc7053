//! Judging a samples file: every sample a sandbox job, every verdict a record appended to the
//! run directory as it finishes, the reference runs on the way, and at the end the official
//! files and a summary.

use std::collections::{BTreeMap, HashMap};

use assay_records::{
    EvalSummary, GenerationTotals, GroundTruthSummary, IsolationLevel, Listener, ReferenceResult,
    RunEvent, SampleRecord, Split, TimePolicy,
};
use assay_rundir::{RunDir, RunDirError, SUMMARY};
use assay_sandbox::Engine;
use assay_tasks::bigcodebench::{Dataset, Task};
use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::mpsc;

use super::ground_truth::References;
use super::judge::{digest, judge, no_answer, Job};
use super::official_files::Written;
use super::options::Options;
use super::samples::{Sample, Samples};
use super::summary::{scores, summarize};
use super::verdict::Environment;
use crate::error::EvalError;
use crate::resume::{reuse, Wanted};

/// What a spawned job reports back.
pub(crate) enum Finished {
    Sample(SampleRecord),
    Reference(SampleRecord),
}

impl Finished {
    fn event(self) -> RunEvent {
        match self {
            Finished::Sample(record) => RunEvent::SampleJudged {
                record: Box::new(record),
            },
            Finished::Reference(record) => RunEvent::ReferenceJudged {
                record: Box::new(record),
            },
        }
    }
}

/// One evaluation: samples of a dataset, run on an engine.
pub struct Evaluation<'a> {
    /// Runs the jobs.
    pub engine: &'a Engine,
    /// The tasks.
    pub dataset: &'a Dataset,
    /// The samples to judge.
    pub samples: &'a Samples,
    /// How.
    pub options: &'a Options,
    /// What the environment lacks.
    pub environment: &'a Environment,
    /// The model's name in `pass_at_k.json`.
    pub model: &'a str,
    /// Samples the model never answered (task id, why): `infra` verdicts, kept out of
    /// `results.jsonl` because a resumed run asks the model again.
    pub unanswered: &'a [(String, String)],
    /// Samples (by index) whose answer is empty because their prompt did not fit the model's
    /// context window, with why: judged as the empty answers they are, the why said first in
    /// their reason.
    pub empty_answers: &'a BTreeMap<usize, String>,
    /// What generating the samples cost, when this run generated them.
    pub generation: Option<&'a GenerationTotals>,
}

/// Where a run's events are written before listeners hear them.
struct Journals<'a> {
    /// The run's `results.jsonl`; none when only references run.
    run: Option<&'a mut RunDir>,
    /// The ground-truth cache.
    references: &'a mut References,
}

impl Journals<'_> {
    fn write(&mut self, event: &RunEvent) -> Result<(), EvalError> {
        match (event, self.run.as_mut()) {
            (RunEvent::SampleJudged { record }, Some(run)) => run.append(record)?,
            (RunEvent::SampleJudged { record }, None) => {
                return Err(EvalError::Unjudged(format!(
                    "a verdict for {} came with no run directory to keep it",
                    record.task_id
                )))
            }
            (RunEvent::ReferenceJudged { record }, _) => self.references.record(record)?,
            _ => {}
        }
        Ok(())
    }
}

/// Runs the reference solutions of `dataset` not measured yet (`assay check`; an evaluation
/// does the same on the way), telling `listener`.
pub async fn check(
    engine: &Engine,
    dataset: &Dataset,
    environment: &Environment,
    references: &mut References,
    listener: &mut dyn Listener,
) -> Result<assay_records::GroundTruthSummary, EvalError> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let pending = references.spawn_missing(engine, environment, &dataset.tasks, &tx);
    drop(tx);
    listener.on_event(&RunEvent::JudgingStarted {
        samples: 0,
        done: 0,
        references: pending.len(),
    });
    let mut journals = Journals {
        run: None,
        references: &mut *references,
    };
    while let Some(finished) = rx.recv().await {
        let event = finished.event();
        journals.write(&event)?;
        listener.on_event(&event);
    }
    references.sync()?;
    listener.on_event(&RunEvent::JudgingFinished);
    Ok(references.summary(&dataset.tasks))
}

impl Evaluation<'_> {
    /// Evaluates the samples not yet in `records`, appending each verdict to `run` as it
    /// finishes, then writes `eval_results.json`, `pass_at_k.json` and `summary.json`. Reference solutions
    /// not measured yet run on the way, into `references`; a task's samples wait for its
    /// reference only, which sets their time limit.
    pub async fn run(
        &self,
        run: &mut RunDir,
        records: Vec<SampleRecord>,
        references: &mut References,
        listener: &mut dyn Listener,
    ) -> Result<Judged, EvalError> {
        let Evaluation {
            engine,
            dataset,
            samples,
            options,
            environment,
            unanswered,
            empty_answers,
            model,
            generation,
        } = *self;
        let started = std::time::Instant::now();
        let tasks: HashMap<&str, &Task> = dataset.by_id();
        let programs = programs(samples, &tasks, options.calibrated);
        let mut results = reuse(
            records,
            samples.samples.iter().map(|s| Wanted {
                index: s.index,
                task_id: &s.task_id,
                digest: &programs[s.index].1,
            }),
        );
        let (tx, mut rx) = mpsc::unbounded_channel::<Finished>();
        let waiting = references.spawn_missing(engine, environment, &dataset.tasks, &tx);
        let unjudged = samples.samples.iter();
        let pending: Vec<(&Sample, Option<ReferenceResult>)> = longest_first(
            references,
            unjudged.filter(|s| !results.contains_key(&s.index)),
        )
        .into_iter()
        .map(|(sample, measured)| (sample, measured.cloned()))
        .collect();
        // One task polls every sample's job, first in this order, so that they queue for the
        // engine's slots in it. (A task spawned per sample would reach the queue in whatever
        // order the runtime first polls them: not longest first.)
        let mut jobs = FuturesUnordered::new();
        listener.on_event(&RunEvent::JudgingStarted {
            samples: samples.samples.len(),
            done: results.len(),
            references: waiting.len(),
        });
        for (sample, known) in pending {
            let task = tasks[sample.task_id.as_str()];
            let mut job = Job::new(sample, task, programs[sample.index].clone(), options);
            let mut reference = waiting.get(&sample.task_id).cloned();
            let (engine, environment, tx, time) = (
                engine.clone(),
                environment.clone(),
                tx.clone(),
                options.time.clone(),
            );
            jobs.push(async move {
                let measured = match reference.as_mut() {
                    Some(rx) => rx
                        .wait_for(Option::is_some)
                        .await
                        .ok()
                        .and_then(|r| r.clone()),
                    None => known,
                };
                job.limit(&time, measured.as_ref());
                let _ = tx.send(Finished::Sample(judge(&engine, &environment, job).await));
            });
        }
        tokio::spawn(async move { while jobs.next().await.is_some() {} });
        drop(tx);
        let mut journals = Journals {
            run: Some(&mut *run),
            references: &mut *references,
        };
        while let Some(mut finished) = rx.recv().await {
            if let Finished::Sample(record) = &mut finished {
                if let Some(why) = empty_answers.get(&record.index) {
                    record.reason = format!("{why}; {}", record.reason);
                }
            }
            let event = finished.event();
            journals.write(&event)?;
            listener.on_event(&event);
            if let RunEvent::SampleJudged { record } = event {
                results.insert(record.index, *record);
            }
        }
        // A job task that died (a panic) sent nothing: its samples have no verdict, and the
        // figures would quietly cover fewer samples.
        let unjudged = samples.samples.len() - results.len();
        if unjudged > 0 {
            run.sync()?;
            return Err(EvalError::Unjudged(format!(
                "{unjudged} samples got no verdict (a job failed inside assay); rerun the same \
                 command to judge them"
            )));
        }
        // One record per sample, in sample order: records an earlier run made for samples
        // that have since moved (or gone) are renumbered (or dropped).
        run.rewrite_results(&results.values().collect::<Vec<_>>())?;
        references.sync()?;
        references.remember_sample_times(results.values())?;
        let ground_truth = references.summary(&dataset.tasks);
        let summary = conclude(
            run,
            Concluded {
                dataset,
                samples,
                split: options.split,
                calibrated: options.calibrated,
                time_policy: options.time.clone(),
                model,
                results: results.clone(),
                unanswered,
                isolation: engine.isolation().level,
                ground_truth,
                generation,
                wall: started.elapsed(),
            },
        )?;
        listener.on_event(&RunEvent::JudgingFinished);
        Ok(Judged { summary, results })
    }

    /// Runs the samples at `indexes` again (a stability round: `engine` under other
    /// conditions), longest first as [`Evaluation::run`] orders them, with the limits their
    /// references set, handing each record to `finished` as it comes. Every reference must be
    /// measured already.
    pub async fn rerun(
        &self,
        indexes: &[usize],
        references: &References,
        mut finished: impl FnMut(SampleRecord) -> Result<(), EvalError>,
    ) -> Result<(), EvalError> {
        let tasks: HashMap<&str, &Task> = self.dataset.by_id();
        let programs = programs(self.samples, &tasks, self.options.calibrated);
        let chosen = indexes.iter().filter_map(|&i| self.samples.samples.get(i));
        // Polled from this one task, in this order: they queue for the slots in it.
        let mut jobs = FuturesUnordered::new();
        for (sample, measured) in longest_first(references, chosen) {
            let task = tasks[sample.task_id.as_str()];
            let mut job = Job::new(sample, task, programs[sample.index].clone(), self.options);
            job.limit(&self.options.time, measured);
            jobs.push(judge(self.engine, self.environment, job));
        }
        while let Some(record) = jobs.next().await {
            finished(record)?;
        }
        Ok(())
    }
}

/// `samples` longest first, each with its task's reference result if measured: by the
/// reference's time or the task's samples' in earlier evaluations here, whichever is longer, so
/// that the slowest tasks start early instead of ending the run alone.
fn longest_first<'s, 'r>(
    references: &'r References,
    samples: impl Iterator<Item = &'s Sample>,
) -> Vec<(&'s Sample, Option<&'r ReferenceResult>)> {
    let mut ordered: Vec<_> = samples
        .map(|s| (s, references.truth.tasks.get(&s.task_id)))
        .collect();
    let expected = |(sample, reference): &(&Sample, Option<&ReferenceResult>)| {
        let times = &references.sample_times;
        times.expected(&sample.task_id, reference.map(|r| r.seconds))
    };
    ordered.sort_by(|a, b| expected(b).total_cmp(&expected(a)));
    ordered
}

/// What an evaluation came to: its figures and every sample's record, by index.
pub struct Judged {
    /// The figures (`summary.json`).
    pub summary: EvalSummary,
    /// Every sample's record, by index (the unanswered apart).
    pub results: BTreeMap<usize, SampleRecord>,
}

/// What an evaluation's derived files are made from: the records of its samples and what they
/// answer. An evaluation concludes with it, and so does a merge of shards (whose records were
/// judged elsewhere).
pub struct Concluded<'a> {
    /// The tasks.
    pub dataset: &'a Dataset,
    /// The samples judged, in file order.
    pub samples: &'a Samples,
    /// The prompt style.
    pub split: Split,
    /// Whether solutions were calibrated.
    pub calibrated: bool,
    /// The time policy (for the summary).
    pub time_policy: TimePolicy,
    /// The model's name in `pass_at_k.json`.
    pub model: &'a str,
    /// Every sample's record, by index.
    pub results: BTreeMap<usize, SampleRecord>,
    /// Samples the model never answered (task, why), numbered after the samples.
    pub unanswered: &'a [(String, String)],
    /// The isolation the unanswered samples' records name.
    pub isolation: IsolationLevel,
    /// The reference solutions' figures over the tasks.
    pub ground_truth: GroundTruthSummary,
    /// What generating the samples cost, when the run generated them.
    pub generation: Option<&'a GenerationTotals>,
    /// The judging's wall time.
    pub wall: std::time::Duration,
}

/// Writes `eval_results.json`, `pass_at_k.json` and `summary.json` from the records alone.
pub fn conclude(run: &RunDir, concluded: Concluded) -> Result<EvalSummary, RunDirError> {
    let Concluded {
        dataset,
        samples,
        split,
        calibrated,
        time_policy,
        model,
        mut results,
        unanswered,
        isolation,
        ground_truth,
        generation,
        wall,
    } = concluded;
    let tasks: HashMap<&str, &Task> = dataset.by_id();
    let programs = programs(samples, &tasks, calibrated);
    // Samples the model never answered are `infra`: in both figures, as in the summary.
    for (i, (task_id, why)) in unanswered.iter().enumerate() {
        let index = samples.samples.len() + i;
        results.insert(index, no_answer(index, task_id, why, isolation));
    }
    let scores = scores(&results);
    Written {
        dataset,
        samples,
        split,
        calibrated,
        model,
        programs: &programs,
        results: &results,
        scores: &scores,
        ground_truth: &ground_truth,
    }
    .write(run)?;
    let mut summary = summarize(dataset, &results, scores, ground_truth, time_policy, wall);
    if let Some(totals) = generation {
        summary.tokens = Some(totals.usage.clone());
        summary.cost_usd = totals.cost_usd;
        summary.context = (!totals.context.is_zero()).then_some(totals.context);
    }
    run.write_json(SUMMARY, &summary)?;
    Ok(summary)
}

/// The program each sample runs and its digest, by sample index.
fn programs(
    samples: &Samples,
    tasks: &HashMap<&str, &Task>,
    calibrated: bool,
) -> Vec<(String, String)> {
    samples
        .samples
        .iter()
        .map(|sample| {
            let program = sample.program(tasks[sample.task_id.as_str()], calibrated);
            let digest = digest(&program);
            (program, digest)
        })
        .collect()
}
