//! The end of a PyBench run: its journals rewritten in task order and its summary written, with
//! the figures of the LLM judgings that still hold. Apart, as a merge of shards sums up its
//! episodes the same way ([`summary_of`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use assay_agent::pybench::checks::Mode;
use assay_agent::pybench::published;
use assay_agent::pybench::summary::summarize;
use assay_records::{EpisodeRecord, Manifest, PybenchSummary, TrajectoryRecord};
use assay_rundir::{RunDir, SUMMARY};
use assay_tasks::pybench::PyBench;

use super::{PybenchReport, TRAJECTORIES};
use crate::error::PipelineError;

/// The figures of a run's `episodes` (one per task) with `checks` at their head, beside the
/// paper's for its model and priced as its manifest says.
pub(crate) fn summary_of(
    episodes: &[EpisodeRecord],
    manifest: &Manifest,
    checks: Mode,
    wall_seconds: f64,
) -> PybenchSummary {
    let published = manifest
        .identity
        .model
        .as_deref()
        .and_then(published::for_model);
    let prices = manifest
        .model_access
        .as_ref()
        .and_then(|a| a.prices.as_ref());
    summarize(episodes, checks, published, prices, wall_seconds)
}

/// Rewrites the journals in task order (the trajectories of a run) and writes the summary.
pub(super) fn finish(
    run: &mut RunDir,
    data: &PyBench,
    mut records: BTreeMap<String, EpisodeRecord>,
    trajectories: Option<BTreeMap<String, TrajectoryRecord>>,
    checks: Mode,
    started: Instant,
) -> Result<PybenchReport, PipelineError> {
    let ordered: Vec<EpisodeRecord> = data
        .tasks
        .iter()
        .filter_map(|t| records.remove(&t.task_id()))
        .collect();
    run.rewrite_results(&ordered)?;
    if let Some(mut trajectories) = trajectories {
        let ordered: Vec<TrajectoryRecord> = data
            .tasks
            .iter()
            .filter_map(|t| trajectories.remove(&t.index))
            .collect();
        run.write_lines(TRAJECTORIES, &ordered)?;
    }
    let mut summary = summary_of(
        &ordered,
        &run.manifest()?,
        checks,
        started.elapsed().as_secs_f64(),
    );
    summary.judges = judgings_kept(run.path(), &ordered);
    run.write_json(SUMMARY, &summary)?;
    Ok(PybenchReport {
        summary,
        dir: run.path().to_path_buf(),
        unfinished: 0,
    })
}

/// The LLM judges' figures of the summary `dir` had, those that judged these `episodes`
/// (a judging of other episodes no longer holds: `assay judge pybench` again asks only for
/// what changed).
fn judgings_kept(dir: &Path, episodes: &[EpisodeRecord]) -> Vec<assay_records::JudgeFigures> {
    let Ok(text) = std::fs::read_to_string(dir.join(SUMMARY)) else {
        return Vec::new();
    };
    let Ok(old) = serde_json::from_str::<PybenchSummary>(&text) else {
        return Vec::new();
    };
    let digest = assay_agent::pybench::judge::figures::episodes_digest(episodes.iter());
    old.judges
        .into_iter()
        .filter(|j| j.episodes_digest == digest)
        .collect()
}
