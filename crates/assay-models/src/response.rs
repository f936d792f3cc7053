//! What comes back: texts, token usage and how hard it was to get them.

use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::status;
use assay_records::TokenUsage;

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

/// The decoded body of one successful HTTP call.
#[derive(Debug, Default)]
pub(crate) struct Generation {
    pub(crate) texts: Vec<String>,
    pub(crate) finish_reasons: Vec<Option<String>>,
    pub(crate) tool_calls: Vec<Vec<crate::ToolCall>>,
    pub(crate) usage: TokenUsage,
}

impl Generation {
    /// Appends another call's samples after this one's.
    pub(crate) fn extend(&mut self, other: Generation) {
        self.texts.extend(other.texts);
        self.finish_reasons.extend(other.finish_reasons);
        self.tool_calls.extend(other.tool_calls);
        self.usage += &other.usage;
    }
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
