//! The part of Inspect AI's eval log (`inspect_ai.log.EvalLog`, file format version 2) that an
//! assay run fills, as serde types. Field names and order are Inspect's: its reader streams the
//! header fields before `samples`, so `samples` and `reductions` come last. Optional fields
//! assay has nothing for are left out; Inspect reads them as their defaults.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::metadata::{self, Counts};
use super::spec::Provenance;

/// Inspect's log file format version this writes.
pub const LOG_VERSION: u32 = 2;

/// The name of assay's scorer in the log: each sample's `scores` key and the results' `scorer`.
pub const SCORER: &str = "assay";

/// A whole eval log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalLog {
    /// [`LOG_VERSION`].
    pub version: u32,
    /// Whether the run finished.
    pub status: EvalStatus,
    /// What was evaluated, on what, how.
    pub eval: EvalSpec,
    /// How answers were obtained.
    pub plan: EvalPlan,
    /// The figures.
    pub results: EvalResults,
    /// Times and tokens.
    pub stats: EvalStats,
    /// Every sample.
    pub samples: Vec<EvalSample>,
    /// Each sample's scores reduced over its epochs, per reducer.
    pub reductions: Vec<Reductions>,
}

/// `started` (a run that has not finished: still going, or stopped before its end) or
/// `success`. Inspect's `cancelled` and `error` describe its own runs, which assay's are not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EvalStatus {
    /// The run has not finished.
    Started,
    /// The run finished (samples that could not be judged are marked one by one).
    Success,
}

/// `EvalSpec`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalSpec {
    /// Stable per run (see `spec::ids`).
    pub eval_id: String,
    /// Stable per run.
    pub run_id: String,
    /// ISO 8601, UTC: when the run started.
    pub created: String,
    /// `bigcodebench-hard-complete`, `pybench`...
    pub task: String,
    /// Stable per run; the last part of the log's file name.
    pub task_id: String,
    /// Always 0: assay's benchmarks carry their versions in `task_args` and `dataset`.
    pub task_version: u32,
    /// The settings that name the task: dataset version, split, subset, checks.
    pub task_args: BTreeMap<String, Value>,
    /// The dataset.
    pub dataset: EvalDataset,
    /// `provider/model`.
    pub model: String,
    /// The sampling settings the model was asked with, where assay asked one.
    pub model_generate_config: GenerateConfig,
    /// The server, without credentials, where there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_base_url: Option<String>,
    /// What the model name alone does not say (the file a replay read).
    pub model_args: BTreeMap<String, Value>,
    /// Epochs and error handling.
    pub config: EvalConfig,
    /// `{"assay": version}`.
    pub packages: BTreeMap<String, String>,
    /// assay's provenance: its version, the run's kind and identity, the directory, the
    /// sandbox's Python and isolation.
    pub metadata: Provenance,
    /// The one scorer, assay's verdicts.
    pub scorers: Vec<EvalScorer>,
}

/// `EvalDataset`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalDataset {
    /// `bigcodebench-hard`, `pybench`.
    pub name: String,
    /// The dataset version or file, the data folder.
    pub location: String,
    /// Tasks (Inspect's samples before epochs).
    pub samples: usize,
    /// Their ids.
    pub sample_ids: Vec<String>,
}

/// The part of `GenerateConfig` assay knows.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GenerateConfig {
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Token limit per answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Answers per task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_choices: Option<u32>,
}

/// The part of `EvalConfig` that describes an assay run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalConfig {
    /// Samples per task.
    pub epochs: u32,
    /// How each task's samples are reduced (`mean`, `pass_at_5`...), when there are several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epochs_reducer: Option<Vec<String>>,
    /// Always false: a sample that could not be judged is set apart, it does not fail the run.
    pub fail_on_error: bool,
}

/// `EvalScorer`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalScorer {
    /// [`SCORER`].
    pub name: String,
    /// The metrics computed, by Inspect's registry names.
    pub metrics: Vec<MetricDefinition>,
}

/// `EvalMetricDefinition`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricDefinition {
    /// `inspect_ai/accuracy`, `inspect_ai/stderr`.
    pub name: String,
}

/// `EvalPlan`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalPlan {
    /// Always `plan`.
    pub name: String,
    /// What produced the answers.
    pub steps: Vec<EvalPlanStep>,
    /// The sampling settings, as in the spec.
    pub config: GenerateConfig,
}

/// `EvalPlanStep`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalPlanStep {
    /// `generate`, `reference_solutions`, `samples_file`, `pybench_agent`...
    pub solver: String,
    /// Its settings.
    pub params: BTreeMap<String, Value>,
}

/// `EvalResults`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalResults {
    /// Samples in the log.
    pub total_samples: usize,
    /// Samples judged (those that could not be judged carry an error).
    pub completed_samples: usize,
    /// One entry per reducer: `mean` first.
    pub scores: Vec<EvalScore>,
    /// Which figure heads the run: accuracy of the first score (none when nothing was judged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headline: Option<HeadlineMetric>,
    /// assay's counts behind the figures: tasks judged, tasks and samples set apart.
    pub metadata: Counts,
}

/// `EvalScore`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalScore {
    /// [`SCORER`].
    pub name: String,
    /// [`SCORER`].
    pub scorer: String,
    /// `mean`, `pass_at_5`...; none with one sample per task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reducer: Option<String>,
    /// Tasks with a judged sample.
    pub scored_samples: usize,
    /// Always 0: tasks without one are left out rather than scored.
    pub unscored_samples: usize,
    /// `accuracy` and `stderr`.
    pub metrics: BTreeMap<String, EvalMetric>,
}

/// `EvalMetric`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalMetric {
    /// The key it is under.
    pub name: String,
    /// The figure.
    pub value: f64,
}

/// `HeadlineMetric`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeadlineMetric {
    /// [`SCORER`].
    pub scorer: String,
    /// [`SCORER`].
    pub score: String,
    /// `accuracy`.
    pub metric: String,
    /// The first score's reducer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reducer: Option<String>,
}

/// `EvalStats`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalStats {
    /// When the run started.
    pub started_at: String,
    /// When it finished (its summary was written); empty while it has not.
    pub completed_at: String,
    /// Tokens billed, by model; empty when no model was asked or none reported usage.
    pub model_usage: BTreeMap<String, ModelUsage>,
}

/// `ModelUsage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ModelUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens (thinking included, as providers bill it).
    pub output_tokens: u64,
    /// Their sum.
    pub total_tokens: u64,
    /// Of the completion tokens, those spent thinking, where the provider said (Inspect's
    /// `None` where it did not: a 0 would claim the model did not think).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

impl From<&assay_records::TokenUsage> for ModelUsage {
    fn from(usage: &assay_records::TokenUsage) -> Self {
        ModelUsage {
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
            total_tokens: usage.prompt_tokens + usage.completion_tokens,
            reasoning_tokens: Some(usage.reasoning_tokens).filter(|n| *n > 0),
        }
    }
}

/// `EvalSample`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalSample {
    /// The task id (`BigCodeBench/13`, `PyBench/2`).
    pub id: String,
    /// 1-based position among the task's samples.
    pub epoch: u32,
    /// What the model was asked.
    pub input: String,
    /// The reference solution (BigCodeBench); empty where there is none (PyBench).
    pub target: String,
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// The model's last answer.
    pub output: ModelOutput,
    /// `{"assay": verdict}`; absent for a sample that could not be judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scores: Option<BTreeMap<String, Score>>,
    /// What the run recorded of the sample.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<SampleFacts>,
    /// Tokens billed for this sample, where a request answered it alone.
    pub model_usage: BTreeMap<String, ModelUsage>,
    /// Seconds judging (BigCodeBench) or the episode (PyBench) took.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_time: Option<f64>,
    /// Why the sample could not be judged (`infra`, or never answered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<EvalError>,
    /// Replies the model gave (PyBench).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_count: Option<u32>,
}

/// A chat message of any role (Inspect tells them apart by `role`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatMessage {
    /// The text; a reply that came with thinking has it apart, before the text.
    pub content: Content,
    /// `input` for what the task gave, `generate` for what the model wrote; none for the
    /// interpreter's observations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'static str>,
    /// `system`, `user` or `assistant`.
    pub role: Role,
    /// The model that wrote it (assistant messages).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl ChatMessage {
    /// What the task gave, as `role`.
    pub fn input(role: Role, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            content: Content::Text(content.into()),
            source: Some("input"),
            role,
            model: None,
        }
    }

    /// What `model` wrote.
    pub fn generated(model: &str, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            content: Content::Text(content.into()),
            source: Some("generate"),
            role: Role::Assistant,
            model: Some(model.to_string()),
        }
    }

    /// The message with `reasoning` before its text, where Inspect keeps what a model thought
    /// before it replied; unchanged when there is none.
    pub fn with_reasoning(mut self, reasoning: Vec<ContentItem>) -> ChatMessage {
        if reasoning.is_empty() {
            return self;
        }
        let text = ContentItem::Text {
            text: self.text().to_string(),
        };
        self.content = Content::Items(reasoning.into_iter().chain([text]).collect());
        self
    }

    /// The message's text, without its reasoning.
    pub fn text(&self) -> &str {
        match &self.content {
            Content::Text(text) => text,
            Content::Items(items) => items
                .iter()
                .find_map(|item| match item {
                    ContentItem::Text { text } => Some(text.as_str()),
                    ContentItem::Reasoning { .. } => None,
                })
                .unwrap_or_default(),
        }
    }
}

/// A message's content: its text alone (every message without thinking, as Inspect writes
/// them), or Inspect's content items.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Content {
    /// The text.
    Text(String),
    /// The reasoning, then the text.
    Items(Vec<ContentItem>),
}

/// One of a message's content items: Inspect's `ContentReasoning` and `ContentText`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ContentItem {
    /// What the model thought before its reply.
    Reasoning {
        /// The thinking's text (empty for a redacted block: assay keeps no encrypted payload).
        reasoning: String,
        /// The provider returned the block encrypted.
        redacted: bool,
    },
    /// The reply's text.
    Text {
        /// The text.
        text: String,
    },
}

/// The reasoning items of a reply that thought `text`, with `redacted` blocks the provider
/// returned encrypted (each its own item, as Inspect keeps them); none for empty thinking.
pub fn reasoning(text: &str, redacted: usize) -> Vec<ContentItem> {
    let thought = (!text.is_empty()).then(|| ContentItem::Reasoning {
        reasoning: text.to_string(),
        redacted: false,
    });
    let encrypted = (0..redacted).map(|_| ContentItem::Reasoning {
        reasoning: String::new(),
        redacted: true,
    });
    thought.into_iter().chain(encrypted).collect()
}

/// A message's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The system prompt.
    System,
    /// The task, or (PyBench) the interpreter speaking as the user.
    User,
    /// The model.
    Assistant,
}

/// `ModelOutput`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelOutput {
    /// The model.
    pub model: String,
    /// The answer, when there is one.
    pub choices: Vec<Choice>,
    /// The answer's text.
    pub completion: String,
    /// Tokens of the request that produced it, where it produced this answer alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<ModelUsage>,
    /// Seconds the request took, likewise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<f64>,
}

impl ModelOutput {
    /// The output of one answer, `message`.
    pub fn answer(message: ChatMessage, stop_reason: StopReason) -> ModelOutput {
        ModelOutput {
            model: message.model.clone().unwrap_or_default(),
            completion: message.text().to_string(),
            choices: vec![Choice {
                message,
                stop_reason,
            }],
            usage: None,
            time: None,
        }
    }
}

/// `ChatCompletionChoice`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    /// The assistant message.
    pub message: ChatMessage,
    /// Why generation stopped.
    pub stop_reason: StopReason,
}

/// Inspect's `StopReason` words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model ended its answer (or a stop sequence did).
    Stop,
    /// The token limit cut it.
    MaxTokens,
    /// A content filter stopped it.
    ContentFilter,
    /// It ended to call tools.
    ToolCalls,
    /// Not reported, or not known to assay.
    Unknown,
}

impl StopReason {
    /// The provider's finish reason (OpenAI's and Anthropic's words) in Inspect's terms.
    pub fn of(finish_reason: Option<&str>) -> StopReason {
        match finish_reason {
            Some("stop" | "end_turn" | "stop_sequence") => StopReason::Stop,
            Some("length" | "max_tokens") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::ContentFilter,
            Some("tool_calls" | "tool_use") => StopReason::ToolCalls,
            _ => StopReason::Unknown,
        }
    }
}

/// `Score`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Score {
    /// `C` (Inspect's CORRECT) or `I` (INCORRECT).
    pub value: &'static str,
    /// The code judged (BigCodeBench), the final reply (PyBench).
    pub answer: String,
    /// Why: the first failing test and its traceback, or the reason.
    pub explanation: String,
    /// assay's verdict in full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Verdict>,
}

/// What a run recorded of a sample beyond its verdict, per benchmark.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SampleFacts {
    /// A BigCodeBench sample's judging.
    BigCodeBench(metadata::SampleFacts),
    /// A PyBench episode.
    PyBench(metadata::EpisodeFacts),
}

/// assay's verdict on a sample in full, per benchmark.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Verdict {
    /// A BigCodeBench sample's status and tests.
    BigCodeBench(metadata::SampleVerdict),
    /// A PyBench episode's verdicts, both ways of judging.
    PyBench(metadata::EpisodeVerdict),
}

/// Inspect's CORRECT.
pub const CORRECT: &str = "C";
/// Inspect's INCORRECT.
pub const INCORRECT: &str = "I";

/// `EvalError`: what Inspect records of a sample it could not finish.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalError {
    /// One line.
    pub message: String,
    /// The detail (a traceback, when the environment gave one).
    pub traceback: String,
    /// The same (assay's texts have no colours).
    pub traceback_ansi: String,
}

impl EvalError {
    /// An error saying `message`, with `detail`.
    pub fn new(message: String, detail: String) -> EvalError {
        EvalError {
            message,
            traceback: detail.clone(),
            traceback_ansi: detail,
        }
    }
}

/// `EvalSampleReductions`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reductions {
    /// [`SCORER`].
    pub scorer: String,
    /// As in the matching [`EvalScore`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reducer: Option<String>,
    /// One per task with a judged sample.
    pub samples: Vec<ReducedScore>,
}

/// `EvalSampleScore`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReducedScore {
    /// The task's reduced value.
    pub value: f64,
    /// The task.
    pub sample_id: String,
}
