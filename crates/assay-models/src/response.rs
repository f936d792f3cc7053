//! What comes back: texts, token usage and how hard it was to get them.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Tokens billed, summed over the HTTP calls that produced a [`Response`].
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl Usage {
    fn add(&mut self, other: &Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
    }
}

/// The samples generated for one [`Request`](crate::Request).
#[derive(Debug, Clone)]
pub struct Response {
    /// Exactly `n` texts, in choice index order. A choice without content (e.g. filtered) is an
    /// empty string; its finish reason says why.
    pub texts: Vec<String>,
    /// Per text, as the provider reported it (`stop`, `length`, `content_filter`, `end_turn`,
    /// `max_tokens`, `stop_sequence`, ...).
    pub finish_reasons: Vec<Option<String>>,
    pub usage: Usage,
    /// Wall time of the whole call, retries and waits included.
    pub latency: Duration,
    /// HTTP attempts made (1 = the first try succeeded). When one call needs several HTTP
    /// requests (Anthropic with `n > 1`), the count of the request that needed the most, so
    /// that 1 still means "no retries". 0 when `n` was 0 and nothing was sent.
    pub attempts: u32,
}

/// The decoded body of one successful HTTP call.
#[derive(Debug, Default)]
pub(crate) struct Generation {
    pub(crate) texts: Vec<String>,
    pub(crate) finish_reasons: Vec<Option<String>>,
    pub(crate) usage: Usage,
}

impl Generation {
    /// Appends another call's samples after this one's.
    pub(crate) fn extend(&mut self, other: Generation) {
        self.texts.extend(other.texts);
        self.finish_reasons.extend(other.finish_reasons);
        self.usage.add(&other.usage);
    }
}

/// Decodes a 2xx body. On failure the message says what was wrong and quotes the start of the
/// body, or the provider's error message when a proxy wrapped an error in a 200.
pub(crate) fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    serde_json::from_slice(body).map_err(|err| {
        let error_message = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.pointer("/error/message")?.as_str().map(str::to_string));
        match error_message {
            Some(message) => format!("response body is an error: {message}"),
            None => {
                let text = String::from_utf8_lossy(body);
                let excerpt: String = text.chars().take(120).collect();
                format!("unexpected response body ({err}): {excerpt:?}")
            }
        }
    })
}
