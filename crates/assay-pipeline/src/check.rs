//! `check`: the reference solutions run, as the official `--check_gt_only` does: which tasks
//! this environment cannot pass, and why.

use std::path::{Path, PathBuf};

use assay_eval::bigcodebench::official_files::write_ground_truth;
use assay_records::{CheckSummary, Identity, Kind, Listener, Manifest, Split};
use assay_rundir::{RunDir, SUMMARY};

use crate::error::PipelineError;
use assay_eval::bigcodebench::ground_truth::REFERENCE_MEMORY_BYTES;

use crate::engine::EngineSettings;
use crate::judge::JudgeSettings;
use crate::selection::TaskSelection;

/// What to check, and where.
pub struct CheckRequest {
    /// The tasks.
    pub tasks: TaskSelection,
    /// Also write `pass_at_k.json` and `summary.json` into this directory.
    pub out: Option<PathBuf>,
    /// Run under the official harness's process guards.
    pub guards: bool,
    /// How the sandbox runs.
    pub engine: EngineSettings,
    /// The Python environment jobs run in, set up.
    pub env: assay_pyenv::Environment,
}

/// Runs the references of `request.tasks` not measured yet.
pub async fn check(
    request: CheckRequest,
    listener: &mut dyn Listener,
) -> Result<CheckSummary, PipelineError> {
    let dataset = request.tasks.load()?;
    // References run with limits of their own (the ground truth's); only the guards and the
    // engine come from the request.
    let settings = JudgeSettings {
        calibrated: true,
        timeout: None,
        memory_mib: REFERENCE_MEMORY_BYTES >> 20,
        guards: request.guards,
        gamed_as_official: false,
        engine: request.engine.clone(),
        stability: 0,
    };
    let options = settings.options(Split::Complete)?;
    let harness: Vec<&Path> = request.out.iter().map(PathBuf::as_path).collect();
    let judge = settings.start(request.env, options, &harness).await?;
    let mut prepared = judge.prepare(&dataset, listener).await?;
    let started = std::time::Instant::now();
    let ground_truth = judge
        .measure_references(&mut prepared, &dataset, listener)
        .await?;
    let summary = CheckSummary {
        benchmark: request.tasks.benchmark().to_string(),
        dataset: request.tasks.source(),
        environment: judge.environment_key(),
        isolation: judge.engine().isolation().clone(),
        tasks: dataset.tasks.len(),
        ground_truth,
        wall_seconds: started.elapsed().as_secs_f64(),
    };
    if let Some(out) = &request.out {
        let identity = Identity {
            benchmark: Some(summary.benchmark.clone()),
            dataset_digest: Some(dataset.digest.clone()),
            tasks: Some(request.tasks.tasks.clone()),
            environment: Some(summary.environment.clone()),
            network: Some(request.engine.network),
            guards: Some(request.guards),
            conditions: Some(request.engine.conditions),
            ..Identity::default()
        };
        let manifest = Manifest::new(Kind::BigcodebenchCheck, identity);
        let dir = RunDir::open::<serde_json::Value>(out, &manifest)?.dir;
        write_ground_truth(&dir, &dataset, &summary.ground_truth)?;
        dir.write_json(SUMMARY, &summary)?;
    }
    Ok(summary)
}
