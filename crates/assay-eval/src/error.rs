//! Why an evaluation stopped.

use assay_rundir::RunDirError;

/// Why an evaluation, or a check of the reference solutions, could not go on. Verdicts are
/// never errors: a sample that breaks anything gets one.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The run directory or the ground-truth cache could not be read or written.
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    /// The samples could not be read again (the file changed since it was loaded).
    #[error(transparent)]
    Samples(#[from] crate::bigcodebench::samples::SamplesError),
    /// Samples were left without a verdict (what is judged is kept; a rerun judges the rest).
    #[error("{0}")]
    Unjudged(String),
    /// Asking the sandbox's environment what it has failed.
    #[error("probing the environment: {0}")]
    Probe(String),
}
