//! PyBench's LLM judge (the paper's "Pass Rate (LLM)" and win/tie/lose): each request and
//! reply (`judgements.jsonl`) and the figures one judging gives (`summary.json`'s `judges`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::category::CategoryFigures;
use crate::generation::TokenUsage;
use crate::reasoning::ReasoningSettings;

/// Which of upstream's two judge prompts (`config/evaluator*.yaml`, Mercury7353/PyBench at
/// 4096d69, the last commit that had them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JudgePrompt {
    /// `evaluator_winlose_rate.yaml`: Pass ("executed correctly") and a 0/1 Decision per
    /// agent. What upstream's last evaluation script ran, and what its average-turns script
    /// read.
    Winlose,
    /// `evaluator.yaml`: Pass ("fulfill the user query"), ReasoningQuality and CodeQuality
    /// (1-10) per agent.
    Scores,
}

impl JudgePrompt {
    /// Its name in files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            JudgePrompt::Winlose => "winlose",
            JudgePrompt::Scores => "scores",
        }
    }
}

/// Where the run's trajectory sits in a judge request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JudgeOrder {
    /// The paper's: the reference is Agent1, the run Agent2. Every figure but position bias
    /// is read from these.
    Paper,
    /// The reverse, asked only to measure position bias.
    Swapped,
}

/// The two agents' values of one field of a judge's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PerAgent<T> {
    /// Agent1's (the reference in the paper's order).
    pub agent1: T,
    /// Agent2's (the run in the paper's order).
    pub agent2: T,
}

/// A judge's reply, read as upstream reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgeVerdict {
    /// `Pass` per agent, as written (only the exact string "Pass" passes, as upstream counts).
    pub pass: PerAgent<String>,
    /// `Decision` per agent (winlose), as integers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<PerAgent<i64>>,
    /// `ReasoningQuality` per agent (scores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_quality: Option<PerAgent<i64>>,
    /// `CodeQuality` per agent (scores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_quality: Option<PerAgent<i64>>,
}

/// What a reply needed to be read beyond upstream's reader (which reads neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyLeniency {
    /// Its ``` fence opened with a language tag (```` ```json ````).
    LanguageTag,
    /// Its JSON had a comma before a closing bracket, as upstream's example format has.
    TrailingComma,
}

impl ReplyLeniency {
    /// Its name in files and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplyLeniency::LanguageTag => "language tag",
            ReplyLeniency::TrailingComma => "trailing comma",
        }
    }
}

/// The chat a judge was sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgeRequest {
    /// The system prompt, upstream's byte for byte.
    pub system: String,
    /// The user message: upstream's template with the two trajectories in it.
    pub user: String,
}

/// One line of `judgements.jsonl`: one judge request and what came of it. A rerun reuses a
/// line whose `key` it would ask again (the same judge, settings and request), unless the
/// request failed. A reply that could not be read is asked again (`ask` 1, 2...), up to the
/// judging's `reasks`; each ask is a line of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgementRecord {
    /// `PyBench/<index>`.
    pub task_id: String,
    /// 16 hex digits of BLAKE3 over the judge, its settings and the request.
    pub key: String,
    /// The judge (`openai:gpt-4o`).
    pub judge: String,
    /// Which prompt.
    pub prompt: JudgePrompt,
    /// Where the run's trajectory sat.
    pub order: JudgeOrder,
    /// What was sent.
    pub request: JudgeRequest,
    /// Which ask of this request: 0 the first, n the nth asked again because no reply before
    /// it could be read.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ask: u32,
    /// The judge's answer (absent when the request failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// What the judge thought before answering, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// Why the answer ended (`stop`, `length`...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub finish_reason: String,
    /// Tokens billed.
    #[serde(default)]
    pub usage: TokenUsage,
    /// Seconds the request took, retries included.
    #[serde(default)]
    pub latency_seconds: f64,
    /// HTTP attempts made.
    #[serde(default)]
    pub attempts: u32,
    /// Why the request failed for good (a rerun asks again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The verdict, when the reply could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<JudgeVerdict>,
    /// What reading the verdict needed beyond upstream's reader (empty: read as upstream
    /// reads it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lenient: Vec<ReplyLeniency>,
    /// Why the reply could not be read (no ``` block, not JSON, a field missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How a judging was made: what decides its verdicts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeSettings {
    /// The judge (`openai:gpt-4o`).
    pub judge: String,
    /// Which prompt.
    pub prompt: JudgePrompt,
    /// The reference trajectories (Agent1), as given.
    pub reference: String,
    /// 16 hex digits of BLAKE3 of the reference trajectories as sent.
    pub reference_digest: String,
    /// Sampling temperature (upstream's 0.2).
    pub temperature: f64,
    /// Nucleus sampling (upstream's 0.5; not sent to Anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Token limit of a reply (upstream's 1000).
    pub max_tokens: u32,
    /// Frequency penalty (the winlose config's 1.02, upstream's client's 1.0 for scores;
    /// OpenAI-style servers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    /// Presence penalty (upstream's client's 1.0; OpenAI-style servers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// The judge's reasoning settings, when any differs from its default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningSettings>,
    /// How many times a reply that cannot be read is asked again before it counts as
    /// unreadable (absent: never).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasks: u32,
    /// Fields the user added to every request body (`--extra-body`), when any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_body: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Win/tie/lose of the run against the reference, over the tasks whose verdict was read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WinTieLose {
    /// The run's score above the reference's.
    pub win: usize,
    /// Equal.
    pub tie: usize,
    /// Below.
    pub lose: usize,
    /// What was compared: `decision` (winlose) or `score` (scores: ReasoningQuality +
    /// CodeQuality, upstream's Score).
    pub by: String,
}

/// How far the judge agrees with the unit checks, over the tasks both judged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// Which checks: `faithful` or `fixed` (the run's headline).
    pub checks: String,
    /// Tasks both judged (the judge's verdict read, the checks' not `infra`).
    pub tasks: usize,
    /// Both passed it.
    pub both_pass: usize,
    /// The judge passed it, the checks failed it.
    pub judge_only: usize,
    /// The checks passed it, the judge failed it.
    pub checks_only: usize,
    /// Both failed it.
    pub both_fail: usize,
    /// Share of tasks where they agree.
    pub observed: f64,
    /// Cohen's kappa: agreement beyond chance; absent when chance alone agrees on every task
    /// (both always say the same thing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kappa: Option<f64>,
    /// Tasks the judge passed and the checks failed.
    pub judge_only_tasks: Vec<String>,
    /// Tasks the checks passed and the judge failed.
    pub checks_only_tasks: Vec<String>,
}

/// Whether the verdict follows the order: each pair judged both ways round.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PositionBias {
    /// Tasks whose verdict was read in both orders.
    pub pairs: usize,
    /// The same preference both ways (the run better, worse, or tied, in both).
    pub consistent: usize,
    /// The preference changed with the order and went to Agent1 both times.
    pub follows_first: usize,
    /// The preference changed with the order and went to Agent2 both times.
    pub follows_second: usize,
    /// The preference changed, a tie one way.
    pub other: usize,
    /// `(follows_first + follows_second) / pairs`.
    pub rate: f64,
    /// Tasks whose preference changed with the order.
    pub changed_tasks: Vec<String>,
    /// Of the pairs, the run's Pass the same both ways.
    pub pass_same: usize,
    /// The run passed only as Agent2.
    pub pass_only_second: usize,
    /// The run passed only as Agent1.
    pub pass_only_first: usize,
    /// Tasks whose Pass for the run changed with the order.
    pub pass_changed_tasks: Vec<String>,
}

/// The requests a judging read for one task: the `key`s of their lines in
/// `judgements.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerKeys {
    /// The request in the paper's order.
    pub paper: String,
    /// The request the other way round (both orders): the same key when the two sides are
    /// the same trajectory (one request, asked once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swapped: Option<String>,
}

/// The paper's figures of a judged model, when it published some.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedJudge {
    /// The model as the paper names it.
    pub model: String,
    /// Pass Rate (LLM), 0 to 1 (Table 3).
    pub pass_rate: f64,
    /// Win, tie, lose against GPT-3.5 (`utils/draw_win_tie_lose.py`), when drawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub win_tie_lose: Option<[f64; 3]>,
    /// Average turns (Table 3).
    pub average_turns: f64,
}

/// What one judging of a run gives (`summary.json`'s `judges`, one per judge, prompt and
/// reference).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeFigures {
    /// How it was made.
    pub settings: JudgeSettings,
    /// 16 hex digits of BLAKE3 of the settings: a later judging with the same replaces it.
    pub key: String,
    /// 16 hex digits of BLAKE3 of the episodes judged: the figures hold while the run's
    /// episodes are these.
    pub episodes_digest: String,
    /// Whether each pair was judged in both orders.
    pub both_orders: bool,
    /// Tasks of the run.
    pub tasks: usize,
    /// Task → why it was not judged: the run has no trajectory for it (it could not run here,
    /// or the model or the harness failed for good). Counted as failed in `pass_rate_all`
    /// only.
    #[serde(default)]
    pub set_apart: BTreeMap<String, String>,
    /// Tasks whose verdict (the paper's order) was read.
    pub read: usize,
    /// Task → why its reply could not be read (counted in no rate, as upstream).
    pub unreadable: BTreeMap<String, String>,
    /// Task → what reading its verdict needed beyond upstream's reader: verdicts upstream
    /// would have counted unreadable.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lenient: BTreeMap<String, Vec<ReplyLeniency>>,
    /// Task → how many times its request was asked again because no reply could be read.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reasked: BTreeMap<String, u32>,
    /// Task → why its request (of either order) failed for good (a rerun asks again).
    pub failed: BTreeMap<String, String>,
    /// Tasks the judge passed.
    pub passed: usize,
    /// Pass Rate (LLM): `passed / read`, as upstream divides.
    pub pass_rate: f64,
    /// `passed / tasks`: what could not be read, and what was set apart, counted as failed.
    pub pass_rate_all: f64,
    /// Per paper category, over the tasks read.
    pub categories: BTreeMap<String, CategoryFigures>,
    /// The reference's pass rate by the same judge, over the tasks read.
    pub reference_pass_rate: f64,
    /// Win/tie/lose against the reference.
    pub win_tie_lose: WinTieLose,
    /// Average turns as the paper counts them (`utils/calculate_avg_step.py`): replies per
    /// task read, 10 where the judge said Failed.
    pub average_turns: f64,
    /// Average turns as assay counts them: replies per judged task, 10 where the checks
    /// failed it.
    pub average_turns_checks: f64,
    /// The judge against the unit checks.
    pub agreement: Agreement,
    /// With both orders: how far the verdict follows the position.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<PositionBias>,
    /// Task → the requests its figures read (for a viewer to find them).
    #[serde(default)]
    pub answers: BTreeMap<String, AnswerKeys>,
    /// Requests answered, asks again included.
    pub requests: usize,
    /// Their tokens.
    pub tokens: TokenUsage,
    /// What they cost in US dollars, at the prices given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The paper's figures for the run's model, when it published some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<PublishedJudge>,
}
