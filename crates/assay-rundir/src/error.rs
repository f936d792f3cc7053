//! Why a run directory cannot be opened, read or written: one error type for the crate, every
//! message naming the file. Apart, as every part of the crate makes them.

use std::path::{Path, PathBuf};

use assay_records::SCHEMA;

/// Why a run directory cannot be opened, read or written. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    /// The file system refused.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Another process holds the directory.
    #[error("{path}: another assay process is using this run directory")]
    Busy {
        /// The directory.
        path: PathBuf,
    },
    /// The directory holds a run with other settings.
    #[error(
        "{path} holds a different evaluation ({key}: {existing} there, {wanted} now); \
         choose another --out, or remove the directory to start over"
    )]
    Different {
        /// The directory.
        path: PathBuf,
        /// The first setting that differs.
        key: String,
        /// Its value there.
        existing: String,
        /// Its value now.
        wanted: String,
    },
    /// The directory's run was started on a machine set up otherwise.
    #[error(
        "{path} was started where its environment's {key} was {existing}; here it is {wanted}, \
         and verdicts from the two would not be one run's: resume it where it started, or \
         choose another --out"
    )]
    OtherMachine {
        /// The directory.
        path: PathBuf,
        /// The first fingerprint field that differs.
        key: String,
        /// Its value there.
        existing: String,
        /// Its value here.
        wanted: String,
    },
    /// A file is not what it should be.
    #[error("{path}:{line}: {message}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The line (1-based).
        line: usize,
        /// What is wrong, naming the field where serde does.
        message: String,
    },
    /// A derived file could not be written from what it is made of (a file it reads as it
    /// is written said something wrong): left as it was.
    #[error("{path}: not written: {message}")]
    Unwritable {
        /// The file.
        path: PathBuf,
        /// Why, naming the file read.
        message: String,
    },
    /// The run directory's path names something that is not a directory.
    #[error(
        "{path} is a file, not a run directory: give --out a directory (a new one, or a run to \
         resume)"
    )]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// The directory holds no run (no `manifest.json`).
    #[error("{path} is not a run directory (it has no manifest.json)")]
    NotARun {
        /// The directory.
        path: PathBuf,
    },
    /// A newer assay wrote the directory.
    #[error(
        "{path}: written by a newer assay (run-directory schema {schema}; this one reads up to \
         {SCHEMA})"
    )]
    Newer {
        /// The manifest.
        path: PathBuf,
        /// Its schema.
        schema: u32,
    },
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RunDirError + '_ {
    move |source| RunDirError::Io {
        path: path.to_path_buf(),
        source,
    }
}
