//! The service's secret. None of the clients in use sends an `Authorization` header, so a
//! secret can be given either way: `Authorization: Bearer <secret>`, or as the first segment
//! of the path (`http://host:8000/<secret>/run_code`), which is all such a client lets a user
//! change (its base URL).

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// Shortest secret accepted: guessing one must be hopeless.
const MIN_LEN: usize = 16;

/// A secret, compared in constant time (blake3's `Hash` equality is).
#[derive(Clone)]
pub struct Secret {
    text: String,
    hash: blake3::Hash,
}

impl Secret {
    /// `text` (surrounding whitespace, a file's final newline, dropped) as a secret: at least
    /// 16 characters, each one a path may carry unescaped (letters, digits, `-._~`).
    pub fn new(text: &str) -> Result<Secret, String> {
        let text = text.trim();
        if text.len() < MIN_LEN {
            return Err(format!(
                "the secret must be at least {MIN_LEN} characters (it has {})",
                text.len()
            ));
        }
        if let Some(bad) = text
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || "-._~".contains(*c)))
        {
            return Err(format!(
                "the secret may hold only letters, digits and -._~ (it is a path segment \
                 too); it holds {bad:?}"
            ));
        }
        Ok(Secret {
            hash: blake3::hash(text.as_bytes()),
            text: text.to_string(),
        })
    }

    /// The path segment that stands for the secret.
    pub fn segment(&self) -> &str {
        &self.text
    }

    fn matches(&self, given: &str) -> bool {
        blake3::hash(given.as_bytes()) == self.hash
    }
}

/// Lets a request through only with `Authorization: Bearer <secret>` (for routes reached
/// without the secret in the path).
pub async fn bearer(State(secret): State<Secret>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match given {
        Some(token) if secret.matches(token.trim()) => next.run(request).await,
        Some(_) => ApiError::new(StatusCode::UNAUTHORIZED, "wrong secret").into_response(),
        None => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "this service needs its secret: `Authorization: Bearer <secret>`, or the secret \
             as the path's first segment (http://host:port/<secret>/...)",
        )
        .into_response(),
    }
}
