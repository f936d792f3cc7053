//! What an agent is told instead of an answer, in words that hold nothing of the upstream API
//! (its URL, its key, its own error text): those stay in the record.

use assay_models::RequestError;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::budget::Stop;

/// The largest request body read: agents send whole conversations, with file contents and
/// tool outputs, in every request. A larger one is refused (413).
pub(crate) const MAX_BODY: usize = 32 << 20;

/// Why a request gets no answer.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Failure {
    /// The placeholder token is missing or wrong.
    Unauthorized,
    /// No such route.
    NotFound(String),
    /// The body could not be read whole (too large, or cut off).
    Unreadable(String),
    /// The body is not a request of the protocol; says what is wrong, naming the field.
    BadRequest(String),
    /// The gateway no longer serves the episode.
    Ended(Stop),
    /// The conversation does not fit the model's context window.
    ContextFull {
        /// What did not fit, in general words.
        what: String,
        /// The upstream's own message.
        cause: String,
    },
    /// The model's API failed for good.
    ModelFailed {
        /// The client's error.
        cause: String,
        /// HTTP attempts made.
        attempts: u32,
    },
    /// The gateway is shutting down while the model was being asked.
    ShuttingDown,
}

/// Which of the common error types a failure is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The request is wrong, or will never be served: retrying it is pointless.
    InvalidRequest,
    /// The request does not fit the context window.
    ContextLength,
    Authentication,
    NotFound,
    TooLarge,
    /// The model's side failed.
    Api,
    /// Temporarily unavailable.
    Unavailable,
}

impl Failure {
    /// The failure a model client's error makes.
    pub(crate) fn from_model(error: RequestError) -> Failure {
        match error {
            RequestError::ContextFull(full) => Failure::ContextFull {
                what: full.describe(),
                cause: full.message,
            },
            RequestError::Fatal { status, message } => Failure::ModelFailed {
                cause: message,
                attempts: u32::from(status.is_some()),
            },
            RequestError::Failed { attempts, message } => Failure::ModelFailed {
                cause: message,
                attempts,
            },
        }
    }

    /// Why the gateway stops serving the episode after this failure, if it does.
    pub(crate) fn stop(&self) -> Option<Stop> {
        match self {
            Failure::Ended(stop) => Some(*stop),
            Failure::ContextFull { .. } => Some(Stop::ContextFull),
            Failure::ModelFailed { .. } => Some(Stop::ModelFailed),
            _ => None,
        }
    }

    /// What the upstream API said, for the record only.
    pub(crate) fn cause(&self) -> Option<&str> {
        match self {
            Failure::ContextFull { cause, .. } | Failure::ModelFailed { cause, .. } => Some(cause),
            _ => None,
        }
    }

    /// HTTP attempts made of the model's API.
    pub(crate) fn attempts(&self) -> u32 {
        match self {
            Failure::ContextFull { .. } => 1,
            Failure::ModelFailed { attempts, .. } => *attempts,
            _ => 0,
        }
    }

    pub(crate) fn kind(&self) -> Kind {
        match self {
            Failure::Unauthorized => Kind::Authentication,
            Failure::NotFound(_) => Kind::NotFound,
            Failure::Unreadable(_) => Kind::TooLarge,
            Failure::BadRequest(_) | Failure::Ended(_) => Kind::InvalidRequest,
            Failure::ContextFull { .. } => Kind::ContextLength,
            Failure::ModelFailed { .. } => Kind::Api,
            Failure::ShuttingDown => Kind::Unavailable,
        }
    }

    pub(crate) fn status(&self) -> StatusCode {
        match self.kind() {
            Kind::InvalidRequest | Kind::ContextLength => StatusCode::BAD_REQUEST,
            Kind::Authentication => StatusCode::UNAUTHORIZED,
            Kind::NotFound => StatusCode::NOT_FOUND,
            Kind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            // The agent's request was fine; what the gateway depends on failed.
            Kind::Api => StatusCode::BAD_GATEWAY,
            Kind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// What the agent reads. A full context window is said in the words the agents' SDKs
    /// recognize: OpenAI's "maximum context length", Anthropic's "prompt is too long".
    pub(crate) fn message(&self, wording: Wording) -> String {
        match self {
            Failure::Unauthorized => {
                "assay: missing or wrong API key (give the placeholder token assay set)".into()
            }
            Failure::NotFound(path) => format!("assay: no such endpoint: {path}"),
            Failure::Unreadable(why) => format!(
                "assay: cannot read the request body ({why}); the gateway takes at most {} MiB",
                MAX_BODY >> 20
            ),
            Failure::BadRequest(why) => format!("assay: invalid request: {why}"),
            Failure::Ended(stop) => stop.told().into(),
            Failure::ContextFull { what, .. } => match wording {
                Wording::OpenAi => {
                    format!("This model's maximum context length is exceeded: {what}")
                }
                Wording::Anthropic => format!("prompt is too long: {what}"),
            },
            Failure::ModelFailed { .. } => {
                "assay: the model's API failed to answer; the episode ends here".into()
            }
            Failure::ShuttingDown => "assay: the gateway is shutting down".into(),
        }
    }

    /// The error response in `wording`'s protocol.
    pub(crate) fn response(&self, wording: Wording) -> Response {
        let body = match wording {
            Wording::OpenAi => self.openai_body(),
            Wording::Anthropic => self.anthropic_body(),
        };
        (self.status(), Json(body)).into_response()
    }

    /// OpenAI's error body, `{"error": {message, type, param, code}}`.
    pub(crate) fn openai_body(&self) -> Value {
        let (kind, code) = self.openai_type_and_code();
        json!({"error": {
            "message": self.message(Wording::OpenAi), "type": kind, "param": null, "code": code,
        }})
    }

    /// OpenAI's `type` and `code` for this failure.
    pub(crate) fn openai_type_and_code(&self) -> (&'static str, Option<&'static str>) {
        match self.kind() {
            Kind::InvalidRequest | Kind::TooLarge => ("invalid_request_error", None),
            Kind::ContextLength => ("invalid_request_error", Some("context_length_exceeded")),
            Kind::Authentication => ("invalid_request_error", Some("invalid_api_key")),
            Kind::NotFound => ("invalid_request_error", Some("unknown_url")),
            Kind::Api | Kind::Unavailable => ("server_error", None),
        }
    }

    /// Anthropic's error body, `{"type": "error", "error": {type, message}}`.
    pub(crate) fn anthropic_body(&self) -> Value {
        let kind = match self.kind() {
            Kind::InvalidRequest | Kind::ContextLength => "invalid_request_error",
            Kind::Authentication => "authentication_error",
            Kind::NotFound => "not_found_error",
            Kind::TooLarge => "request_too_large",
            Kind::Api => "api_error",
            Kind::Unavailable => "overloaded_error",
        };
        json!({"type": "error", "error": {"type": kind, "message": self.message(Wording::Anthropic)}})
    }
}

/// Whose words a message is put in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wording {
    OpenAi,
    Anthropic,
}

#[cfg(test)]
mod tests {
    use super::*;
    use assay_models::ContextFull;

    #[test]
    fn upstream_words_stay_out_of_what_the_agent_reads() {
        let failure = Failure::from_model(RequestError::Fatal {
            status: Some(401),
            message: "HTTP 401: Incorrect API key provided: sk-abc (check OPENAI_API_KEY)".into(),
        });
        assert_eq!(failure.stop(), Some(Stop::ModelFailed));
        assert_eq!(failure.status(), StatusCode::BAD_GATEWAY);
        for body in [failure.openai_body(), failure.anthropic_body()] {
            let text = body.to_string();
            assert!(
                !text.contains("sk-abc") && !text.contains("OPENAI"),
                "{text}"
            );
        }
        assert!(failure.cause().is_some_and(|c| c.contains("HTTP 401")));
    }

    #[test]
    fn a_full_window_is_said_in_each_protocols_words() {
        let failure = Failure::from_model(RequestError::ContextFull(ContextFull {
            message: "HTTP 400: prompt is too long: 300 tokens > 200 maximum".into(),
            window: Some(200),
            prompt_tokens: Some(300),
            prompt_alone: true,
        }));
        assert_eq!(failure.stop(), Some(Stop::ContextFull));
        let openai = failure.openai_body();
        assert_eq!(openai["error"]["code"], "context_length_exceeded");
        let message = openai["error"]["message"].as_str().unwrap();
        assert!(message.contains("maximum context length"), "{message}");
        let anthropic = failure.anthropic_body();
        assert_eq!(anthropic["error"]["type"], "invalid_request_error");
        let message = anthropic["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("prompt is too long: the prompt (300 tokens)"),
            "{message}"
        );
    }
}
