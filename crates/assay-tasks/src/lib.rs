//! The benchmarks' tasks.
//!
//! [`bigcodebench`]: the 1,140 BigCodeBench tasks in every dataset version the official harness
//! has used (embedded: the data is Apache-2.0), the Hard subset, and a loader for any file in
//! the Hugging Face schema. [`pybench`]: the 143 PyBench tasks, read from a folder in upstream's
//! layout (their license is unknown, so they are never embedded). Nothing here runs code or
//! talks to models.

pub mod bigcodebench;
pub mod pybench;

use std::path::PathBuf;

/// What can go wrong reading task data. Every error names where: file, line, field.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No embedded dataset has this version; holds the version asked for and the known ones,
    /// comma-separated.
    #[error("unknown dataset version `{0}` (known: {1})")]
    UnknownVersion(String, String),
    /// A dataset file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// One line of a dataset is not a valid task (bad JSON, a missing field, a repeated id).
    #[error("{file}:{line}: {message}")]
    Parse {
        /// The dataset: a version for embedded data, the file path otherwise.
        file: String,
        /// The line number, counting from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// The dataset as a whole is unusable (not gzip or UTF-8, no tasks in the subset), or a
    /// selected task is not in it.
    #[error("{file}: {message}")]
    Invalid {
        /// The dataset: a version for embedded data, the file path otherwise.
        file: String,
        /// What is wrong.
        message: String,
    },
}
