//! What a non-2xx response means: retry it, give up on this request, or stop the run.
//!
//! The rules are shared by both providers because OpenAI-compatible proxies in front of other
//! vendors pass their error bodies through, so an Anthropic-style spend-limit message can arrive
//! on an OpenAI route and vice versa.

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, LOCATION};
use reqwest::StatusCode;
use serde_json::Value;

use crate::context::{self, Refusal};
use crate::error::AttemptError;

/// Longest provider error text or raw body excerpt quoted in a message.
const QUOTE_LIMIT: usize = 300;

/// Classifies a response with a non-success status. `key_env_var` is named in the hint added to
/// authentication failures.
pub(crate) fn classify(
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    key_env_var: &str,
) -> AttemptError {
    let info = ErrorInfo::from_body(body);
    let code = status.as_u16();
    let message = format!("HTTP {code}: {}", info.describe(status));
    if let Some(full) = info.context_full(code, &message) {
        return AttemptError::ContextFull(full);
    }
    let fatal = |message: String| AttemptError::Fatal {
        status: Some(code),
        message,
    };
    match code {
        300..=399 => {
            let target = headers
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("an unnamed location");
            // Redirects are not followed: a POST redirected to a GET would lose its body. The
            // base URL is wrong for every request, so the run cannot proceed.
            fatal(format!(
                "HTTP {code}: the server redirects to {target}; use that as the base URL"
            ))
        }
        401 | 403 => fatal(format!("{message} (check {key_env_var})")),
        402 | 404 => fatal(message),
        429 if info.is_quota_exhausted() => fatal(message),
        429 | 408 | 409 | 500..=599 => AttemptError::Retry {
            cause: message,
            retry_after: retry_after(headers),
            // Too many requests, or too many for now (Anthropic's 529 "overloaded"): fewer
            // at once. Other 5xx and timeouts say nothing about load.
            overloaded: matches!(code, 429 | 503 | 529),
        },
        400 if info.is_spend_limit() => fatal(message),
        _ => AttemptError::Reject(message),
    }
}

/// The useful parts of a provider's JSON error body, whichever of the common shapes it has:
/// OpenAI `{"error": {"message", "type", "code"}}`, Anthropic `{"type": "error", "error":
/// {"type", "message", "details"?}}`, vLLM `{"object": "error", "message", "type"}`, TGI
/// `{"error": "...", "error_type": "..."}`.
#[derive(Debug, Default)]
struct ErrorInfo {
    message: Option<String>,
    kind: Option<String>,
    code: Option<String>,
    detail_code: Option<String>,
    /// llama.cpp's server: the window (`n_ctx`) and the prompt's tokens (`n_prompt_tokens`)
    /// of a request that did not fit.
    n_ctx: Option<u64>,
    n_prompt_tokens: Option<u64>,
    /// The start of a body that is not JSON (an HTML page from a proxy, plain text).
    raw: Option<String>,
}

impl ErrorInfo {
    fn from_body(body: &[u8]) -> Self {
        let Ok(json) = serde_json::from_slice::<Value>(body) else {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            return ErrorInfo {
                raw: (!text.is_empty()).then(|| truncate(text)),
                ..ErrorInfo::default()
            };
        };
        let text = |v: &Value| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        match json.get("error") {
            Some(error @ Value::Object(_)) => ErrorInfo {
                message: error.get("message").and_then(text),
                kind: error.get("type").and_then(text),
                code: error.get("code").and_then(text),
                detail_code: error.pointer("/details/error_code").and_then(text),
                n_ctx: error.get("n_ctx").and_then(Value::as_u64),
                n_prompt_tokens: error.get("n_prompt_tokens").and_then(Value::as_u64),
                raw: None,
            },
            Some(Value::String(message)) => ErrorInfo {
                message: Some(message.clone()),
                kind: json.get("error_type").and_then(text),
                ..ErrorInfo::default()
            },
            _ => {
                let empty = json.as_object().is_some_and(|o| o.is_empty()) || json.is_null();
                ErrorInfo {
                    message: json.get("message").and_then(text),
                    kind: json.get("type").and_then(text),
                    raw: (!empty).then(|| truncate(&json.to_string())),
                    ..ErrorInfo::default()
                }
            }
        }
    }

    /// `message (code)`, falling back to the raw body and then to the status's reason phrase.
    fn describe(&self, status: StatusCode) -> String {
        let mut out = match (&self.message, &self.raw) {
            (Some(message), _) => truncate(message.trim()),
            (None, Some(raw)) => raw.clone(),
            (None, None) => status
                .canonical_reason()
                .unwrap_or("no reason given")
                .into(),
        };
        let tag = [&self.detail_code, &self.code, &self.kind]
            .into_iter()
            .flatten()
            .find(|tag| !tag.is_empty());
        if let Some(tag) = tag.filter(|tag| !out.contains(tag.as_str())) {
            out.push_str(&format!(" ({tag})"));
        }
        out
    }

    /// The refusal of a request that does not fit the model's context window, if this is one;
    /// `message` is how the error is quoted.
    fn context_full(&self, status: u16, message: &str) -> Option<context::ContextFull> {
        let text = self.message.as_deref().or(self.raw.as_deref())?;
        let tags = [
            self.code.as_deref(),
            self.kind.as_deref(),
            self.detail_code.as_deref(),
        ];
        context::recognize(
            &Refusal {
                status,
                text,
                tags: &tags,
                n_ctx: self.n_ctx,
                n_prompt_tokens: self.n_prompt_tokens,
            },
            message,
        )
    }

    /// A 429 that means "no more money" rather than "slow down": OpenAI's `insufficient_quota`,
    /// Anthropic's monthly spend cap.
    fn is_quota_exhausted(&self) -> bool {
        [&self.code, &self.kind, &self.detail_code]
            .iter()
            .any(|tag| {
                matches!(
                    tag.as_deref(),
                    Some(
                        "insufficient_quota"
                            | "billing_hard_limit_reached"
                            | "enforced_spend_limit_reached"
                    )
                )
            })
    }

    /// Anthropic reports an empty credit balance and a user-set spend limit as 400
    /// `invalid_request_error`; only the message tells them apart from a bad request.
    fn is_spend_limit(&self) -> bool {
        let message = self.message.as_deref().unwrap_or("").to_lowercase();
        message.contains("credit balance is too low")
            || (message.contains("you have reached your specified")
                && message.contains("usage limits"))
    }
}

/// The provider's error message, if `body` is an error in one of the shapes above (a proxy may
/// wrap one in a 200).
pub(crate) fn error_message(body: &[u8]) -> Option<String> {
    ErrorInfo::from_body(body).message
}

/// `s` cut to a length fit for an error message.
pub(crate) fn truncate(s: &str) -> String {
    match s.char_indices().nth(QUOTE_LIMIT) {
        Some((end, _)) => format!("{}...", &s[..end]),
        None => s.to_string(),
    }
}

/// The server's own retry hint: `retry-after-ms` (OpenAI) or `retry-after` in seconds or as an
/// HTTP date. Unparsable or negative values are ignored rather than trusted.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if let Ok(d) = Duration::try_from_secs_f64(ms / 1000.0) {
            return Some(d);
        }
    }
    let value = header("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn classify_json(status: u16, body: &str) -> AttemptError {
        let status = StatusCode::from_u16(status).unwrap();
        classify(status, &HeaderMap::new(), body.as_bytes(), "OPENAI_API_KEY")
    }

    #[test]
    fn retry_after_forms() {
        let h = headers(&[("retry-after", "2")]);
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        let h = headers(&[("retry-after", "1.5"), ("retry-after-ms", "250")]);
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let future = SystemTime::now() + Duration::from_secs(30);
        let h = headers(&[("retry-after", &httpdate::fmt_http_date(future))]);
        let d = retry_after(&h).unwrap();
        assert!(
            d > Duration::from_secs(27) && d <= Duration::from_secs(30),
            "{d:?}"
        );
        let h = headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]);
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        for bad in ["-1", "soon", "NaN", "1e400"] {
            assert_eq!(
                retry_after(&headers(&[("retry-after", bad)])),
                None,
                "{bad}"
            );
        }
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn provider_messages_are_quoted() {
        let body = r#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        match classify_json(400, body) {
            AttemptError::ContextFull(full) => {
                assert_eq!(
                    full.message,
                    "HTTP 400: This model's maximum context length is 8192 tokens (context_length_exceeded)"
                );
                assert_eq!(full.window, Some(8192));
            }
            other => panic!("{other:?}"),
        }
        // llama.cpp's server names the numbers in fields of its own.
        let body = r#"{"error":{"code":400,"message":"request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4476,"n_ctx":4096}}"#;
        match classify_json(400, body) {
            AttemptError::ContextFull(full) => {
                assert_eq!((full.window, full.prompt_tokens), (Some(4096), Some(4476)));
                assert!(full.prompt_alone);
            }
            other => panic!("{other:?}"),
        }
        // llama-cpp-python's generation that fills the window: a 500, not retried.
        let body = r#"{"error":{"message":"could not broadcast input array from shape (49152,) into shape (0,)","type":"internal_server_error","param":null,"code":null}}"#;
        assert!(matches!(
            classify_json(500, body),
            AttemptError::ContextFull(_)
        ));
        // TGI's body is a string.
        let body = r#"{"error":"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 1280 `max_new_tokens`","error_type":"validation"}"#;
        match classify_json(422, body) {
            AttemptError::ContextFull(full) => assert_eq!(full.room(), Some(96)),
            other => panic!("{other:?}"),
        }
        let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        match classify_json(529, body) {
            AttemptError::Retry { cause, .. } => {
                assert_eq!(cause, "HTTP 529: Overloaded (overloaded_error)")
            }
            other => panic!("{other:?}"),
        }
        let body = r#"{"object":"error","message":"model `x` does not exist","type":"NotFoundError","code":404}"#;
        match classify_json(404, body) {
            AttemptError::Fatal { status, message } => {
                assert_eq!(status, Some(404));
                assert!(
                    message.starts_with("HTTP 404: model `x` does not exist"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
        match classify_json(502, "<html>Bad gateway</html>") {
            AttemptError::Retry { cause, .. } => {
                assert_eq!(cause, "HTTP 502: <html>Bad gateway</html>")
            }
            other => panic!("{other:?}"),
        }
        match classify_json(503, "") {
            AttemptError::Retry { cause, .. } => assert_eq!(cause, "HTTP 503: Service Unavailable"),
            other => panic!("{other:?}"),
        }
        let long = format!(r#"{{"error":"{}"}}"#, "x".repeat(1000));
        match classify_json(422, &long) {
            AttemptError::Reject(m) => assert!(m.len() < 320 && m.ends_with("..."), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fatal_cases() {
        let fatal =
            |status, body| matches!(classify_json(status, body), AttemptError::Fatal { .. });
        assert!(fatal(401, r#"{"error":{"message":"Incorrect API key"}}"#));
        assert!(fatal(403, "{}"));
        assert!(fatal(
            402,
            r#"{"type":"error","error":{"type":"billing_error","message":"pay"}}"#
        ));
        assert!(fatal(404, "{}"));
        assert!(fatal(301, ""));
        assert!(fatal(
            429,
            r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#
        ));
        assert!(fatal(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"spend cap","details":{"error_code":"enforced_spend_limit_reached"}}}"#
        ));
        assert!(fatal(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}"#
        ));
        assert!(fatal(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified workspace API usage limits. You will regain access on 2026-01-01."}}"#
        ));
        assert!(!fatal(
            429,
            r#"{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}"#
        ));
        assert!(!fatal(400, r#"{"error":{"message":"prompt is too long"}}"#));
        match classify_json(401, "{}") {
            AttemptError::Fatal { message, .. } => {
                assert_eq!(message, "HTTP 401: Unauthorized (check OPENAI_API_KEY)")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn retriable_and_rejected_statuses() {
        for status in [408, 409, 429, 500, 502, 503, 504, 529] {
            match classify_json(status, "{}") {
                AttemptError::Retry { overloaded, .. } => {
                    assert_eq!(overloaded, matches!(status, 429 | 503 | 529), "{status}")
                }
                other => panic!("{status}: {other:?}"),
            }
        }
        for status in [400, 405, 413, 422] {
            assert!(
                matches!(classify_json(status, "{}"), AttemptError::Reject(_)),
                "{status}"
            );
        }
    }
}
