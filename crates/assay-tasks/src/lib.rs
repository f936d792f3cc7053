//! The benchmarks' tasks.
//!
//! [`bigcodebench`]: the 1,140 BigCodeBench tasks in every dataset version the official harness
//! has used (embedded: the data is Apache-2.0), the Hard subset, and a loader for any file in
//! the Hugging Face schema. Nothing here runs code or talks to models.

pub mod bigcodebench;

use std::path::PathBuf;

/// What can go wrong reading task data. Every error names where: file, line, field.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown dataset version `{0}` (known: {1})")]
    UnknownVersion(String, String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}:{line}: {message}")]
    Parse {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
}
