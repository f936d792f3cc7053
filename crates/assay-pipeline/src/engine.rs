//! Starting the sandbox for a pipeline, with the harness's own files out of the jobs' sight.

use std::path::{Path, PathBuf};

use assay_eval::bigcodebench::ground_truth::CACHE_DIR as GROUND_TRUTH_DIR;
use assay_pyenv::{EnvStatus, Environment};
use assay_records::{Conditions, Fingerprint, Manifest};
use assay_sandbox::{Engine, EngineConfig, IsolationMode};

use crate::error::PipelineError;

/// How the sandbox runs jobs.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// Whether to refuse anything below full isolation.
    pub isolation: IsolationMode,
    /// CPU slots (default: the number of CPUs).
    pub jobs: Option<usize>,
    /// Jobs at once at most, counting those that lent their slot.
    pub max_jobs: Option<usize>,
    /// Worker processes forking the jobs (default: one per `SLOTS_PER_WORKER` slots).
    pub workers: Option<usize>,
    /// Give evaluated code the host's network.
    pub network: bool,
    /// The listing order and seeds every job runs under.
    pub conditions: Conditions,
    /// Host directories jobs may read besides their environment: where a coding agent's
    /// programs are installed.
    pub visible: Vec<PathBuf>,
}

/// Starts an engine in `env` (set up already). `harness`: the pipeline's own files (run
/// directory, samples), hidden from jobs with the rest of [`harness_paths`].
pub async fn start(
    env: &Environment,
    settings: &EngineSettings,
    harness: &[&Path],
) -> Result<Engine, PipelineError> {
    let mut config = EngineConfig::new(env.python());
    config.preload = env.profile.preload_modules();
    config.isolation = settings.isolation;
    if let Some(jobs) = settings.jobs {
        if jobs == 0 {
            return Err(PipelineError::Invalid("--jobs must be at least 1".into()));
        }
        config.set_concurrency(jobs);
    }
    if let Some(max) = settings.max_jobs {
        if max < config.concurrency {
            return Err(PipelineError::Invalid(format!(
                "--max-jobs ({max}) must be at least --jobs ({})",
                config.concurrency
            )));
        }
        config.max_running = max;
    }
    if let Some(workers) = settings.workers {
        if workers == 0 {
            return Err(PipelineError::Invalid(
                "--workers must be at least 1".into(),
            ));
        }
        config.workers = workers;
    }
    config.network = settings.network;
    config.extra_readonly = settings.visible.clone();
    config.conditions = settings.conditions;
    config.hidden = harness_paths(harness)?;
    Ok(Engine::start(config).await?)
}

/// Writes where `engine` runs code into `manifest`: its Python, its isolation, and the
/// fingerprint that shards and resumed runs must share. `network`: whether jobs have it.
pub fn record_machine(manifest: &mut Manifest, engine: &Engine, env: &Environment, network: bool) {
    let isolation = engine.isolation();
    manifest.python = Some(engine.python_version().to_string());
    manifest.isolation = Some(isolation.clone());
    // An engine starts only in a complete environment; its marker says what is installed.
    manifest.fingerprint = match env.status() {
        EnvStatus::Complete(marker) => {
            let mut packages = marker.packages.clone();
            packages.sort();
            Some(Fingerprint {
                python: engine.python_version().to_string(),
                profile: marker.profile.clone(),
                packages: blake3::hash(packages.join("\n").as_bytes()).to_hex()[..16].to_string(),
                package_count: packages.len(),
                nltk_data: marker
                    .nltk_data
                    .iter()
                    .filter(|(_, state)| *state == assay_pyenv::nltk::INSTALLED)
                    .map(|(package, _)| package.clone())
                    .collect(),
                network,
                isolation: isolation.level,
                memory_limit: isolation.memory_limit,
            })
        }
        _ => None,
    };
}

/// What jobs must never read should it lie inside a tree they can see (the sandbox binds the
/// system directories, the interpreter and its environment): `extra` (a run directory, a
/// samples file), the ground-truth cache, PyBench's fetched data (the checks' data, and
/// upstream's tree holds a config file with an API key) and the user's home. A mask covers
/// only what exists when the engine starts (the view is built then), so a path not there yet,
/// a directory to come (the run directory, the caches), is made here.
fn harness_paths(extra: &[&Path]) -> Result<Vec<PathBuf>, PipelineError> {
    let mut paths: Vec<PathBuf> = extra.iter().map(|p| p.to_path_buf()).collect();
    let cache = assay_pyenv::cache_root()?;
    paths.push(cache.join(GROUND_TRUTH_DIR));
    paths.push(cache.join(crate::pybench_data::CACHE_DIR));
    let mut hidden: Vec<PathBuf> = std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from)
        .into_iter()
        .collect();
    for path in paths {
        let io = |source| PipelineError::Io {
            path: path.clone(),
            source,
        };
        if !path.exists() {
            std::fs::create_dir_all(&path).map_err(io)?;
        }
        hidden.push(std::fs::canonicalize(&path).map_err(io)?);
    }
    Ok(hidden)
}
