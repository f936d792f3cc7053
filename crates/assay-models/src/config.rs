//! How a [`Client`](crate::Client) is set up: endpoint, credentials, timeouts, retry policy
//! and limits.

use std::fmt;
use std::num::{NonZeroU32, NonZeroU64, NonZeroUsize};
use std::time::Duration;

use assay_records::ReasoningSettings;

use crate::error::ConfigError;
use crate::extra_body::ExtraBody;
use crate::spec::{ModelSpec, Provider};

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
    /// When none is given, `OPENAI_BASE_URL` or `ANTHROPIC_BASE_URL` is read, as the SDKs
    /// read them.
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
    /// How hard the client may press the provider.
    pub limits: Limits,
    /// How the model is asked to reason, and how its thinking is told from its answers.
    pub reasoning: ReasoningSettings,
    /// Fields added to every request body (`--extra-body`).
    pub extra_body: ExtraBody,
}

/// Anthropic's least thinking budget.
pub const LEAST_THINKING_BUDGET: u32 = 1024;

/// Refuses reasoning settings `provider` does not take, before anything is sent.
pub(crate) fn check_reasoning(
    reasoning: &ReasoningSettings,
    provider: &Provider,
) -> Result<(), ConfigError> {
    let refuse = |m: String| Err(ConfigError::Reasoning(m));
    match (provider, reasoning.effort, reasoning.thinking_budget) {
        (Provider::OpenAi, _, Some(_)) => refuse(
            "--thinking-budget is Anthropic's extended thinking; OpenAI and compatible servers \
             take --reasoning-effort"
                .into(),
        ),
        (Provider::Anthropic, Some(effort), _) => refuse(format!(
            "--reasoning-effort {} is sent to OpenAI and compatible servers; Anthropic's \
             extended thinking takes --thinking-budget TOKENS",
            effort.as_str()
        )),
        (Provider::Anthropic, _, Some(budget)) if budget < LEAST_THINKING_BUDGET => {
            refuse(format!(
                "--thinking-budget {budget}: Anthropic's extended thinking needs at least \
                 {LEAST_THINKING_BUDGET} tokens"
            ))
        }
        _ => Ok(()),
    }
}

/// How hard a client presses the provider, over every clone of it: requests in flight and
/// per-minute budgets.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Requests in flight at most. The client lowers this while the server answers 429 or
    /// 503 (529) and raises it back as requests succeed.
    pub concurrency: NonZeroUsize,
    /// Requests sent a minute at most, retries included; they are spread evenly over it.
    pub requests_per_minute: Option<NonZeroU32>,
    /// Tokens (prompt and answers) a minute at most, as estimated before each request and
    /// corrected by the usage its answer reports.
    pub tokens_per_minute: Option<NonZeroU64>,
}

impl Default for Limits {
    /// Eight requests at once (`assay`'s default `--concurrency`), no per-minute budget.
    fn default() -> Self {
        Limits {
            concurrency: NonZeroUsize::new(8).expect("8 is not 0"),
            requests_per_minute: None,
            tokens_per_minute: None,
        }
    }
}
