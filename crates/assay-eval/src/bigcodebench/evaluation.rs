//! Judging answers: each a sandbox job once the engine has room for it (a samples file read
//! one sample at a time, or answers one by one while the model still answers the others), the
//! slowest to judge first; every verdict a record appended to the run directory as it
//! finishes, the reference runs on the way; at the end the records matched to the samples
//! file, and the official files and a summary.
//!
//! Nothing here holds every sample or every record: answers are taken only while the engine
//! has room for them (see `queue`), records stay on disk once written, and the figures are
//! counted from them one at a time, so that a run's memory is the same at any number of
//! samples.

use std::collections::{BTreeMap, BinaryHeap, HashMap};

use assay_records::{
    Answer, EvalSummary, GenerationTotals, GroundTruthSummary, IsolationLevel, Listener,
    ReferenceResult, RunEvent, SampleRecord, Split, TimePolicy,
};
use assay_rundir::{RunDir, RunDirError, RESULTS, SUMMARY};
use assay_sandbox::Engine;
use assay_tasks::bigcodebench::{Dataset, Task};
use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::mpsc;

use super::ground_truth::References;
use super::judge::{digest, judge, no_answer, Finished, Job};
use super::official_files::{ByTask, Written};
use super::options::Options;
use super::queue::{Queue, Queued, Reference};
use super::samples::{program, Reader, Sample, Samples};
use super::summary::Tally;
use super::verdict::Environment;
use crate::error::EvalError;
use crate::records::{each_line, RecordFile, Span};
use crate::resume::{locate, reuse, Earlier, RecordKey, Wanted};

/// What judging runs on: the engine, the tasks, how, and what the environment lacks.
#[derive(Clone, Copy)]
pub struct Judging<'a> {
    /// Runs the jobs.
    pub engine: &'a Engine,
    /// The tasks.
    pub dataset: &'a Dataset,
    /// How.
    pub options: &'a Options,
    /// What the environment lacks.
    pub environment: &'a Environment,
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
    let (done, mut rx) = mpsc::unbounded_channel();
    let (measuring, _) = references.missing(&dataset.tasks);
    listener.on_event(&RunEvent::ReferencesStarted {
        references: measuring.len(),
    });
    // The queue an evaluation uses, with no samples to come: the references alone, longest
    // first, each start told.
    let served = Queue {
        engine: engine.clone(),
        environment: environment.clone(),
        time: TimePolicy::DEFAULT,
        times: references.sample_times.clone(),
    };
    let (_, no_samples) = mpsc::channel(1);
    tokio::spawn(served.serve(measuring, no_samples, done));
    while let Some(finished) = rx.recv().await {
        match finished {
            Finished::Reference(record) => {
                references.record(&record)?;
                listener.on_event(&RunEvent::ReferenceJudged {
                    record: Box::new(record),
                });
            }
            Finished::Sample(record) => {
                return Err(EvalError::Unjudged(format!(
                    "a verdict for {} came with no run directory to keep it",
                    record.task_id
                )))
            }
            Finished::Started {
                task_id,
                reference,
                expected,
            } => listener.on_event(&Finished::started_event(task_id, reference, expected)),
        }
    }
    references.sync()?;
    listener.on_event(&RunEvent::JudgingFinished);
    Ok(references.summary(&dataset.tasks))
}

/// Where the answers judged come from.
pub enum Answers<'a> {
    /// A model answering as it goes (`assay run`).
    Arriving {
        /// The answers, as they come.
        answers: mpsc::UnboundedReceiver<Answer>,
        /// Those come and not taken yet (the engine had no room), slowest to judge first.
        waiting: BinaryHeap<Waiting>,
        /// How long each task's sample is expected to take to judge, in seconds.
        seconds: HashMap<String, f64>,
        /// Answers come so far: among equals, the first come goes first.
        come: u64,
    },
    /// A samples file, each sample read when its turn comes (`assay eval`).
    File {
        /// The samples.
        samples: &'a Samples,
        /// Reads them.
        reader: Reader<'a>,
        /// The order they are judged in, by index.
        order: std::vec::IntoIter<usize>,
        /// The tasks they answer.
        tasks: HashMap<&'a str, &'a Task>,
    },
}

/// An answer come and not taken yet, ordered slowest to judge first, then first come.
pub struct Waiting {
    seconds: f64,
    come: u64,
    answer: Answer,
}

impl Ord for Waiting {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.seconds
            .total_cmp(&other.seconds)
            .then(other.come.cmp(&self.come))
    }
}

impl PartialOrd for Waiting {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Waiting {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Waiting {}

impl<'a> Answers<'a> {
    /// The answers `answers` brings as a model gives them; `seconds`: how long each task's
    /// sample is expected to take to judge (those that wait are taken slowest first).
    pub fn arriving(
        answers: mpsc::UnboundedReceiver<Answer>,
        seconds: HashMap<String, f64>,
    ) -> Answers<'a> {
        Answers::Arriving {
            answers,
            waiting: BinaryHeap::new(),
            seconds,
            come: 0,
        }
    }

    /// `samples` of `dataset` in the order `order` gives their indexes.
    pub fn file(
        samples: &'a Samples,
        dataset: &'a Dataset,
        order: Vec<usize>,
    ) -> Result<Answers<'a>, EvalError> {
        Ok(Answers::File {
            samples,
            reader: samples.reader()?,
            order: order.into_iter(),
            tasks: dataset.by_id(),
        })
    }

    /// The next answer; none when there are no more.
    async fn next(&mut self) -> Result<Option<Answer>, EvalError> {
        match self {
            Answers::Arriving {
                answers,
                waiting,
                seconds,
                come,
            } => {
                while let Ok(answer) = answers.try_recv() {
                    *come += 1;
                    waiting.push(Waiting {
                        seconds: seconds.get(&answer.task_id).copied().unwrap_or(0.0),
                        come: *come,
                        answer,
                    });
                }
                match waiting.pop() {
                    Some(slowest) => Ok(Some(slowest.answer)),
                    None => Ok(answers.recv().await),
                }
            }
            Answers::File {
                samples,
                reader,
                order,
                tasks,
            } => {
                let Some(index) = order.next() else {
                    return Ok(None);
                };
                let sample = &samples.samples[index];
                Ok(Some(reader.answer(sample, tasks[sample.task_id.as_str()])?))
            }
        }
    }
}

/// A place in the queue, once there is one: the queue takes jobs only while the engine has
/// room for them. Never ready when the queue is closed.
async fn room(
    queue: &Option<mpsc::Sender<Queued>>,
) -> Result<mpsc::Permit<'_, Queued>, mpsc::error::SendError<()>> {
    match queue {
        Some(queue) => queue.reserve().await,
        None => std::future::pending().await,
    }
}

impl Judging<'_> {
    /// Judges every answer `answers` brings (taking the next only when the engine has room
    /// for it, so that what waits is never more than a few jobs), its time limits tightening
    /// to its task's reference's when that ends, if it still runs; until `answers` ends and
    /// the last verdict is in. Each new verdict is appended to `run`'s `results.jsonl` (under
    /// the answer's index as it arrived), then told to `listener`. An answer that runs the
    /// same program as one of `earlier` (an earlier session's records) keeps that verdict
    /// instead. Reference solutions not measured yet run on the way, into `references`.
    /// `expected`: answers to come in all, for progress.
    pub async fn judge(
        &self,
        run: &RunDir,
        earlier: Vec<RecordKey>,
        references: &mut References,
        expected: usize,
        mut answers: Answers<'_>,
        listener: &mut dyn Listener,
    ) -> Result<Verdicts, EvalError> {
        let started = std::time::Instant::now();
        let tasks: HashMap<&str, &Task> = self.dataset.by_id();
        let mut kept = Earlier::new(earlier);
        let (done, mut finished) = mpsc::unbounded_channel::<Finished>();
        let (measuring, waiting) = references.missing(&self.dataset.tasks);
        listener.on_event(&RunEvent::JudgingStarted { samples: expected });
        listener.on_event(&RunEvent::ReferencesStarted {
            references: measuring.len(),
        });
        let (queue, queued) = mpsc::channel(1);
        let mut queue = Some(queue);
        let served = Queue {
            engine: self.engine.clone(),
            environment: self.environment.clone(),
            time: self.options.time.clone(),
            times: references.sample_times.clone(),
        };
        tokio::spawn(served.serve(measuring, queued, done));
        // The next job, until the queue has room for it; and whether answers may still come.
        let mut next: Option<Queued> = None;
        let mut arriving = true;
        // Whether the directory may hold an earlier session's figures.
        let mut concluded = true;
        loop {
            if !arriving && next.is_none() {
                // Nothing more to queue: the queue ends once its jobs have.
                queue = None;
            }
            tokio::select! {
                place = room(&queue), if next.is_some() => {
                    let job = next.take().expect("a job waits for its place");
                    let Ok(place) = place else {
                        return Err(EvalError::Unjudged(
                            "the queue of samples ended while answers still came (a job failed \
                             inside assay); rerun the same command to judge the rest"
                                .into(),
                        ));
                    };
                    place.send(job);
                }
                answer = answers.next(), if arriving && next.is_none() => {
                    let Some(answer) = answer? else {
                        arriving = false;
                        continue;
                    };
                    let Some(task) = tasks.get(answer.task_id.as_str()) else {
                        return Err(EvalError::Unjudged(format!(
                            "an answer to {}, which is not a task of this run",
                            answer.task_id
                        )));
                    };
                    let program = self.program(task, &answer.solution);
                    if let Some(record) = kept.take(&answer.task_id, &program.1, answer.index) {
                        listener.on_event(&RunEvent::SampleKept {
                            task_id: record.task_id,
                            status: record.status,
                        });
                        continue;
                    }
                    // Known once its record is in; until then, on its way.
                    let known = references.truth.tasks.get(&answer.task_id);
                    let reference = match (known, waiting.get(&answer.task_id)) {
                        (None, Some(rx)) => Reference::Pending(rx.clone()),
                        (known, _) => Reference::Known(known.cloned()),
                    };
                    let mut job = Job::new(answer.index, task, program, self.options);
                    job.note = answer.empty_note;
                    next = Some(Queued { job, reference });
                }
                ended = finished.recv() => match ended {
                    // Every sender is gone: the queue has ended, and every reference run.
                    None if queue.is_none() => break,
                    None => {
                        return Err(EvalError::Unjudged(
                            "the queue of samples ended while answers still came (a job failed \
                             inside assay); rerun the same command to judge the rest"
                                .into(),
                        ))
                    }
                    Some(Finished::Sample(record)) => {
                        if std::mem::take(&mut concluded) {
                            // An earlier session's figures no longer cover every record: gone
                            // until this one's, so that nothing (a merge) takes them for the end.
                            run.remove(SUMMARY)?;
                        }
                        run.append(&record)?;
                        listener.on_event(&RunEvent::SampleJudged {
                            record: Box::new(record),
                        });
                    }
                    Some(Finished::Reference(record)) => {
                        references.record(&record)?;
                        listener.on_event(&RunEvent::ReferenceJudged {
                            record: Box::new(record),
                        });
                    }
                    Some(Finished::Started { task_id, reference, expected }) => {
                        listener.on_event(&Finished::started_event(task_id, reference, expected));
                    }
                },
            }
        }
        Ok(Verdicts { started })
    }

    /// Runs the samples at `indexes` of `samples` again (a stability round: the engine under
    /// other conditions), longest first as a first evaluation orders them, with the limits
    /// their references set, handing each record to `finished` as it comes. Every reference
    /// must be measured already.
    pub async fn rerun(
        &self,
        samples: &Samples,
        indexes: &[usize],
        references: &References,
        mut finished: impl FnMut(SampleRecord) -> Result<(), EvalError>,
    ) -> Result<(), EvalError> {
        let tasks: HashMap<&str, &Task> = self.dataset.by_id();
        let reader = samples.reader()?;
        let chosen = indexes.iter().filter_map(|&i| samples.samples.get(i));
        // Polled from this one task, in this order: they queue for the slots in it.
        let mut jobs = FuturesUnordered::new();
        for (sample, measured) in longest_first(references, chosen) {
            let task = tasks[sample.task_id.as_str()];
            let program = self.program(task, &reader.code(sample)?.solution(task));
            let mut job = Job::new(sample.index, task, program, self.options);
            job.limit(&self.options.time, measured);
            jobs.push(judge(self.engine, self.environment, job));
        }
        while let Some(record) = jobs.next().await {
            finished(record)?;
        }
        Ok(())
    }

    /// The program `solution` runs for `task`, with its digest.
    fn program(&self, task: &Task, solution: &str) -> (String, String) {
        with_digest(program(solution, task, self.options.calibrated))
    }
}

/// What judging left: every answer's verdict in `results.jsonl`, under the index each answer
/// had when it arrived (or an earlier session's).
pub struct Verdicts {
    started: std::time::Instant,
}

/// What ends an evaluation besides its verdicts: the samples file they answer and what the
/// model never answered.
pub struct Ending<'a> {
    /// The samples judged, in file order.
    pub samples: &'a Samples,
    /// The model's name in `pass_at_k.json`.
    pub model: &'a str,
    /// Samples the model never answered (task id, why): `infra` verdicts, kept out of
    /// `results.jsonl` because a resumed run asks the model again.
    pub unanswered: &'a [(String, String)],
    /// What generating the samples cost, when this run generated them.
    pub generation: Option<&'a GenerationTotals>,
}

impl Verdicts {
    /// Gives every sample of `ending.samples` its verdict (the record of an answer that runs
    /// the same program, wherever it arrived), rewrites `results.jsonl` in sample order and
    /// writes `eval_results.json`, `pass_at_k.json` and `summary.json`.
    pub fn conclude(
        self,
        judging: &Judging,
        run: &mut RunDir,
        references: &mut References,
        ending: Ending,
        listener: &mut dyn Listener,
    ) -> Result<EvalSummary, EvalError> {
        let Ending {
            samples,
            model,
            unanswered,
            generation,
        } = ending;
        let options = judging.options;
        run.sync()?;
        let digests = digests(samples, judging.dataset, options.calibrated)?;
        // Matched again from what the records say, as a resumed run matched them: a sample may
        // get another record of its task and program than the one judging kept for it (two
        // samples running one program), which changes no figure.
        let chosen = reuse(
            locate(&run.path().join(RESULTS))?,
            samples.samples.iter().map(|s| Wanted {
                index: s.index,
                task_id: &s.task_id,
                digest: &digests[s.index],
            }),
        );
        // A job task that died (a panic) sent nothing: its samples have no verdict, and the
        // figures would quietly cover fewer samples.
        let unjudged = samples.samples.len() - chosen.len();
        if unjudged > 0 {
            return Err(EvalError::Unjudged(format!(
                "{unjudged} samples got no verdict (a job failed inside assay); rerun the same \
                 command to judge them"
            )));
        }
        // One record per sample, in sample order: records of answers that arrived elsewhere
        // (or of samples that have since moved) are renumbered, those of no sample dropped.
        let earlier = RecordFile::open(&run.path().join(RESULTS))?;
        let mut rewritten = run.create(RESULTS)?;
        for (&index, located) in &chosen {
            let mut record: SampleRecord = earlier.read(located.span)?;
            record.index = index;
            rewritten.write_line(&record)?;
        }
        run.replace_results(rewritten)?;
        references.sync()?;
        let ground_truth = references.summary(&judging.dataset.tasks);
        let (summary, walls) = conclude(
            run,
            Concluded {
                dataset: judging.dataset,
                samples,
                split: options.split,
                calibrated: options.calibrated,
                time_policy: options.time.clone(),
                model,
                unanswered,
                isolation: judging.engine.isolation().level,
                ground_truth,
                generation,
                wall: self.started.elapsed(),
            },
        )?;
        references.remember_sample_times(&walls)?;
        listener.on_event(&RunEvent::JudgingFinished);
        Ok(summary)
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
    let expected = |(sample, _): &(&Sample, Option<&ReferenceResult>)| {
        references.expected_seconds(&sample.task_id)
    };
    ordered.sort_by(|a, b| expected(b).total_cmp(&expected(a)));
    ordered
}

/// What an evaluation's derived files are made from: the records of its samples (in the run's
/// `results.jsonl`, one per sample in sample order) and what they answer. An evaluation
/// concludes with it, and so does a merge of shards (whose records were judged elsewhere).
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
    /// Samples the model never answered (task, why), numbered after the samples.
    pub unanswered: &'a [(String, String)],
    /// The isolation the unanswered samples' records name.
    pub isolation: IsolationLevel,
    /// The reference solutions' figures over the tasks.
    pub ground_truth: GroundTruthSummary,
    /// What generating the samples cost, when the run generated them.
    pub generation: Option<&'a GenerationTotals>,
    /// The judging's wall time (in `assay run`, from the start: it judges while the model
    /// answers).
    pub wall: std::time::Duration,
}

/// Writes `eval_results.json`, `pass_at_k.json` and `summary.json` from the records alone,
/// read one at a time: the summary, and per task the slowest sample run to a verdict.
pub fn conclude(
    run: &RunDir,
    concluded: Concluded,
) -> Result<(EvalSummary, BTreeMap<String, f64>), EvalError> {
    let Concluded {
        dataset,
        samples,
        split,
        calibrated,
        time_policy,
        model,
        unanswered,
        isolation,
        ground_truth,
        generation,
        wall,
    } = concluded;
    let path = run.path().join(RESULTS);
    let mut tally = Tally::default();
    let mut spans: Vec<Span> = Vec::with_capacity(samples.samples.len());
    let mut judged = ByTask::new();
    each_line(&path, |record: SampleRecord, span| {
        let index = spans.len();
        let Some(sample) = samples.samples.get(index) else {
            return Err(corrupt(&path, index, "a record beyond the samples"));
        };
        if record.index != index || record.task_id != sample.task_id {
            return Err(corrupt(
                &path,
                index,
                &format!("not the record of sample {index} ({})", sample.task_id),
            ));
        }
        if record.official.is_some() {
            judged
                .entry(sample.task_id.clone())
                .or_default()
                .push(index);
        }
        tally.add(&record);
        spans.push(span);
        Ok(())
    })?;
    if spans.len() != samples.samples.len() {
        return Err(corrupt(&path, spans.len(), "no record of this sample"));
    }
    // Samples the model never answered are `infra`: in both figures, as in the summary.
    for (i, (task_id, why)) in unanswered.iter().enumerate() {
        let index = samples.samples.len() + i;
        tally.add(&no_answer(index, task_id, why, isolation));
    }
    let scores = tally.scores();
    Written {
        dataset,
        samples,
        split,
        calibrated,
        model,
        records: &RecordFile::open(&path)?,
        spans: &spans,
        judged: &judged,
        scores: &scores,
        ground_truth: &ground_truth,
    }
    .write(run)?;
    let walls = tally.walls().clone();
    let mut summary = tally.summary(dataset, ground_truth, time_policy, wall);
    if let Some(totals) = generation {
        summary.tokens = Some(totals.usage.clone());
        summary.cost_usd = totals.cost_usd;
        summary.context = (!totals.context.is_zero()).then_some(totals.context);
    }
    run.write_json(SUMMARY, &summary)?;
    Ok((summary, walls))
}

/// Why `results.jsonl` does not give sample `index` its record.
fn corrupt(path: &std::path::Path, index: usize, what: &str) -> EvalError {
    EvalError::RunDir(RunDirError::Corrupt {
        path: path.to_path_buf(),
        line: index + 1,
        message: what.to_string(),
    })
}

/// The digest of the program each sample runs, by sample index: read one sample at a time.
fn digests(
    samples: &Samples,
    dataset: &Dataset,
    calibrated: bool,
) -> Result<Vec<String>, EvalError> {
    let tasks: HashMap<&str, &Task> = dataset.by_id();
    let reader = samples.reader()?;
    samples
        .samples
        .iter()
        .map(|sample| {
            let task = tasks[sample.task_id.as_str()];
            let solution = reader.code(sample)?.solution(task);
            Ok(digest(&program(&solution, task, calibrated)))
        })
        .collect()
}

/// `program` with its digest: what a record names as what it executed.
fn with_digest(program: String) -> (String, String) {
    let digest = digest(&program);
    (program, digest)
}
