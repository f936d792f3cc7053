//! What can go wrong, sorted by what the caller should do about it.

use std::time::Duration;

use crate::context::ContextFull;

/// A [`ClientConfig`](crate::ClientConfig) that cannot work; reported before any request is sent.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// No key (or an empty one) for a server that requires it: Anthropic, or api.openai.com.
    #[error("{env_var} is not set: {what} needs an API key; export {env_var}=<your key> first")]
    MissingApiKey {
        /// Environment variable the key should come from, e.g. `OPENAI_API_KEY`.
        env_var: &'static str,
        /// The API that needs the key, for the message.
        what: &'static str,
    },
    /// The key cannot be sent as an HTTP header value (non-ASCII or control characters).
    #[error("the API key in {env_var} contains characters not allowed in an HTTP header")]
    InvalidApiKey {
        /// Environment variable the key came from.
        env_var: &'static str,
    },
    /// Anyone on the way would read the key: only loopback servers get it over plain http.
    #[error(
        "refusing to send {env_var} over plain http to {host}: use an https URL, or unset \
         {env_var} for a server that needs no key"
    )]
    PlainHttpKey {
        /// Environment variable the key came from.
        env_var: &'static str,
        /// The non-loopback host the base URL points at.
        host: String,
    },
    /// The base URL does not parse, or is not http(s).
    #[error("bad base URL `{url}`: {reason}")]
    BadBaseUrl {
        /// The base URL as configured (or the provider default).
        url: String,
        /// Why it was refused.
        reason: String,
    },
    /// A reasoning setting the provider does not take (`--thinking-budget` for an
    /// OpenAI-style server, `--reasoning-effort` for Anthropic, a budget below Anthropic's
    /// least).
    #[error("{0}")]
    Reasoning(String),
    /// An `--extra-body` field that assay sets itself (not named to replace it), or one that
    /// would break how replies are read.
    #[error("{0}")]
    ExtraBody(String),
    /// The underlying HTTP client could not be built; holds the cause.
    #[error("cannot build the HTTP client: {0}")]
    HttpClient(String),
}

/// Why [`Client::generate`](crate::Client::generate) produced no response.
///
/// Messages carry the HTTP status, the provider's own error message and, when retries ran out,
/// the last cause (`gave up after 7 attempts: HTTP 503: overloaded`). They never contain the API
/// key.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// Will not get better by retrying this request or any other (bad or missing key, no
    /// permission, unknown model, exhausted quota or spend limit, a request the provider cannot
    /// serve at all): the caller should stop the whole run.
    #[error("{message}")]
    Fatal {
        /// HTTP status of the response that showed it; `None` when refused before sending.
        status: Option<u16>,
        /// What went wrong, including the provider's own message when there is one.
        message: String,
    },
    /// The request does not fit the model's context window: the model's answer, in a way
    /// (the same request gets the same refusal), never retried and never the harness's fault.
    #[error("{}", .0.message)]
    ContextFull(ContextFull),
    /// This request failed for good (rejected as invalid, or retries exhausted on transient
    /// errors); other requests may still succeed.
    #[error("{message}")]
    Failed {
        /// HTTP attempts made, the first one included.
        attempts: u32,
        /// What went wrong; when retries ran out, the last cause behind `gave up after N attempts`.
        message: String,
    },
}

/// How one HTTP attempt failed; decides whether the retry loop goes on.
#[derive(Debug)]
pub(crate) enum AttemptError {
    /// Transient: rate limit, overload, server error, timeout, broken connection or garbled body.
    /// `retry_after` is the server's own hint, preferred over our backoff; `overloaded` says the
    /// server refused for load (429, 503, 529), which lowers the client's concurrency.
    Retry {
        cause: String,
        retry_after: Option<Duration>,
        overloaded: bool,
    },
    /// This request is wrong; sending it again gives the same answer.
    Reject(String),
    /// The request does not fit the model's context window.
    ContextFull(ContextFull),
    /// Nothing sent with this configuration can succeed.
    Fatal {
        status: Option<u16>,
        message: String,
    },
}

impl AttemptError {
    pub(crate) fn retry(cause: impl Into<String>) -> Self {
        AttemptError::Retry {
            cause: cause.into(),
            retry_after: None,
            overloaded: false,
        }
    }
}
