//! PyBench shards joined: episodes, trajectories and requests in task order, each task's kept
//! output files and displayed figures copied, and the figures summed again from the episodes
//! by the code a run ends with.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assay_agent::pybench::checks::Mode;
use assay_records::{EpisodeRecord, GenerationRecord, PybenchSummary, TrajectoryRecord};
use assay_report::read_lines;
use assay_rundir::SUMMARY;

use super::{complete, invalid, merged_manifest, open_out, Figures, Head, TaskOrder};
use crate::error::PipelineError;
use crate::pybench::{load_tasks, summary_of, FIGURES_DIR, GENERATION, TASKS_DIR, TRAJECTORIES};

/// One shard, read whole.
struct Part {
    /// Its episodes, by task id.
    episodes: BTreeMap<String, EpisodeRecord>,
    /// Its trajectories (a run's), by task index.
    trajectories: BTreeMap<String, TrajectoryRecord>,
    generation: Vec<GenerationRecord>,
    summary: PybenchSummary,
}

impl super::Part for Part {
    fn verdicts(&self) -> Result<Vec<(String, String)>, PipelineError> {
        Ok(self
            .episodes
            .values()
            .map(|e| {
                let status = |s| serde_json::to_string(s).unwrap_or_default();
                let verdict = format!(
                    "{} (faithful {}, fixed {})",
                    status(&e.status),
                    status(&e.verdicts.faithful.status),
                    status(&e.verdicts.fixed.status)
                );
                (e.task_id.clone(), verdict)
            })
            .collect())
    }
}

/// The shard in `head`'s directory, or why it is not finished.
fn read_part(head: &Head) -> Result<Result<Part, String>, PipelineError> {
    let dir = &head.dir;
    let identity = &head.manifest.identity;
    let data = load_tasks(
        &data_folder(head),
        identity.tasks.as_deref().unwrap_or_default(),
        Some(head.shard),
    )?;
    if identity.dataset_digest.as_deref() != Some(data.digest.as_str()) {
        return Err(invalid(format!(
            "{}: the PyBench data at {} is not the one the shard ran (digest {} here, {:?} \
             there)",
            head.name(),
            identity.dataset.as_deref().unwrap_or_default(),
            data.digest,
            identity.dataset_digest
        )));
    }
    let report = |e: assay_report::SourceError| invalid(e.to_string());
    let Ok(summary) = std::fs::read_to_string(dir.join(SUMMARY)) else {
        return Ok(Err("has not ended (no summary.json)".into()));
    };
    let summary: PybenchSummary = serde_json::from_str(&summary)
        .map_err(|e| invalid(format!("{}: {SUMMARY}: {e}", dir.display())))?;
    // The last record of a task is its own (a resumed run appends).
    let mut episodes: BTreeMap<String, EpisodeRecord> = BTreeMap::new();
    for record in read_lines::<EpisodeRecord>(&dir.join("results.jsonl")).map_err(report)? {
        episodes.insert(record.task_id.clone(), record);
    }
    let ran = data
        .tasks
        .iter()
        .filter(|t| episodes.contains_key(&t.task_id()))
        .count();
    if ran < data.tasks.len() {
        return Ok(Err(format!(
            "has ended {ran} of its {} episodes",
            data.tasks.len()
        )));
    }
    if let Some(stray) = episodes
        .keys()
        .find(|id| !data.tasks.iter().any(|t| t.task_id() == **id))
    {
        return Err(invalid(format!(
            "{} holds {stray}, which is not one of its tasks",
            head.name()
        )));
    }
    let trajectories = read_lines::<TrajectoryRecord>(&dir.join(TRAJECTORIES))
        .map_err(report)?
        .into_iter()
        .map(|t| (t.index.clone(), t))
        .collect();
    Ok(Ok(Part {
        episodes,
        trajectories,
        generation: read_lines(&dir.join(GENERATION)).map_err(report)?,
        summary,
    }))
}

/// The data folder a shard ran.
fn data_folder(head: &Head) -> PathBuf {
    head.manifest.started_in().join(
        head.manifest
            .identity
            .dataset
            .as_deref()
            .unwrap_or_default(),
    )
}

/// Joins the shards `heads` (checked to be one run's, `count` of them) into `out`.
pub(super) fn merge(
    heads: Vec<Head>,
    count: u32,
    out: &Path,
) -> Result<(PathBuf, Vec<PathBuf>, Figures), PipelineError> {
    let (parts, same_as_taken) = complete(heads, count, read_part)?;
    let manifest = merged_manifest(&parts);
    let identity = &manifest.identity;
    let data = load_tasks(
        &data_folder(&parts[0].0),
        identity.tasks.as_deref().unwrap_or_default(),
        None,
    )?;
    let checks = match identity.checks.as_deref() {
        Some("fixed") => Mode::Fixed,
        _ => Mode::Faithful,
    };
    let mut run = open_out(out, &manifest)?;

    let mut episodes = Vec::new();
    let mut trajectories = Vec::new();
    for task in &data.tasks {
        let id = task.task_id();
        let Some((head, part)) = parts.iter().find(|(_, p)| p.episodes.contains_key(&id)) else {
            return Err(invalid(format!("no shard holds {id}")));
        };
        let episode = part.episodes[&id].clone();
        copy_files(&head.dir, run.path(), &task.index, &episode)?;
        if let Some(trajectory) = part.trajectories.get(&task.index) {
            trajectories.push(trajectory.clone());
        }
        episodes.push(episode);
    }
    let order = TaskOrder::new(episodes.iter().map(|e| e.task_id.as_str()));
    let generation = order.requests(parts.iter().flat_map(|(_, p)| &p.generation));

    run.rewrite_results(&episodes)?;
    if !trajectories.is_empty() {
        run.write_lines(TRAJECTORIES, &trajectories)?;
    }
    if !generation.is_empty() {
        run.write_lines(GENERATION, &generation)?;
    }
    let wall = parts
        .iter()
        .map(|(_, p)| p.summary.wall_seconds)
        .fold(0.0, f64::max);
    let summary = summary_of(&episodes, &manifest, checks, wall);
    run.write_json(SUMMARY, &summary)?;
    Ok((
        run.path().to_path_buf(),
        same_as_taken,
        Figures::Pybench(Box::new(summary)),
    ))
}

/// Copies what task `index`'s episode kept (`tasks/<index>/`, folders and files) and the
/// figures its cells name, from the shard `from` to the merged run `to`.
fn copy_files(
    from: &Path,
    to: &Path,
    index: &str,
    episode: &EpisodeRecord,
) -> Result<(), PipelineError> {
    let task_dir = Path::new(TASKS_DIR).join(index);
    if from.join(&task_dir).is_dir() {
        copy_tree(&from.join(&task_dir), &to.join(&task_dir))?;
    }
    for figure in episode.cells.iter().flat_map(|c| &c.figures) {
        let name = Path::new(figure);
        if name.parent() != Some(Path::new(FIGURES_DIR)) {
            return Err(invalid(format!(
                "{}: {} names the figure {figure}, not a file of {FIGURES_DIR}/",
                from.display(),
                episode.task_id
            )));
        }
        std::fs::create_dir_all(to.join(FIGURES_DIR)).map_err(io(&to.join(FIGURES_DIR)))?;
        std::fs::copy(from.join(name), to.join(name)).map_err(io(&from.join(name)))?;
    }
    Ok(())
}

/// Copies the folder `from` to `to`: folders (empty ones too) and regular files. A shard holds
/// nothing else there; anything else is refused rather than followed.
fn copy_tree(from: &Path, to: &Path) -> Result<(), PipelineError> {
    std::fs::create_dir_all(to).map_err(io(to))?;
    for entry in std::fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().map_err(io(&source))?;
        if kind.is_dir() {
            copy_tree(&source, &target)?;
        } else if kind.is_file() {
            std::fs::copy(&source, &target).map_err(io(&source))?;
        } else {
            return Err(invalid(format!(
                "{}: neither a file nor a folder; a shard's outputs hold only those",
                source.display()
            )));
        }
    }
    Ok(())
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PipelineError + '_ {
    move |source| PipelineError::Io {
        path: path.to_path_buf(),
        source,
    }
}
