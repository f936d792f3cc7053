//! A generation's records: one line of `generation.jsonl` per request, and what the answers
//! came to.

use serde::{Deserialize, Serialize};

use crate::reasoning::Thinking;

/// The prompt style a model answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// The function signature and its docstring, to be completed.
    Complete,
    /// A natural-language instruction.
    Instruct,
}

impl Split {
    /// The split a run's identity names (`identity.split`); complete when it names none.
    pub fn named(name: Option<&str>) -> Split {
        match name {
            Some("instruct") => Split::Instruct,
            _ => Split::Complete,
        }
    }

    /// The name files and options use.
    pub fn as_str(&self) -> &'static str {
        match self {
            Split::Complete => "complete",
            Split::Instruct => "instruct",
        }
    }
}

/// How answers are sampled; part of a run's identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationSettings {
    /// The prompt style.
    pub split: Split,
    /// Answers per task.
    pub n: u32,
    /// Sampling temperature.
    pub temperature: f64,
    /// Not sent when `None` (greedy decoding ignores it).
    pub top_p: Option<f64>,
    /// Token limit per answer.
    pub max_tokens: u32,
}

/// Tokens billed, summed over the HTTP calls that produced an answer.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TokenUsage {
    /// Tokens of the prompts.
    pub prompt_tokens: u64,
    /// Tokens of the answers, thinking included (providers bill it as output).
    pub completion_tokens: u64,
    /// Of `completion_tokens`, those the model spent thinking, where the provider says
    /// (OpenAI's `completion_tokens_details.reasoning_tokens`; Anthropic reports none apart).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_usize(n: &usize) -> bool {
    *n == 0
}

fn no_thinking(thinking: &[Option<Thinking>]) -> bool {
    thinking.iter().all(Option::is_none)
}

impl std::ops::AddAssign<&TokenUsage> for TokenUsage {
    fn add_assign(&mut self, other: &TokenUsage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
    }
}

/// What a model's tokens cost (`--price-in`, `--price-out`), in US dollars per million.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Prices {
    /// Per million prompt tokens.
    pub prompt_usd_per_million: f64,
    /// Per million completion tokens.
    pub completion_usd_per_million: f64,
}

impl Prices {
    /// What `usage` costs at these prices, in US dollars.
    pub fn cost(&self, usage: &TokenUsage) -> f64 {
        (usage.prompt_tokens as f64 * self.prompt_usd_per_million
            + usage.completion_tokens as f64 * self.completion_usd_per_million)
            / 1e6
    }

    /// What the thinking in `usage` cost, as completion tokens, in US dollars; none when the
    /// provider counted no reasoning tokens.
    pub fn reasoning_cost(&self, usage: &TokenUsage) -> Option<f64> {
        (usage.reasoning_tokens > 0)
            .then(|| usage.reasoning_tokens as f64 * self.completion_usd_per_million / 1e6)
    }
}

/// One line of `generation.jsonl`: a request that was answered, or failed for good.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationRecord {
    /// The task asked.
    pub task_id: String,
    /// The model's texts (for a base model: the prompt plus its continuation), as the
    /// official `raw_solution`.
    pub raw: Vec<String>,
    /// Each text sanitized, the official `solution`.
    pub solutions: Vec<String>,
    /// Per text, as the provider reported it (`stop`, `length`...).
    pub finish_reasons: Vec<Option<String>>,
    /// Tokens billed for the request.
    pub usage: TokenUsage,
    /// From the first attempt to the answer.
    pub latency_seconds: f64,
    /// HTTP attempts made.
    pub attempts: u32,
    /// Why the request failed for good (then `raw` is empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Answers the request asked for (a server ignoring `n` gives fewer).
    #[serde(default)]
    pub wanted: u32,
    /// Where the model's context window decided the answers: the request as first asked did
    /// not fit it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextLimit>,
    /// Per text, the thinking it came with (returned beside it, or set apart from it); not
    /// written when no answer of the request thought (read back empty then). `solutions`
    /// never hold it.
    #[serde(default, skip_serializing_if = "no_thinking")]
    pub thinking: Vec<Option<Thinking>>,
}

impl GenerationRecord {
    /// The thinking of answer `i`, if it thought.
    pub fn thinking_of(&self, i: usize) -> Option<&Thinking> {
        self.thinking.get(i).and_then(Option::as_ref)
    }

    /// Why answer `i` has no solution when that is not the model's doing, put before its
    /// sample's reason: a prompt that did not fit the model's window, or an answer cut off
    /// inside its thinking.
    pub fn empty_note(&self, i: usize) -> Option<String> {
        if let Some(context) = self.context.as_ref().filter(|c| c.empty) {
            return Some(context.note());
        }
        self.thinking_of(i)
            .filter(|t| t.cut)
            .map(|_| CUT_WHILE_THINKING.to_string())
    }
}

/// The reason an answer cut off inside its thinking starts with.
pub const CUT_WHILE_THINKING: &str = "no answer: it ended inside its thinking, before any answer \
     (a higher --max-tokens leaves it room to finish thinking and answer)";

/// A request the model's context window refused, and what came of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextLimit {
    /// What did not fit, in a sentence ("the prompt (1452 tokens) does not fit the model's
    /// context window (1200 tokens)").
    pub reason: String,
    /// The server's own words, with the HTTP status.
    pub said: String,
    /// The token limit the request was asked again with, where the window the server named
    /// left room beside the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Whether the answers are empty because no request fit (the prompt alone, or again with
    /// the lower limit): judged as the empty answers they are, `fail`.
    pub empty: bool,
}

impl ContextLimit {
    /// Why an empty answer is empty, put before its sample's reason.
    pub fn note(&self) -> String {
        format!("no answer: {} ({})", self.reason, self.said)
    }
}

/// Answers the model's context window decided, counted apart from the rest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextCounts {
    /// Answers asked again with the token limit that fits beside their prompt.
    pub lowered: usize,
    /// Answers left empty because their prompt did not fit (judged `fail`).
    pub empty: usize,
}

impl ContextCounts {
    /// Whether the window decided no answer.
    pub fn is_zero(&self) -> bool {
        self.lowered == 0 && self.empty == 0
    }
}

/// Samples a task still lacks after a generation, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unanswered {
    /// The task.
    pub task_id: String,
    /// Answers it lacks.
    pub samples: u32,
    /// The last request's error.
    pub reason: String,
}

/// What the answers cost, over every answered request of the run (earlier sessions too).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GenerationTotals {
    /// Answered requests.
    pub requests: usize,
    /// Answers received.
    pub samples: usize,
    /// Tokens billed.
    pub usage: TokenUsage,
    /// Requests that needed more than one attempt.
    pub retried_requests: usize,
    /// Attempts beyond the first, over all requests.
    pub retries: u64,
    /// Mean request latency.
    pub latency_mean_seconds: f64,
    /// Slowest request.
    pub latency_max_seconds: f64,
    /// Answers that hit the token limit: likely cut mid-program.
    pub cut_short: usize,
    /// Answers with no text at all (a refusal, a content filter, a reasoning model that spent
    /// its budget thinking): scored as they are, as officially, but worth knowing. Answers
    /// empty because their prompt did not fit the model's window are counted in `context`.
    pub empty: usize,
    /// Answers the model's context window decided.
    #[serde(default, skip_serializing_if = "ContextCounts::is_zero")]
    pub context: ContextCounts,
    /// Answers that came with thinking (returned beside them or set apart from their text).
    #[serde(default, skip_serializing_if = "is_zero_usize")]
    pub thinking: usize,
    /// Of the answers that hit the token limit, those cut off inside their thinking: no
    /// answer, judged `fail`.
    #[serde(default, skip_serializing_if = "is_zero_usize")]
    pub cut_while_thinking: usize,
    /// What `usage` cost in US dollars, at the prices given (`--price-in`, `--price-out`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Of `cost_usd`, what the reasoning tokens cost; absent without prices or reasoning
    /// tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_cost_usd: Option<f64>,
}

/// What a generation came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationOutcome {
    /// Rows written to `samples.jsonl`.
    pub samples: usize,
    /// Tasks that lack answers.
    pub unanswered: Vec<Unanswered>,
    /// What the answers cost.
    pub totals: GenerationTotals,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_usage_times_price_per_million() {
        let prices = Prices {
            prompt_usd_per_million: 2.5,
            completion_usd_per_million: 10.0,
        };
        let usage = TokenUsage {
            prompt_tokens: 1_200_000,
            completion_tokens: 30_000,
            reasoning_tokens: 0,
        };
        assert!((prices.cost(&usage) - 3.3).abs() < 1e-12);
        assert_eq!(prices.cost(&TokenUsage::default()), 0.0);
        let thinking = TokenUsage {
            reasoning_tokens: 20_000,
            ..usage
        };
        assert!((prices.reasoning_cost(&thinking).unwrap() - 0.2).abs() < 1e-12);
        assert_eq!(prices.reasoning_cost(&usage), None);
    }
}
