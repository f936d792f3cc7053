//! One HTTP attempt: POST a JSON body, read the whole answer within a deadline, and say how it
//! failed if it did. Retrying is the caller's business (`retry.rs`), so reqwest never retries or
//! follows redirects on its own.

use std::error::Error as _;
use std::time::Duration;

use reqwest::header::HeaderMap;

use crate::error::{AttemptError, ConfigError};
use crate::status;

/// A response body larger than this is not an answer (1,280 tokens are a few KiB): a server
/// streaming without end must not fill the memory within the timeout.
const MAX_BODY_BYTES: usize = 64 << 20;

/// Keys shorter than this are not looked for in response bodies.
const MIN_SECRET_LEN: usize = 8;

/// Upper bound for establishing a connection, so that an unreachable host fails fast even with
/// a long per-attempt timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A pooled HTTP client with a per-attempt deadline.
pub(crate) struct Transport {
    client: reqwest::Client,
    timeout: Duration,
}

impl Transport {
    pub(crate) fn new(timeout: Duration) -> Result<Self, ConfigError> {
        let client = reqwest::Client::builder()
            .user_agent(concat!("assay/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(CONNECT_TIMEOUT.min(timeout))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|err| ConfigError::HttpClient(describe(&err)))?;
        Ok(Transport { client, timeout })
    }

    /// POSTs `body` to `url` and returns the body of a 2xx response, `secret` replaced by
    /// `<redacted>` wherever the server echoes it. The deadline covers
    /// connecting, sending and reading the entire response, so a server that stalls mid-body
    /// cannot hold the attempt forever.
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: Vec<u8>,
        key_env_var: &str,
        secret: Option<&str>,
    ) -> Result<Vec<u8>, AttemptError> {
        let attempt = async {
            let response = self
                .client
                .post(url)
                .headers(headers.clone())
                .body(body)
                .send()
                .await
                .map_err(|err| AttemptError::retry(describe(&err)))?;
            let status = response.status();
            let response_headers = response.headers().clone();
            let mut response = response;
            let mut bytes = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|err| {
                AttemptError::retry(format!("HTTP {}, then {}", status.as_u16(), describe(&err)))
            })? {
                if bytes.len() + chunk.len() > MAX_BODY_BYTES {
                    return Err(AttemptError::retry(format!(
                        "HTTP {}, then a body over {} MiB",
                        status.as_u16(),
                        MAX_BODY_BYTES >> 20
                    )));
                }
                bytes.extend_from_slice(&chunk);
            }
            // Providers sometimes echo the key they were sent (in an error, rarely in a
            // reply): it goes no further than here, whatever part of the body is quoted later.
            // A string this short is no real key and could match anywhere (JSON keys included).
            if let Some(secret) = secret.filter(|s| s.len() >= MIN_SECRET_LEN) {
                if bytes.windows(secret.len()).any(|w| w == secret.as_bytes()) {
                    bytes = String::from_utf8_lossy(&bytes)
                        .replace(secret, "<redacted>")
                        .into_bytes();
                }
            }
            tracing::debug!(
                url,
                status = status.as_u16(),
                bytes = bytes.len(),
                "model API response"
            );
            if status.is_success() {
                Ok(bytes)
            } else {
                Err(status::classify(
                    status,
                    &response_headers,
                    &bytes,
                    key_env_var,
                ))
            }
        };
        tokio::time::timeout(self.timeout, attempt)
            .await
            .unwrap_or_else(|_| {
                Err(AttemptError::retry(format!(
                    "no complete response within {:?}",
                    self.timeout
                )))
            })
    }
}

impl Transport {
    /// GETs `url` within `timeout` and returns the status and at most `limit` bytes of the
    /// body; a connection that fails or a server that does not answer in time is `Err` with
    /// the cause. Nothing is retried: the caller polls.
    pub(crate) async fn get(
        &self,
        url: &str,
        headers: &HeaderMap,
        timeout: Duration,
        limit: usize,
    ) -> Result<(reqwest::StatusCode, Vec<u8>), String> {
        let attempt = async {
            let mut response = self
                .client
                .get(url)
                .headers(headers.clone())
                .send()
                .await
                .map_err(|err| describe(&err))?;
            let status = response.status();
            let mut bytes = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|err| describe(&err))? {
                bytes.extend_from_slice(&chunk);
                if bytes.len() > limit {
                    bytes.truncate(limit);
                    break;
                }
            }
            Ok((status, bytes))
        };
        tokio::time::timeout(timeout, attempt)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {timeout:?}")))
    }
}

/// A reqwest error as a readable cause: what failed plus the chain of underlying errors
/// (`connection failed: tcp connect error: Connection refused (os error 111)`). The URL reqwest
/// puts in its own message is left out; the caller knows where it sent the request.
fn describe(err: &reqwest::Error) -> String {
    let mut out = String::from(if err.is_connect() {
        "connection failed"
    } else if err.is_body() || err.is_decode() {
        "error reading the response body"
    } else if err.is_builder() {
        "invalid request"
    } else {
        "request failed"
    });
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}
