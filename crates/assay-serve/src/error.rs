//! A request the service refuses or cannot serve: an HTTP status and a sentence, as JSON
//! `{"error": ...}`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

/// Why a request got no result.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
    /// Seconds a refused client should wait (`503`: the queue is full).
    retry_after: Option<u64>,
}

impl ApiError {
    /// A malformed request: the message names the field.
    pub fn bad(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// Something asked for that is not there (a task, a session).
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    /// A request the service understood but will not do (a session id in use, the cap on
    /// sessions reached).
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, message)
    }

    /// More work than the queue holds: come back after `seconds`.
    pub fn busy(seconds: u64) -> Self {
        ApiError {
            retry_after: Some(seconds),
            ..Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the service's queue is full; retry after the time Retry-After gives",
            )
        }
    }

    /// The harness itself failed (not the request's code).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    /// What went wrong, in a sentence.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Any status with a message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            retry_after: None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            Json(serde_json::json!({ "error": self.message })),
        )
            .into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

impl From<axum::extract::rejection::JsonRejection> for ApiError {
    fn from(rejection: axum::extract::rejection::JsonRejection) -> Self {
        Self::new(rejection.status(), rejection.body_text())
    }
}
