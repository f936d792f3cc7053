//! BigCodeBench run directories (`assay eval`, `assay run`) as Inspect samples: one per line of
//! `samples.jsonl` that has its verdict in `results.jsonl` (the `index` of a record is its
//! line), numbered 1, 2... within its task as Inspect numbers epochs, plus one per answer the
//! model never gave (the manifest's `generation.unanswered`). A sample that could not be judged
//! (`infra`, or never answered) carries an `error` and no score, as Inspect marks a sample it
//! could not finish, so that it counts neither as passed nor as failed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use assay_generate::prompt::{chat_message, completion_prompt, TEMPLATE_VERSION};
use assay_models::{default_think_tags, part};
use assay_records::{
    GenerationRecord, Kind, Manifest, SampleRecord, Status, ThinkTag, TokenUsage, Unanswered,
};
use assay_report::{read_lines, read_numbered_lines, Answer, SourceError};
use assay_tasks::bigcodebench::{Dataset, Split, Subset, Task, VERSIONS};
use serde::Deserialize;
use serde_json::Value;

use super::log::{
    reasoning, ChatMessage, EvalDataset, EvalError, EvalPlanStep, EvalSample, GenerateConfig,
    ModelOutput, ModelUsage, Role, SampleFacts as Facts, Score, StopReason, Verdict, CORRECT,
    INCORRECT, SCORER,
};
use super::metadata::{SampleFacts, SampleVerdict, TestSummary};
use super::Benchmark;

/// A line of `samples.jsonl` in the official format: `solution`, or a `completion` of the
/// Complete prompt; `raw_solution` when a generation wrote it.
#[derive(Debug, Clone, Deserialize)]
struct Row {
    task_id: String,
    #[serde(default)]
    solution: Option<String>,
    #[serde(default)]
    completion: Option<String>,
    #[serde(default)]
    raw_solution: Option<String>,
}

/// The samples of the BigCodeBench run in `dir`, answered by `model`.
pub(super) fn read(dir: &Path, manifest: &Manifest, model: &str) -> Result<Benchmark, SourceError> {
    let identity = &manifest.identity;
    let benchmark = identity
        .benchmark
        .clone()
        .unwrap_or_else(|| "bigcodebench".into());
    let subset = if benchmark.ends_with("-hard") {
        Subset::Hard
    } else {
        Subset::Full
    };
    let mut warnings = Vec::new();
    let dataset = match load_dataset(manifest, subset) {
        Ok(dataset) => Some(dataset),
        Err(why) => {
            warnings.push(format!(
                "prompts and reference solutions are left empty: {why}"
            ));
            None
        }
    };
    let run = Run {
        manifest,
        model,
        split: Split::named(identity.split.as_deref()),
        reference: identity.model.as_deref() == Some("reference"),
        dataset,
        think_tags: identity
            .reasoning
            .as_ref()
            .and_then(|r| r.think_tags.clone())
            .unwrap_or_else(default_think_tags),
    };

    let rows: Vec<Row> = read_lines(&dir.join("samples.jsonl"))?;
    let mut records = records_of(&rows, &dir.join("results.jsonl"))?;
    let generation: Vec<GenerationRecord> = read_lines(&dir.join("generation.jsonl"))?;
    let answers = answers(&generation);
    let mut epochs: HashMap<&str, u32> = HashMap::new();
    let mut samples = Vec::new();
    for (index, row) in rows.iter().enumerate() {
        let epoch = epochs.entry(&row.task_id).or_insert(0);
        *epoch += 1;
        // A sample without its record has not been judged yet: the run has not finished.
        if let Some(record) = records.remove(&index) {
            let answer = answers
                .get(row.task_id.as_str())
                .and_then(|a| a.get(*epoch as usize - 1));
            samples.push(run.judged(row, *epoch, &record, answer));
        }
    }
    for missing in manifest
        .generation
        .iter()
        .flat_map(|g| &g.outcome.unanswered)
    {
        for _ in 0..missing.samples {
            let epoch = epochs.entry(&missing.task_id).or_insert(0);
            *epoch += 1;
            samples.push(run.unanswered(missing, *epoch));
        }
    }

    // Each task once, as it first comes (a task's epochs share its id).
    let mut seen = HashSet::new();
    let sample_ids: Vec<String> = samples
        .iter()
        .filter(|s| seen.insert(s.id.as_str()))
        .map(|s| s.id.clone())
        .collect();
    let mut task_args = BTreeMap::new();
    task_args.insert("split".to_string(), Value::from(run.split.as_str()));
    task_args.insert("subset".to_string(), Value::from(subset.as_str()));
    if let Some(version) = &identity.dataset {
        task_args.insert("dataset".to_string(), Value::from(version.as_str()));
    }
    Ok(Benchmark {
        task: format!("{benchmark}-{}", run.split.as_str()),
        task_args,
        dataset: EvalDataset {
            name: benchmark,
            location: identity.dataset.clone().unwrap_or_default(),
            samples: sample_ids.len(),
            sample_ids,
        },
        steps: vec![plan_step(manifest, run.reference)],
        generate_config: match &identity.generation {
            Some(settings) if run.asked_a_model() => GenerateConfig {
                temperature: Some(settings.temperature),
                top_p: settings.top_p,
                max_tokens: Some(settings.max_tokens),
                num_choices: Some(settings.n),
            },
            _ => GenerateConfig::default(),
        },
        epochs: epochs.values().copied().max().unwrap_or(1),
        samples,
        usage: generation.iter().fold(TokenUsage::default(), |mut sum, r| {
            sum += &r.usage;
            sum
        }),
        warnings,
    })
}

/// What every sample of a run shares.
struct Run<'a> {
    manifest: &'a Manifest,
    model: &'a str,
    split: Split,
    /// The reference solutions answered (no model was asked).
    reference: bool,
    /// The dataset the run used, when it is still to be had.
    dataset: Option<Dataset>,
    /// The tags the model's thinking was written between in its answers' text (what the
    /// generation set apart, set apart again here so that the reply's text is its answer).
    think_tags: Vec<ThinkTag>,
}

impl Run<'_> {
    fn task(&self, id: &str) -> Option<&Task> {
        self.dataset.as_ref().and_then(|d| d.get(id))
    }

    /// Whether a model was asked (`assay run` with a model), rather than answers read.
    fn asked_a_model(&self) -> bool {
        self.manifest.kind == Kind::BigcodebenchRun && !self.reference
    }

    /// What the model was sent for `task`: the official chat message, or the Complete prompt
    /// a base model continued. The reference solutions and a samples file's unknown
    /// generation were sent nothing: their input is the task's prompt of the split.
    fn input(&self, task: Option<&Task>) -> String {
        let Some(task) = task else {
            return String::new();
        };
        let identity = &self.manifest.identity;
        match (
            self.asked_a_model(),
            identity.direct_completion,
            identity.prompt.as_deref(),
        ) {
            (true, Some(true), _) => completion_prompt(task).to_string(),
            (true, _, Some(TEMPLATE_VERSION)) => chat_message(task, self.split),
            _ => match self.split {
                Split::Complete => task.complete_prompt.clone(),
                Split::Instruct => task.instruct_prompt.clone(),
            },
        }
    }

    /// The sample on `row` (the `epoch`-th of its task), judged by `record`; `answer` is the
    /// generation's answer in the same place, used when it is the code that was judged.
    fn judged(
        &self,
        row: &Row,
        epoch: u32,
        record: &SampleRecord,
        answer: Option<&Answer>,
    ) -> EvalSample {
        let task = self.task(&row.task_id);
        let code = match (&row.solution, &row.completion) {
            (Some(solution), _) => solution.clone(),
            (None, Some(completion)) => {
                format!("{}{completion}", task.map_or("", |t| &t.complete_prompt))
            }
            (None, None) => String::new(),
        };
        let answer = answer.filter(|a| a.solution() == code);
        let input = self.input(task);
        let said = answer
            .map(|a| a.raw())
            .or(row.raw_solution.as_deref())
            .unwrap_or(&code);
        let said = match self.manifest.identity.direct_completion {
            // A base model's raw answer is the prompt and its continuation: it said the rest.
            Some(true) => said.strip_prefix(input.as_str()).unwrap_or(said),
            _ => said,
        };
        // A reply that thought: its thinking as Inspect's reasoning, its text the answer
        // without the thinking the text held.
        let assistant = match answer.and_then(|a| a.thinking()) {
            Some(thinking) => {
                ChatMessage::generated(self.model, part(said, &self.think_tags).answer)
                    .with_reasoning(reasoning(&thinking.text, thinking.redacted))
            }
            None => ChatMessage::generated(self.model, said),
        };
        let mut output = ModelOutput::answer(
            assistant.clone(),
            StopReason::of(answer.and_then(|a| a.finish_reason())),
        );
        let mut model_usage = BTreeMap::new();
        // The request's usage and latency are this sample's when the request gave it alone
        // (the reference solutions are recorded as answers, but no request was made for them).
        let alone = answer.filter(|a| a.request.raw.len() == 1 && !self.reference);
        if let Some(request) = alone.map(|a| a.request) {
            output.usage = Some(ModelUsage::from(&request.usage));
            output.time = Some(request.latency_seconds);
            model_usage.insert(self.model.to_string(), ModelUsage::from(&request.usage));
        }
        let mut messages = Vec::new();
        if !input.is_empty() {
            messages.push(ChatMessage::input(Role::User, input.clone()));
        }
        messages.push(assistant);
        let (scores, error) = verdict(record, &code);
        EvalSample {
            id: row.task_id.clone(),
            epoch,
            input,
            target: task.map(Task::reference_solution).unwrap_or_default(),
            messages,
            output,
            scores,
            metadata: Some(Facts::BigCodeBench(SampleFacts {
                status: Some(record.status),
                reason: record.reason.clone(),
                infra: record.infra.as_ref().map(|c| c.as_str()),
                wall_seconds: Some(record.wall_seconds),
                cpu_seconds: record.cpu_seconds,
                memory_peak_bytes: record.memory_peak_bytes,
                processes_peak: record.processes_peak,
                isolation: Some(record.isolation),
                program_digest: Some(record.program_digest.clone()),
                libs: task.map(|t| t.libs.clone()).unwrap_or_default(),
            })),
            model_usage,
            total_time: Some(record.wall_seconds),
            error,
            turn_count: None,
        }
    }

    /// The `epoch`-th sample of a task the model never answered: the question, and why.
    fn unanswered(&self, missing: &Unanswered, epoch: u32) -> EvalSample {
        let task = self.task(&missing.task_id);
        let input = self.input(task);
        let messages = if input.is_empty() {
            Vec::new()
        } else {
            vec![ChatMessage::input(Role::User, input.clone())]
        };
        EvalSample {
            id: missing.task_id.clone(),
            epoch,
            messages,
            input,
            target: task.map(Task::reference_solution).unwrap_or_default(),
            output: ModelOutput {
                model: self.model.to_string(),
                ..ModelOutput::default()
            },
            scores: None,
            metadata: Some(Facts::BigCodeBench(SampleFacts {
                status: None,
                reason: missing.reason.clone(),
                infra: Some("no-answer"),
                wall_seconds: None,
                cpu_seconds: None,
                memory_peak_bytes: None,
                processes_peak: None,
                isolation: None,
                program_digest: None,
                libs: task.map(|t| t.libs.clone()).unwrap_or_default(),
            })),
            model_usage: BTreeMap::new(),
            total_time: None,
            error: Some(EvalError::new(
                "infra (no-answer): the model never answered".into(),
                missing.reason.clone(),
            )),
            turn_count: None,
        }
    }
}

/// The records of `results.jsonl` by the sample they judge, each checked against its line of
/// `samples.jsonl` (`rows`).
fn records_of(rows: &[Row], path: &Path) -> Result<HashMap<usize, SampleRecord>, SourceError> {
    let mut records = HashMap::new();
    for (line, record) in read_numbered_lines::<SampleRecord>(path)? {
        match rows.get(record.index) {
            Some(row) if row.task_id == record.task_id => {
                records.insert(record.index, record);
            }
            found => {
                return Err(SourceError::Invalid {
                    path: path.to_path_buf(),
                    line,
                    message: format!(
                        "the record of sample {} ({}) does not match samples.jsonl, whose line {} \
                         is {}",
                        record.index,
                        record.task_id,
                        record.index + 1,
                        found.map_or("missing".into(), |r| format!("a sample of {}", r.task_id))
                    ),
                })
            }
        }
    }
    Ok(records)
}

/// Each task's answers in the order `generation.jsonl` has them, which is the order
/// `samples.jsonl` has them in too.
fn answers(generation: &[GenerationRecord]) -> HashMap<&str, Vec<Answer<'_>>> {
    let mut answers: HashMap<&str, Vec<Answer>> = HashMap::new();
    for answer in assay_report::answers(generation) {
        answers
            .entry(&answer.request.task_id)
            .or_default()
            .push(answer);
    }
    answers
}

/// The score of a judged sample, or the error of one that could not be judged.
fn verdict(
    record: &SampleRecord,
    code: &str,
) -> (Option<BTreeMap<String, Score>>, Option<EvalError>) {
    let failure = record.first_failure();
    let detail = failure
        .map(|t| t.detail.clone())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| record.reason.clone());
    if record.status == Status::Infra {
        let cause = record.infra.as_ref().map_or("engine", |c| c.as_str());
        return (
            None,
            Some(EvalError::new(
                format!("infra ({cause}): {}", record.reason),
                detail,
            )),
        );
    }
    let mut explanation = record.reason.clone();
    match failure {
        Some(test) => {
            let (name, result) = (&test.name, test.result.as_str());
            explanation.push_str(&format!("\n\n{name} ({result}):\n{detail}"));
        }
        None if !record.passed() && !record.stderr.text.is_empty() => {
            explanation.push_str(&format!("\n\nstderr:\n{}", record.stderr.text));
        }
        None => {}
    }
    let score = Score {
        value: if record.passed() { CORRECT } else { INCORRECT },
        answer: code.to_string(),
        explanation,
        metadata: Some(Verdict::BigCodeBench(SampleVerdict {
            status: record.status,
            reason: record.reason.clone(),
            official: record.official.as_ref().map(|o| o.status),
            tests: record
                .tests
                .iter()
                .map(|t| TestSummary {
                    name: t.name.clone(),
                    result: t.result,
                    seconds: t.seconds,
                })
                .collect(),
        })),
    };
    (Some(BTreeMap::from([(SCORER.to_string(), score)])), None)
}

/// How the answers came about.
fn plan_step(manifest: &Manifest, reference: bool) -> EvalPlanStep {
    let identity = &manifest.identity;
    let mut params = BTreeMap::new();
    let solver = match manifest.kind {
        Kind::BigcodebenchEval => {
            if let Some(path) = &manifest.samples {
                params.insert("path".into(), Value::from(path.display().to_string()));
            }
            "samples_file"
        }
        _ if reference => "reference_solutions",
        _ => {
            if let Some(template) = &identity.prompt {
                params.insert("prompt".into(), Value::from(template.as_str()));
            }
            if let Some(direct) = identity.direct_completion {
                params.insert("direct_completion".into(), Value::from(direct));
            }
            "generate"
        }
    };
    EvalPlanStep {
        solver: solver.into(),
        params,
    }
}

/// The dataset a run used (`identity.dataset`: an embedded version, or a file found from where
/// the run started), when it is the one whose digest the run recorded.
fn load_dataset(manifest: &Manifest, subset: Subset) -> Result<Dataset, String> {
    let identity = &manifest.identity;
    let source = identity
        .dataset
        .as_deref()
        .ok_or("the manifest names no dataset")?;
    let dataset = if VERSIONS.contains(&source) {
        Dataset::embedded(source, subset)
    } else {
        Dataset::from_file(&manifest.started_in().join(source), subset)
    }
    .map_err(|e| e.to_string())?;
    match identity.dataset_digest.as_deref() {
        Some(recorded) if recorded != dataset.digest => Err(format!(
            "dataset {source} has changed since the run (digest {} here, {recorded} then)",
            dataset.digest
        )),
        _ => Ok(dataset),
    }
}
