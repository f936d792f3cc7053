//! What can go wrong, sorted by what the caller should do about it.

use std::time::Duration;

/// A [`ClientConfig`](crate::ClientConfig) that cannot work; reported before any request is sent.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{env_var} is not set: {what} needs an API key")]
    MissingApiKey {
        env_var: &'static str,
        what: &'static str,
    },
    #[error("the API key in {env_var} contains characters not allowed in an HTTP header")]
    InvalidApiKey { env_var: &'static str },
    /// Anyone on the way would read the key: only loopback servers get it over plain http.
    #[error(
        "refusing to send {env_var} over plain http to {host}: use an https URL, or unset \
         {env_var} for a server that needs no key"
    )]
    PlainHttpKey { env_var: &'static str, host: String },
    #[error("bad base URL `{url}`: {reason}")]
    BadBaseUrl { url: String, reason: String },
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
        status: Option<u16>,
        message: String,
    },
    /// This request failed for good (rejected as invalid, e.g. prompt too long, or retries
    /// exhausted on transient errors); other requests may still succeed.
    #[error("{message}")]
    Failed { attempts: u32, message: String },
}

/// How one HTTP attempt failed; decides whether the retry loop goes on.
#[derive(Debug)]
pub(crate) enum AttemptError {
    /// Transient: rate limit, overload, server error, timeout, broken connection or garbled body.
    /// `retry_after` is the server's own hint, preferred over our backoff.
    Retry {
        cause: String,
        retry_after: Option<Duration>,
    },
    /// This request is wrong; sending it again gives the same answer.
    Reject(String),
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
        }
    }
}
