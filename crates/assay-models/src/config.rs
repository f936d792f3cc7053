//! How a [`Client`](crate::Client) is set up: endpoint, credentials, timeouts and retry policy.

use std::fmt;
use std::time::Duration;

use crate::spec::ModelSpec;

/// An API key that never prints.
///
/// `Debug` and `Display` show `<redacted>` and there is deliberately no `Serialize`, so the key
/// cannot leak through logs, error messages or saved run metadata by accident. The only way to
/// read it is crate-internal, where it becomes a request header marked sensitive.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key as read from the environment.
    pub fn new(s: String) -> Self {
        ApiKey(s)
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Waits between retries: `initial × 2^k`, capped at `max`, each drawn uniformly from
/// `[d/2, d]` so that many concurrent requests failing together do not retry in lockstep.
#[derive(Clone, Debug, PartialEq)]
pub struct Backoff {
    /// Longest wait before the first retry; doubles for each retry after it.
    pub initial: Duration,
    /// Cap on the longest wait, however many retries came before.
    pub max: Duration,
}

impl Default for Backoff {
    /// 1 s, 2 s, 4 s, ... up to 60 s (each wait drawn from its upper half): the default six
    /// retries wait 32 to 63 s in all, the length of the per-minute windows hosted APIs
    /// rate-limit by.
    fn default() -> Self {
        Backoff {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(60),
        }
    }
}

/// Everything [`Client::new`](crate::Client::new) needs.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// The provider and model to talk to.
    pub spec: ModelSpec,
    /// OpenAI: the base URL including `/v1`, as the OpenAI SDK takes it (default
    /// `https://api.openai.com/v1`; we POST `{base}/chat/completions`). Anthropic: as the
    /// Anthropic SDK takes it (default `https://api.anthropic.com`; we POST `{base}/v1/messages`).
    pub base_url: Option<String>,
    /// From `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`, read by the caller. An OpenAI-compatible local
    /// server may need none; api.openai.com and Anthropic do. An empty key counts as none.
    pub api_key: Option<ApiKey>,
    /// Bound on one HTTP attempt, from connecting until the whole response body is read.
    pub request_timeout: Duration,
    /// Extra attempts after the first one fails with a retriable error.
    pub retries: u32,
    /// How long to wait between those attempts.
    pub backoff: Backoff,
}
