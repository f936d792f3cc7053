//! PyBench's records: the trajectory in upstream's format (`trajectory.jsonl`), and assay's
//! own record of an episode (`results.jsonl`).

use serde::{Deserialize, Serialize};

use crate::category::CategoryFigures;
use crate::generation::TokenUsage;
use crate::outcome::Status;

/// One chat message as upstream's trajectories keep it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text. An assistant's thinking is not in it (assay's trajectories set it apart).
    pub content: String,
    /// assay's addition: what an assistant thought before this reply, returned beside it or
    /// set apart from its text. Never run, never sent back to the model. Absent when it did
    /// not think (upstream's trajectories never have it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
}

impl Message {
    /// A message of `role` saying `content`.
    pub fn new(role: &str, content: impl Into<String>) -> Message {
        Message {
            role: role.to_string(),
            content: content.into(),
            thinking: None,
        }
    }
}

/// One line of upstream's `trajectory.jsonl`: the conversation, then the task's fields as
/// `task.json` has them. Field order and names are upstream's, so its tools read ours.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrajectoryRecord {
    /// System prompt, `[INFO]` file message, query, then (reply, interpreter message)*, and
    /// the final reply if there was one.
    pub messages: Vec<Message>,
    /// The task's index.
    pub index: String,
    /// Upstream's labels.
    #[serde(default)]
    pub category1: String,
    /// Upstream's labels.
    #[serde(default)]
    pub category2: String,
    /// Upstream's labels.
    #[serde(default)]
    pub category3: String,
    /// The query.
    #[serde(default)]
    pub user: String,
    /// The inputs.
    #[serde(default)]
    pub file_paths: Vec<String>,
    /// Display names.
    #[serde(default)]
    pub attachments: Vec<String>,
}

/// Why an episode ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EpisodeEnd {
    /// The model replied without code: its answer.
    Answered,
    /// The turn limit was reached.
    MaxTurns,
    /// A replayed trajectory had no more replies (upstream: the model call failed and the
    /// loop stopped).
    ReplayExhausted,
    /// The conversation outgrew the model's context window: its server refused the next
    /// request as too long (upstream's loop ends at a failed model call too). Judged on what
    /// the episode produced; `end_reason` quotes the server.
    ContextFull,
    /// The model's reply was cut off inside its thinking (its token limit came first): it
    /// has no code and no answer. Judged on what the episode produced.
    CutWhileThinking,
    /// A coding agent ended otherwise than by finishing: it failed, or its time or token
    /// budget ran out (`end_reason` says which). Judged on what it produced.
    AgentEnded,
    /// The model could not be reached for good (the task is `infra`; a rerun asks again).
    ModelFailed,
    /// The harness failed (a session that would not start, outputs that could not be read
    /// back or kept): the task is `infra`, and a rerun runs it again.
    HarnessFailed,
    /// The episode could not run here: inputs missing, the internet needed, the sandbox
    /// failed (the task is `infra`).
    NotRun,
    /// Judged from a recorded trajectory (`assay eval pybench`); nothing ran.
    Recorded,
}

/// One executed cell of an episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    /// The turn (1-based) whose reply held the cell.
    pub turn: u32,
    /// `pass` (ran), `error` (raised), `timeout` (interrupted at the cell limit), `oom`.
    pub status: Status,
    /// The cell's error or limit, in a sentence.
    pub reason: String,
    /// Wall time.
    pub seconds: f64,
    /// Bytes the cell printed.
    pub output_bytes: u64,
    /// Characters of the observation sent back (after the cap).
    pub observation_chars: usize,
    /// Whether the interpreter had to be restarted after it (state lost).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restarted: bool,
    /// Figures it displayed, saved as `figures/<index>-<turn>-<n>.png`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<String>,
}

/// What one way of judging an episode said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckVerdict {
    /// `pass`, `fail`, or `infra` (the check could not be made: an input missing here, no
    /// output files to read).
    pub status: Status,
    /// Why, in a sentence.
    pub reason: String,
}

/// The two verdicts every episode gets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdicts {
    /// Upstream's unit test reproduced, bugs included.
    pub faithful: CheckVerdict,
    /// The same test with upstream's bugs corrected.
    pub fixed: CheckVerdict,
}

/// One line of a PyBench run's `results.jsonl`: an episode and its verdicts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeRecord {
    /// `PyBench/<index>`.
    pub task_id: String,
    /// The paper's category (`chart_analysis`...), when the task's labels give one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// The headline verdict: `pass`, `fail` or `infra` (the verdict `--checks` picked, or
    /// `infra` when the episode could not run).
    pub status: Status,
    /// Why, in a sentence.
    pub reason: String,
    /// Both verdicts.
    pub verdicts: Verdicts,
    /// Replies the model gave (upstream's assistant messages).
    pub turns: u32,
    /// Why the episode ended.
    pub end: EpisodeEnd,
    /// Why, in a sentence: the turn limit, the model's last words, or what its server said
    /// when it refused a request (a full context window, a failure).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub end_reason: String,
    /// Each executed cell.
    #[serde(default)]
    pub cells: Vec<CellRecord>,
    /// Tokens billed for the episode's replies.
    #[serde(default)]
    pub tokens: TokenUsage,
    /// Wall time of the episode, model and cells.
    pub seconds: f64,
    /// Files the episode left in `output/` (kept under `tasks/<index>/output/`).
    #[serde(default)]
    pub outputs: Vec<String>,
}

/// One way of judging's figures over a PyBench run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PybenchFigures {
    /// Tasks that passed.
    pub passed: usize,
    /// Passed over every task of the run (the paper's rate: what could not be judged counts
    /// as failed, as upstream's runner counts a missing trajectory).
    pub pass_rate: f64,
    /// Passed over the tasks judged (`infra` set apart).
    pub pass_rate_judged: f64,
    /// Per paper category: `tasks`, `passed`, `pass_rate` (over every task of the category).
    pub categories: std::collections::BTreeMap<String, CategoryFigures>,
    /// Average turns as the paper counts them: replies per judged task, a failed one counting
    /// as 10.
    pub average_turns: f64,
}

/// `summary.json` of a PyBench run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PybenchSummary {
    /// The verdict that heads the figures: `faithful` or `fixed`.
    pub checks: String,
    /// Tasks in the run.
    pub tasks: usize,
    /// Tasks judged (not `infra`).
    pub judged: usize,
    /// Upstream's verdicts, bugs included.
    pub faithful: PybenchFigures,
    /// The corrected verdicts.
    pub fixed: PybenchFigures,
    /// Replies per judged task, as given.
    pub average_turns_raw: f64,
    /// Tokens billed for every reply.
    pub tokens: TokenUsage,
    /// What those tokens cost in US dollars, at the prices given (`--price-in`,
    /// `--price-out`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Of `cost_usd`, what the reasoning tokens cost; absent without prices or reasoning
    /// tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_cost_usd: Option<f64>,
    /// Task id → why it is `infra`.
    pub infra: std::collections::BTreeMap<String, String>,
    /// Task id → what the model's server said when the conversation outgrew its context
    /// window: episodes that ended there, judged on what they produced. Absent when none.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub context_full: std::collections::BTreeMap<String, String>,
    /// Tasks whose episode ended at a reply cut off inside its thinking. Absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cut_while_thinking: Vec<String>,
    /// The paper's figures for the same model, when it published some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<PublishedFigures>,
    /// What LLM judges said of the run (`assay judge pybench`), one entry per judge, prompt
    /// and reference; kept while the episodes they judged are the run's. Absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judges: Vec<crate::judge::JudgeFigures>,
    /// Wall time of this session.
    pub wall_seconds: f64,
}

/// The PyBench paper's figures for one model (Table 3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedFigures {
    /// The model as the paper names it.
    pub model: String,
    /// The unit-test pass rate over the 143 tasks (0 to 1).
    pub pass_rate: f64,
    /// Per paper category (0 to 1).
    pub categories: std::collections::BTreeMap<String, f64>,
    /// Average turns.
    pub average_turns: f64,
}
