//! What comes back: texts, token usage and how hard it was to get them.

use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{status, thinking};
use assay_records::{ThinkTag, Thinking, ThinkingSource, TokenUsage};

/// The samples generated for one [`Request`](crate::Request).
#[derive(Debug, Clone)]
pub struct Response {
    /// At most `n` texts (a server that ignores `n` gives one), in choice index order. A
    /// choice without content (e.g. filtered) is an empty string; its finish reason says why.
    pub texts: Vec<String>,
    /// Per text, as the provider reported it (`stop`, `length`, `content_filter`, `end_turn`,
    /// `max_tokens`, `stop_sequence`, ...).
    pub finish_reasons: Vec<Option<String>>,
    /// Per text, the tools the model called with it (empty: none, or no tools offered).
    pub tool_calls: Vec<Vec<crate::ToolCall>>,
    /// Per text, what is judged of it: the text with any thinking written into it set apart
    /// (the text itself when it held none; empty when it ended inside its thinking).
    pub answers: Vec<String>,
    /// Per text, the thinking it came with: returned beside it, or set apart from it.
    pub thinking: Vec<Option<Thinking>>,
    /// Per text, Anthropic's thinking blocks as they came (signed): what a tool-use turn
    /// must send back unchanged. Empty elsewhere.
    pub thinking_blocks: Vec<Vec<Value>>,
    /// Tokens the provider reported, summed over the requests that produced the texts.
    pub usage: TokenUsage,
    /// Wall time of the whole call, retries and waits included.
    pub latency: Duration,
    /// HTTP attempts made (1 = the first try succeeded). When one call needs several HTTP
    /// requests (Anthropic with `n > 1`), the count of the request that needed the most, so
    /// that 1 still means "no retries". 0 when `n` was 0 and nothing was sent.
    pub attempts: u32,
}

/// Whether a finish reason says the answer hit the token limit (OpenAI `length`, Anthropic
/// `max_tokens`): likely cut mid-program.
pub fn hit_token_limit(finish_reason: &str) -> bool {
    matches!(finish_reason, "length" | "max_tokens")
}

impl Response {
    /// `n` answers of `text` that no API billed (the reference solutions, or empty answers
    /// where nothing could be asked), as asked for since `started` in `attempts` attempts.
    pub fn same(text: String, n: u32, started: Instant, attempts: u32) -> Response {
        let n = n as usize;
        Response {
            texts: vec![text.clone(); n],
            finish_reasons: vec![None; n],
            tool_calls: vec![Vec::new(); n],
            answers: vec![text; n],
            thinking: vec![None; n],
            thinking_blocks: vec![Vec::new(); n],
            usage: TokenUsage::default(),
            latency: started.elapsed(),
            attempts,
        }
    }
}

/// The decoded body of one successful HTTP call.
#[derive(Debug, Default)]
pub(crate) struct Generation {
    pub(crate) texts: Vec<String>,
    pub(crate) finish_reasons: Vec<Option<String>>,
    pub(crate) tool_calls: Vec<Vec<crate::ToolCall>>,
    /// Per text, thinking returned beside it (source `field`).
    pub(crate) thinking: Vec<Option<Thinking>>,
    /// Per text, Anthropic's thinking blocks as they came.
    pub(crate) thinking_blocks: Vec<Vec<Value>>,
    pub(crate) usage: TokenUsage,
}

impl Generation {
    /// Appends another call's samples after this one's.
    pub(crate) fn extend(&mut self, other: Generation) {
        self.texts.extend(other.texts);
        self.finish_reasons.extend(other.finish_reasons);
        self.tool_calls.extend(other.tool_calls);
        self.thinking.extend(other.thinking);
        self.thinking_blocks.extend(other.thinking_blocks);
        self.usage += &other.usage;
    }

    /// The response: each text's thinking, returned beside it or written into it between
    /// `tags`, set apart from its answer.
    pub(crate) fn respond(self, tags: &[ThinkTag], latency: Duration, attempts: u32) -> Response {
        let mut answers = Vec::with_capacity(self.texts.len());
        let mut thinking = Vec::with_capacity(self.texts.len());
        let mut beside = self.thinking.into_iter();
        for (text, finish) in self.texts.iter().zip(&self.finish_reasons) {
            let parted = thinking::part(text, tags);
            let unanswered = parted.answer.trim().is_empty();
            answers.push(parted.answer);
            let mut thought = match (beside.next().flatten(), parted.thinking) {
                (None, written) => written,
                (Some(field), None) => Some(field),
                // A server that returned thinking beside an answer that holds more of it:
                // kept together, as returned beside it.
                (Some(mut field), Some(written)) => {
                    field.text = [field.text, written.text].join("\n\n");
                    field.cut = written.cut;
                    Some(field)
                }
            };
            // Thinking returned beside an empty answer that hit the token limit: the limit
            // came while it thought.
            if let Some(t) = thought.as_mut() {
                t.cut |= unanswered && finish.as_deref().is_some_and(hit_token_limit);
            }
            thinking.push(thought);
        }
        let mut thinking_blocks = self.thinking_blocks;
        thinking_blocks.resize(self.texts.len(), Vec::new());
        Response {
            answers,
            thinking,
            thinking_blocks,
            texts: self.texts,
            finish_reasons: self.finish_reasons,
            tool_calls: self.tool_calls,
            usage: self.usage,
            latency,
            attempts,
        }
    }
}

/// Thinking returned beside an answer.
pub(crate) fn beside(text: String, redacted: usize) -> Option<Thinking> {
    (!text.trim().is_empty() || redacted > 0).then_some(Thinking {
        source: ThinkingSource::Field,
        text,
        cut: false,
        redacted,
    })
}

/// Decodes a 2xx body. On failure the message says what was wrong and quotes the start of the
/// body, or the provider's error message when a proxy wrapped an error in a 200.
pub(crate) fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    serde_json::from_slice(body).map_err(|err| match status::error_message(body) {
        Some(message) => format!("response body is an error: {}", status::truncate(&message)),
        None => {
            let excerpt = status::truncate(&String::from_utf8_lossy(body));
            format!("unexpected response body ({err}): {excerpt:?}")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_providers_token_limit_reasons_count() {
        assert!(hit_token_limit("length") && hit_token_limit("max_tokens"));
        assert!(!hit_token_limit("stop") && !hit_token_limit("end_turn"));
    }
}
