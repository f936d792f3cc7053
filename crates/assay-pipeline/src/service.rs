//! `assay serve`'s start: the engine in its environment, BigCodeBench judging where the
//! environment is BigCodeBench's, and the service over them.

use std::path::Path;

use assay_eval::bigcodebench::verifier::Verifier;
use assay_records::{Split, TimePolicy};
use assay_serve::{Service, Settings};

use crate::engine;
use crate::error::PipelineError;
use crate::judge::JudgeSettings;

/// Starts the engine in `env` (set up already) as `judge` says, hiding `harness` (a secret's
/// file) from jobs, and the service over it with `settings`. In the `bigcodebench`
/// environment the default dataset is loaded first (its libraries probed, its reference
/// cache opened), so that the first answer does not wait for it.
pub async fn start(
    env: assay_pyenv::Environment,
    judge: &JudgeSettings,
    settings: Settings,
    harness: &[&Path],
) -> Result<Service, PipelineError> {
    judge.validate()?;
    let mut options = judge.options(Split::Complete)?;
    // A BigCodeBench answer's budget, like every job's, stays within the service's maximum.
    if let TimePolicy::Budget { cap_seconds, .. } = &mut options.time {
        *cap_seconds = cap_seconds.min(settings.max_timeout.as_secs_f64());
    }
    let engine = engine::start(&env, &judge.engine, harness).await?;
    let verifier = if env.profile.name == "bigcodebench" {
        let verifier = Verifier::new(
            engine.clone(),
            options,
            assay_pyenv::cache_root()?,
            env.key(),
        );
        verifier
            .load(&settings.default_dataset)
            .await
            .map_err(|e| PipelineError::Invalid(e.to_string()))?;
        Some(verifier)
    } else {
        None
    };
    Ok(Service::new(engine, verifier, env.python(), settings))
}
