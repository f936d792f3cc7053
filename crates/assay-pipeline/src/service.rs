//! `assay serve`'s start: the engine in its environment, BigCodeBench judging where the
//! environment is BigCodeBench's, and the service over them.

use std::path::Path;

use assay_eval::bigcodebench::verifier::Verifier;
use assay_eval::probe::missing_modules;
use assay_records::Split;
use assay_serve::{Service, SessionsEngine, Settings};

use crate::engine;
use crate::error::PipelineError;
use crate::judge::JudgeSettings;

/// Starts the engine in `env` (set up already) as `judge` says, hiding `harness` (a secret's
/// file) from jobs, and the service over it with `settings`; sessions run in
/// `sessions_env` when given (another environment, with IPython), else in `env`. The default
/// dataset is loaded first (which of its libraries the environment lacks probed, its
/// reference cache opened), so that the first answer does not wait for it; tasks needing a
/// library the environment lacks are `infra`, as in `assay eval`.
pub async fn start(
    env: assay_pyenv::Environment,
    sessions_env: Option<assay_pyenv::Environment>,
    judge: &JudgeSettings,
    settings: Settings,
    harness: &[&Path],
) -> Result<Service, PipelineError> {
    judge.validate()?;
    let options = judge.options(Split::Complete)?;
    let engine = engine::start(&env, &judge.engine, harness).await?;
    let verifier = Verifier::new(
        engine.clone(),
        options,
        assay_pyenv::cache_root()?,
        env.key(),
        settings.max_timeout,
    );
    verifier
        .load(&settings.default_dataset)
        .await
        .map_err(|e| PipelineError::Invalid(e.to_string()))?;
    let sessions_engine = match &sessions_env {
        Some(other) => engine::start(other, &judge.engine, harness).await?,
        None => engine.clone(),
    };
    let sessions = SessionsEngine {
        unavailable: sessions_unavailable(&sessions_engine, &settings.sessions_profile).await?,
        engine: sessions_engine,
    };
    Ok(Service::new(
        engine,
        sessions,
        verifier,
        env.python(),
        settings,
    ))
}

/// Why sessions cannot run in `engine` (its environment, `profile`, lacks IPython), if so:
/// said when a session is asked for.
async fn sessions_unavailable(
    engine: &assay_sandbox::Engine,
    profile: &str,
) -> Result<Option<String>, PipelineError> {
    let missing = missing_modules(engine, ["IPython"]).await?;
    Ok((!missing.is_empty()).then(|| {
        format!(
            "sessions run their cells in IPython, which the `{profile}` environment lacks: \
             start the service with --sessions-profile pybench (or test)"
        )
    }))
}
