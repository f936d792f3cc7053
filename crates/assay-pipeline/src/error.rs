//! Why a pipeline stopped.

/// Why a pipeline could not run, or stopped. Each variant keeps its source's message, which
/// names the file, line and field where there is one.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// A setting is out of range, or settings contradict each other.
    #[error("{0}")]
    Invalid(String),
    /// The tasks could not be loaded or chosen.
    #[error(transparent)]
    Dataset(#[from] assay_tasks::Error),
    /// The samples file cannot be judged as it is.
    #[error(transparent)]
    Samples(#[from] assay_eval::bigcodebench::samples::SamplesError),
    /// A run directory or the ground-truth cache failed.
    #[error(transparent)]
    RunDir(#[from] assay_rundir::RunDirError),
    /// Judging stopped.
    #[error(transparent)]
    Eval(#[from] assay_eval::EvalError),
    /// Generating stopped.
    #[error(transparent)]
    Generate(#[from] assay_generate::GenerateError),
    /// The model's client could not be made.
    #[error(transparent)]
    Model(#[from] assay_models::ConfigError),
    /// The sandbox could not start.
    #[error(transparent)]
    Sandbox(#[from] assay_sandbox::Error),
    /// The Python environment or assay's cache is not usable.
    #[error(transparent)]
    Environment(#[from] assay_pyenv::Error),
    /// A file the pipeline needs could not be made or found.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The model is not one assay knows how to reach.
    #[error(transparent)]
    ModelSpec(#[from] assay_models::SpecError),
    /// Generation settings are out of range.
    #[error(transparent)]
    Settings(#[from] assay_generate::SettingsError),
    /// The model server (`--serve`) could not be started.
    #[error(transparent)]
    Serve(#[from] assay_models::ServeError),
    /// The sanitizer could not start.
    #[error("starting the sanitizer: {0}")]
    Sanitizer(String),
}
