//! The official sanitizer for the requests that carry a raw answer. Each [`Sanitizer`] holds
//! a CPython helper for its syntax checks and works on one answer at a time, so the service
//! keeps a few, started as needed and reused.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use assay_sanitize::Sanitizer;
use tokio::sync::Semaphore;

use crate::error::ApiError;

/// Sanitizers for answers arriving at once, at most as many as there are permits.
pub struct Sanitizers {
    python: PathBuf,
    idle: Mutex<Vec<Sanitizer>>,
    permits: Semaphore,
}

impl Sanitizers {
    /// Up to `at_once` sanitizers running `python` (the evaluation environment's CPython).
    pub fn new(python: PathBuf, at_once: usize) -> Self {
        Sanitizers {
            python,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(at_once.max(1)),
        }
    }

    /// The official `sanitize(text, entry_point)`.
    pub async fn sanitize(&self, text: String, entry_point: String) -> Result<String, ApiError> {
        let _permit = self.permits.acquire().await.expect("never closed");
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let python = self.python.clone();
        let (sanitizer, result) = tokio::task::spawn_blocking(move || {
            let mut sanitizer = match idle {
                Some(s) => s,
                None => Sanitizer::new(&python)?,
            };
            let result = sanitizer.sanitize(&text, &entry_point);
            Ok::<_, assay_sanitize::Error>((sanitizer, result))
        })
        .await
        .map_err(|e| ApiError::internal(format!("the sanitizer stopped: {e}")))?
        .map_err(|e| ApiError::internal(e.to_string()))?;
        let code = result.map_err(|e| ApiError::internal(e.to_string()))?;
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(sanitizer);
        Ok(code)
    }
}
