//! One generation: every task asked for the answers it still lacks, `concurrency` requests at
//! a time, each answer sanitized and appended to `generation.jsonl` as it arrives; at the end
//! `samples.jsonl` in the official format and order.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use assay_models::{hit_token_limit, Client, LoadReports, Prompt, Request, RequestError, Response};
use assay_records::{
    Answer, ContextLimit, GenerationOutcome, GenerationRecord, GenerationSettings,
    GenerationTotals, Listener, Prices, RunEvent, TokenUsage, Unanswered,
};
use assay_rundir::{python_json, Journal, RunDir, RunDirError, SAMPLES};
use assay_sanitize::Sanitizer;
use assay_tasks::bigcodebench::{Dataset, Split, Task};
use serde::Serialize;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::prompt;

/// The generation log in a run directory: one record per answered (or failed) request.
pub const GENERATION: &str = "generation.jsonl";

/// Who answers.
#[derive(Clone)]
pub enum Model {
    /// The canonical solutions, as if a model had completed each prompt with them: checks the
    /// whole pipeline without a model or a network.
    Reference,
    /// A chat model, sent the official user message.
    Chat(Client),
    /// A base model continuing the Complete prompt (the official direct completion).
    Completion(Client),
    /// A solver that works the task out rather than replying to it (a coding agent in a
    /// sandbox), on a chat model's API.
    Agent(Arc<dyn Solver>),
}

/// Something that answers a task by working on it: a coding agent that writes its solution
/// to a file. Its answers are sanitized, logged and judged as a model's are.
pub trait Solver: Send + Sync {
    /// The model it works with.
    fn client(&self) -> &Client;

    /// Works on `task` (its `sample`-th answer, from 0) in the `split`'s prompt style.
    fn solve<'a>(
        &'a self,
        task: &'a Task,
        split: Split,
        sample: u32,
    ) -> Pin<Box<dyn Future<Output = Solved> + Send + 'a>>;
}

/// What a [`Solver`] came to.
#[derive(Debug, Clone)]
pub struct Solved {
    /// Its answer (the file it wrote; empty when it wrote none), or why it could not work
    /// on the task at all (the harness's failure: the sample is unanswered, `infra`).
    pub answer: Result<String, String>,
    /// Tokens its model requests used.
    pub usage: TokenUsage,
    /// Model requests it made.
    pub requests: u32,
}

impl Model {
    /// The model API's client; none for the reference solutions.
    pub fn client(&self) -> Option<&Client> {
        match self {
            Model::Reference => None,
            Model::Chat(client) | Model::Completion(client) => Some(client),
            Model::Agent(solver) => Some(solver.client()),
        }
    }

    /// The requests in flight now (`running` tasks when no API is called), and the API's load.
    fn in_flight(&self, running: usize) -> RunEvent {
        match self.client() {
            None => RunEvent::InFlight {
                requests: running,
                load: None,
            },
            Some(client) => client.in_flight(),
        }
    }
}

/// Why a generation stopped. A request that fails for good is not an error: its samples
/// are reported unanswered.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// The run directory failed.
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    /// A record of `generation.jsonl` does not fit this run.
    #[error("{path}:{line}: {message}")]
    Record {
        /// The log.
        path: String,
        /// The line (1-based).
        line: usize,
        /// What is wrong, naming the field.
        message: String,
    },
    /// No request can succeed (bad key, unknown model, exhausted quota): the run stops.
    #[error("the model API refused the run: {0}")]
    Fatal(String),
    /// The sanitizer failed (not an answer: its helper process).
    #[error("sanitizing answers: {0}")]
    Sanitize(String),
    /// A request's task panicked or was cancelled.
    #[error("a request task failed: {0}")]
    Task(String),
    /// The settings cannot work together.
    #[error("{0}")]
    Invalid(String),
}

/// What makes a record read back from the log unusable for this run, if anything.
fn problem(record: &GenerationRecord, dataset: &Dataset) -> Option<String> {
    if dataset.get(&record.task_id).is_none() {
        return Some(format!(
            "field `task_id`: `{}` is not a task of this run",
            record.task_id
        ));
    }
    if record.solutions.len() != record.raw.len() || record.finish_reasons.len() != record.raw.len()
    {
        return Some(format!(
            "fields `raw`, `solutions`, `finish_reasons`: {}, {} and {} entries, not one each",
            record.raw.len(),
            record.solutions.len(),
            record.finish_reasons.len()
        ));
    }
    if record.error.is_some() && !record.raw.is_empty() {
        return Some("field `error`: a failed request with answers".into());
    }
    None
}

/// The official samples row, fields in the official order.
#[derive(Serialize)]
struct Row<'a> {
    task_id: &'a str,
    solution: &'a str,
    raw_solution: &'a str,
}

/// One generation into a run directory.
pub struct Generation<'a> {
    /// The tasks.
    pub dataset: &'a Dataset,
    /// How answers are sampled.
    pub settings: &'a GenerationSettings,
    /// Who answers.
    pub model: &'a Model,
    /// Sanitizes every answer.
    pub sanitizer: Arc<Mutex<Sanitizer>>,
    /// Requests in flight at most.
    pub concurrency: usize,
    /// What tokens cost, for the totals.
    pub prices: Option<Prices>,
    /// Where each answer goes on to be judged, and in what order to ask: none for a
    /// generation alone.
    pub onward: Option<Onward>,
}

/// Where `assay run` wants each answer once it is sanitized and in the log (those of earlier
/// sessions first), to judge it at once, and in what order it wants them asked for: the tasks
/// slowest to judge first, so that their verdicts do not end the run alone.
pub struct Onward {
    /// Where answers go.
    pub answers: mpsc::UnboundedSender<Answer>,
    /// How long each task's sample is expected to take to judge, in seconds (0 or absent:
    /// unknown, asked after the known, in dataset order).
    pub judging_seconds: HashMap<String, f64>,
}

impl Onward {
    /// The seconds a sample of `task_id` is expected to take to judge (0: unknown).
    fn seconds(&self, task_id: &str) -> f64 {
        self.judging_seconds.get(task_id).copied().unwrap_or(0.0)
    }
}

/// Numbers answers as `samples.jsonl` places them once every task has all it asked for:
/// tasks in dataset order, `n` places each, a task's answers in the order they came.
struct Places {
    first: HashMap<String, usize>,
    given: HashMap<String, usize>,
}

impl Places {
    fn new(dataset: &Dataset, n: u32) -> Places {
        let first = dataset
            .tasks
            .iter()
            .enumerate()
            .map(|(i, task)| (task.task_id.clone(), i * n as usize))
            .collect();
        Places {
            first,
            given: HashMap::new(),
        }
    }

    /// Sends `record`'s answers to `to`, each with its place.
    fn send(&mut self, record: &GenerationRecord, to: &mpsc::UnboundedSender<Answer>) {
        let first = self.first.get(&record.task_id).copied().unwrap_or(0);
        let given = self.given.entry(record.task_id.clone()).or_insert(0);
        for (i, solution) in record.solutions.iter().enumerate() {
            // A receiver gone has stopped judging; the generation goes on regardless.
            let _ = to.send(Answer {
                index: first + *given,
                task_id: record.task_id.clone(),
                solution: solution.clone(),
                empty_note: record.empty_note(i),
            });
            *given += 1;
        }
    }
}

/// A generation's log read back, and the requests it still needs: what a caller looks at
/// before anything is asked (a model server is started only when there is something to ask).
pub struct Pending {
    journal: Journal,
    records: Vec<GenerationRecord>,
    work: VecDeque<(Arc<Task>, u32)>,
}

impl Pending {
    /// Answers still to be asked for.
    pub fn answers(&self) -> usize {
        self.work.iter().map(|(_, need)| *need as usize).sum()
    }
}

impl Generation<'_> {
    /// Reads `generation.jsonl` in `dir` back (a bad record is an error naming its line and
    /// field) and works out the requests still needed for every task's answers.
    pub fn pending(&self, dir: &RunDir) -> Result<Pending, GenerateError> {
        let settings = self.settings;
        if matches!(self.model, Model::Completion(_))
            && settings.split == assay_tasks::bigcodebench::Split::Instruct
        {
            return Err(GenerateError::Invalid(
                "a base model (direct completion) can only answer the Complete split, as in the \
                 official harness; use --split complete or a chat model"
                    .into(),
            ));
        }
        let (journal, records) = dir.journal::<GenerationRecord>(GENERATION)?;
        for (line, record) in records.iter().enumerate() {
            if let Some(message) = problem(record, self.dataset) {
                return Err(GenerateError::Record {
                    path: dir.path().join(GENERATION).display().to_string(),
                    line: line + 1,
                    message,
                });
            }
        }
        let mut answered: HashMap<&str, u32> = HashMap::new();
        for record in &records {
            *answered.entry(record.task_id.as_str()).or_insert(0) += record.raw.len() as u32;
        }
        // APIs without `n` (Anthropic) get one request per answer: each is bounded by the
        // concurrency and recorded on its own, so a failure loses no other answer.
        let per_request = match self.model {
            Model::Chat(client) | Model::Completion(client) => client.answers_per_request(),
            Model::Reference => settings.n,
            // One episode per answer, each recorded as it ends.
            Model::Agent(_) => 1,
        };
        let mut work: VecDeque<(Arc<Task>, u32)> = VecDeque::new();
        for task in &self.dataset.tasks {
            let have = answered.get(task.task_id.as_str()).copied().unwrap_or(0);
            let task = Arc::new(task.clone());
            let mut need = settings.n.saturating_sub(have);
            while need > 0 {
                let n = need.min(per_request);
                work.push_back((task.clone(), n));
                need -= n;
            }
        }
        drop(answered);
        if let Some(onward) = &self.onward {
            slowest_first(&mut work, onward);
        }
        Ok(Pending {
            journal,
            records,
            work,
        })
    }

    /// Asks for every answer `pending` lacks, then writes `samples.jsonl`. Every request's
    /// record goes to `generation.jsonl`, then to `listener` as an event.
    pub async fn run(
        &self,
        dir: &RunDir,
        pending: Pending,
        listener: &mut dyn Listener,
    ) -> Result<GenerationOutcome, GenerateError> {
        let settings = self.settings;
        let missing = pending.answers();
        let Pending {
            mut journal,
            mut records,
            mut work,
        } = pending;
        let total = self.dataset.tasks.len() * settings.n as usize;
        listener.on_event(&RunEvent::GenerationStarted {
            samples: total,
            done: total - missing,
        });

        let mut places = Places::new(self.dataset, settings.n);
        if let Some(onward) = &self.onward {
            // Slowest to judge first, as new requests are asked (a task's own in their order).
            let mut earlier: Vec<&GenerationRecord> = records.iter().collect();
            earlier.sort_by(|a, b| {
                onward
                    .seconds(&b.task_id)
                    .total_cmp(&onward.seconds(&a.task_id))
            });
            for record in earlier {
                places.send(record, &onward.answers);
            }
        }
        let onward = self.onward.as_ref().map(|o| &o.answers);
        let mut running = JoinSet::new();
        let mut failures: BTreeMap<String, Unanswered> = BTreeMap::new();
        let mut stop = None;
        // None for the reference solutions: their count changes only as tasks end.
        let mut reports = LoadReports::new(self.model.client());
        loop {
            while stop.is_none() && running.len() < self.concurrency.max(1) {
                let Some((task, need)) = work.pop_front() else {
                    break;
                };
                running.spawn(answer(
                    self.model.clone(),
                    task,
                    settings.clone(),
                    need,
                    self.sanitizer.clone(),
                ));
            }
            listener.on_event(&self.model.in_flight(running.len()));
            // After a stop, only what has already finished is kept.
            let joined = match stop {
                None if running.is_empty() => None,
                None => tokio::select! {
                    joined = running.join_next() => joined,
                    // The rate and the limit change while nothing ends: said again above.
                    _ = reports.next() => continue,
                },
                Some(_) => running.try_join_next(),
            };
            let Some(joined) = joined else {
                break;
            };
            let record = match joined {
                Ok(Ok(record)) => record,
                Ok(Err(error)) => {
                    stop.get_or_insert(error);
                    continue;
                }
                Err(e) => {
                    stop.get_or_insert(GenerateError::Task(e.to_string()));
                    continue;
                }
            };
            journal.append(&record)?;
            if let Some(to) = onward {
                places.send(&record, to);
            }
            listener.on_event(&RunEvent::Answered {
                record: Box::new(record.clone()),
            });
            match &record.error {
                None => {
                    // A server that ignores `n` answers once: ask again for the rest.
                    let short = record.wanted.saturating_sub(record.raw.len() as u32);
                    if let Some(task) = self.dataset.get(&record.task_id) {
                        if short > 0 && !record.raw.is_empty() && stop.is_none() {
                            work.push_back((Arc::new(task.clone()), short));
                        }
                    }
                }
                Some(error) => {
                    let entry =
                        failures
                            .entry(record.task_id.clone())
                            .or_insert_with(|| Unanswered {
                                task_id: record.task_id.clone(),
                                samples: 0,
                                reason: String::new(),
                            });
                    entry.samples += record.wanted;
                    entry.reason = error.clone();
                }
            }
            records.push(record);
        }
        running.abort_all();
        journal.sync()?;
        // Whatever was answered is usable (by `assay eval`, by the official harness) even when
        // the run stopped.
        let written = write_samples(dir, self.dataset, &records)?;
        if let Some(error) = stop {
            return Err(error);
        }
        Ok(GenerationOutcome {
            samples: written,
            unanswered: failures.into_values().collect(),
            totals: totals(&records, self.prices.as_ref()),
        })
    }
}

/// Orders `work` by its tasks' expected judging time, slowest first; equal (or unknown) keep
/// their order.
fn slowest_first(work: &mut VecDeque<(Arc<Task>, u32)>, onward: &Onward) {
    // A stable sort.
    work.make_contiguous().sort_by(|(a, _), (b, _)| {
        onward
            .seconds(&b.task_id)
            .total_cmp(&onward.seconds(&a.task_id))
    });
}

/// Asks `model` for `need` answers to `task` and sanitizes them.
async fn answer(
    model: Model,
    task: Arc<Task>,
    settings: GenerationSettings,
    need: u32,
    sanitizer: Arc<Mutex<Sanitizer>>,
) -> Result<GenerationRecord, GenerateError> {
    let started = Instant::now();
    let request = |prompt: Prompt, stop: Vec<String>| Request {
        prompt,
        n: need,
        temperature: settings.temperature,
        top_p: settings.top_p,
        max_tokens: settings.max_tokens,
        stop,
        frequency_penalty: None,
        presence_penalty: None,
    };
    let (reply, prefix) = match &model {
        Model::Reference => (
            Ok((
                Response::same(task.reference_solution(), need, started, 1),
                None,
            )),
            "",
        ),
        Model::Chat(client) => {
            let chat = request(
                Prompt::user(prompt::chat_message(&task, settings.split)),
                prompt::chat_stops(&client.spec().provider),
            );
            (ask(client, chat).await, "")
        }
        Model::Agent(solver) => (
            solve(solver.as_ref(), &task, settings.split, need).await,
            "",
        ),
        Model::Completion(client) => {
            let prefix = prompt::completion_prompt(&task);
            let completion = request(
                Prompt::Completion {
                    prompt: prefix.to_string(),
                },
                prompt::completion_stops(),
            );
            (ask(client, completion).await, prefix)
        }
    };
    let (reply, context) = match reply {
        Ok(answered) => answered,
        Err(RequestError::Fatal { message, .. }) => return Err(GenerateError::Fatal(message)),
        Err(failed) => {
            return Ok(GenerationRecord {
                task_id: task.task_id.clone(),
                raw: Vec::new(),
                solutions: Vec::new(),
                finish_reasons: Vec::new(),
                usage: TokenUsage::default(),
                latency_seconds: started.elapsed().as_secs_f64(),
                attempts: match failed {
                    RequestError::Failed { attempts, .. } => attempts,
                    _ => 1,
                },
                error: Some(failed.to_string()),
                wanted: need,
                context: None,
                thinking: Vec::new(),
            })
        }
    };
    // The official raw_solution of a base model: the prompt and its continuation. What is
    // sanitized is the answer without its thinking; an answer that ended inside its thinking
    // has none: an empty solution.
    let answers: Vec<Option<String>> = reply
        .answers
        .iter()
        .zip(&reply.thinking)
        .map(|(answer, thinking)| match thinking {
            Some(t) if t.cut => None,
            _ => Some(format!("{prefix}{answer}")),
        })
        .collect();
    let raw: Vec<String> = reply
        .texts
        .iter()
        .map(|text| format!("{prefix}{text}"))
        .collect();
    let entry_point = task.entry_point.clone();
    let solutions = tokio::task::spawn_blocking(move || {
        let mut sanitizer = sanitizer.lock().unwrap_or_else(|p| p.into_inner());
        answers
            .iter()
            .map(|answer| match answer {
                Some(answer) => sanitizer.sanitize(answer, &entry_point),
                None => Ok(String::new()),
            })
            .collect::<Result<Vec<_>, _>>()
    })
    .await
    .map_err(|e| GenerateError::Sanitize(e.to_string()))?;
    let solutions = solutions.map_err(|e| GenerateError::Sanitize(e.to_string()))?;
    Ok(GenerationRecord {
        task_id: task.task_id.clone(),
        raw,
        solutions,
        finish_reasons: reply.finish_reasons,
        usage: reply.usage,
        latency_seconds: reply.latency.as_secs_f64(),
        attempts: reply.attempts,
        error: None,
        wanted: need,
        context,
        thinking: reply.thinking,
    })
}

/// Has `solver` work out `need` answers to `task`, one after another. Its answers come as a
/// model's would, its files as its texts; one it could not work on fails the whole request,
/// as a model's failed request does (its samples are unanswered).
async fn solve(
    solver: &dyn Solver,
    task: &Task,
    split: Split,
    need: u32,
) -> Result<(Response, Option<ContextLimit>), RequestError> {
    let started = Instant::now();
    // One attempt: its model requests are its work, not retries (each episode keeps its own).
    let mut response = Response::same(String::new(), 0, started, 1);
    for sample in 0..need {
        let solved = solver.solve(task, split, sample).await;
        response.usage += &solved.usage;
        let answer = solved.answer.map_err(|message| RequestError::Failed {
            message,
            attempts: solved.requests,
        })?;
        response.texts.push(answer.clone());
        response.answers.push(answer);
        response.finish_reasons.push(None);
        response.tool_calls.push(Vec::new());
        response.thinking.push(None);
        response.thinking_blocks.push(Vec::new());
    }
    response.latency = started.elapsed();
    Ok((response, None))
}

/// Sends `request`; where it does not fit the model's context window, asks again once with
/// the token limit the window leaves beside the prompt (when the server said how much that
/// is), and otherwise answers with empty texts: a model that cannot read a prompt has no
/// answer to it, which is judged `fail`, never `infra`. The answers come with what the window
/// did to them.
async fn ask(
    client: &Client,
    request: Request,
) -> Result<(Response, Option<ContextLimit>), RequestError> {
    let started = Instant::now();
    let full = match client.generate(&request).await {
        Err(RequestError::ContextFull(full)) => full,
        answered => return answered.map(|response| (response, None)),
    };
    let mut limit = ContextLimit {
        reason: full.describe(),
        said: full.message.clone(),
        max_tokens: None,
        empty: true,
    };
    let mut attempts = 1;
    if let Some(room) = full.room().filter(|room| *room < request.max_tokens) {
        limit.max_tokens = Some(room);
        let lowered = Request {
            max_tokens: room,
            ..request.clone()
        };
        match client.generate(&lowered).await {
            Ok(mut response) => {
                limit.empty = false;
                response.latency = started.elapsed();
                response.attempts += 1;
                return Ok((response, Some(limit)));
            }
            Err(RequestError::ContextFull(again)) => {
                limit.reason = again.describe();
                limit.said = again.message;
                attempts = 2;
            }
            Err(other) => return Err(other),
        }
    }
    let empty = Response::same(String::new(), request.n, started, attempts);
    Ok((empty, Some(limit)))
}

/// Writes `samples.jsonl`: tasks in dataset order, each task's answers in the order they
/// came, one official row each (as Python's `json.dumps` writes it). Returns the rows written.
fn write_samples(
    dir: &RunDir,
    dataset: &Dataset,
    records: &[GenerationRecord],
) -> Result<usize, RunDirError> {
    let mut by_task: HashMap<&str, Vec<&GenerationRecord>> = HashMap::new();
    for record in records {
        by_task
            .entry(record.task_id.as_str())
            .or_default()
            .push(record);
    }
    let mut text = String::new();
    let mut rows = 0;
    for task in &dataset.tasks {
        for record in by_task.get(task.task_id.as_str()).into_iter().flatten() {
            for (raw, solution) in record.raw.iter().zip(&record.solutions) {
                text.push_str(&python_json::dumps(&Row {
                    task_id: &task.task_id,
                    solution,
                    raw_solution: raw,
                }));
                text.push('\n');
                rows += 1;
            }
        }
    }
    dir.write_file(SAMPLES, text.as_bytes())?;
    Ok(rows)
}

/// What the answered requests of `records` cost, as the manifest's generation totals say; in
/// US dollars too, given `prices`.
pub fn totals(records: &[GenerationRecord], prices: Option<&Prices>) -> GenerationTotals {
    let mut totals = GenerationTotals::default();
    let mut latency = 0.0;
    for record in records.iter().filter(|r| r.error.is_none()) {
        totals.requests += 1;
        totals.samples += record.raw.len();
        // Empty because nothing fit the window: counted there, not among the empty answers.
        let nothing_fit = record.context.as_ref().is_some_and(|c| c.empty);
        match &record.context {
            Some(_) if nothing_fit => totals.context.empty += record.raw.len(),
            Some(_) => totals.context.lowered += record.raw.len(),
            None => {}
        }
        totals.usage += &record.usage;
        if record.attempts > 1 {
            totals.retried_requests += 1;
            totals.retries += u64::from(record.attempts - 1);
        }
        latency += record.latency_seconds;
        totals.cut_short += record
            .finish_reasons
            .iter()
            .filter(|r| r.as_deref().is_some_and(hit_token_limit))
            .count();
        let thought = record.thinking.iter().flatten();
        totals.thinking += thought.clone().count();
        totals.cut_while_thinking += thought.filter(|t| t.cut).count();
        if !nothing_fit {
            totals.empty += record.raw.iter().filter(|t| t.trim().is_empty()).count();
        }
        totals.latency_max_seconds = totals.latency_max_seconds.max(record.latency_seconds);
    }
    if totals.requests > 0 {
        totals.latency_mean_seconds = latency / totals.requests as f64;
    }
    totals.cost_usd = prices.map(|p| p.cost(&totals.usage));
    totals.reasoning_cost_usd = prices.and_then(|p| p.reasoning_cost(&totals.usage));
    totals
}

#[cfg(test)]
mod tests {
    use super::*;
    use assay_tasks::bigcodebench::Subset;

    #[test]
    fn the_tasks_slowest_to_judge_are_asked_first() {
        let dataset = Dataset::embedded("v0.1.4", Subset::Hard).unwrap();
        let id = |i: usize| dataset.tasks[i].task_id.clone();
        let mut work: VecDeque<(Arc<Task>, u32)> = (0..6)
            .map(|i| (Arc::new(dataset.tasks[i].clone()), 1))
            .collect();
        let onward = Onward {
            answers: mpsc::unbounded_channel().0,
            judging_seconds: HashMap::from([
                (id(4), 30.0),
                (id(1), 2.5),
                (id(3), 2.5),
                (id(5), 0.1),
            ]),
        };
        slowest_first(&mut work, &onward);
        let order: Vec<String> = work.iter().map(|(t, _)| t.task_id.clone()).collect();
        // Equal and unknown expectations keep the dataset's order.
        assert_eq!(order, [id(4), id(1), id(3), id(5), id(0), id(2)]);
    }
}
