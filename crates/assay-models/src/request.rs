//! What the caller asks for: one prompt and its sampling parameters.

/// The text sent to the model. The crate knows nothing of benchmarks; building the prompt is
/// the caller's job.
#[derive(Clone, Debug, PartialEq)]
pub enum Prompt {
    /// A single user message: what the official BigCodeBench harness sends to API chat models
    /// (no system message, no assistant prefill).
    Chat {
        /// The user message, the whole prompt.
        user: String,
    },
    /// A raw completion prompt for base models, sent to `{base}/completions`. Only
    /// OpenAI-compatible servers offer that endpoint; Anthropic fails up front.
    Completion {
        /// The text the model continues.
        prompt: String,
    },
}

/// One prompt and how to sample it.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// What to send.
    pub prompt: Prompt,
    /// Samples wanted for this prompt. OpenAI gets one request with `n`; Anthropic has no `n`,
    /// so it gets `n` requests.
    pub n: u32,
    /// Ignored (not sent) for OpenAI reasoning models, which reject it.
    pub temperature: f64,
    /// `None` = not sent, leaving the provider's default.
    pub top_p: Option<f64>,
    /// Token limit for each sample, sent as `max_tokens` or `max_completion_tokens` as the
    /// server expects.
    pub max_tokens: u32,
    /// Strings that end generation; empty = not sent. The matched string is not in the text.
    pub stop: Vec<String>,
}
