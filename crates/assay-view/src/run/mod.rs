//! One run as the viewer shows it: its samples as table rows, each sample's whole story on
//! request, and its figures. The files are read when asked for and read on as they grow
//! ([`crate::journal`]), so a run in progress shows what it has judged so far.
//!
//! This module holds a run's files and what is cached from them under one lock (the rows, the
//! report's figures); each child answers one kind of question about the run: [`summary`] its
//! line in the runs list, [`table`] a page of its rows, [`detail`] one sample's whole story.
//! The rows are built by [`rows`] (and [`official`], for an official results file), with what
//! [`tasks`] knows of the tasks.

mod detail;
mod official;
mod rows;
mod summary;
mod table;
mod tasks;
#[cfg(test)]
mod testing;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use assay_records::{
    EpisodeRecord, GenerationRecord, JudgementRecord, Kind, Manifest, SampleRecord,
    TrajectoryRecord,
};
use assay_report::{figures, Run, RunFigures};
use serde_json::Value;

use self::official::{official_rows, OfficialFile};
use self::rows::{episode_rows, sample_rows};
use crate::journal::{stamp, Document, Journal, Stamp};
use crate::{io_error, ViewError};

pub use self::rows::Row;
pub use self::summary::Summary;
pub use self::table::{Filter, Page};
pub(crate) use self::tasks::task_number;

/// How often the figures of a changing run are computed again (each is a bootstrap).
const FIGURES_EVERY: Duration = Duration::from_secs(5);

/// A run as a diff compares it.
pub struct Compared {
    /// The report's view of the run.
    pub run: Arc<Run>,
    /// Its figures.
    pub figures: RunFigures,
    /// The first sample of each task (its row key), for links from a diff.
    pub first_samples: HashMap<String, usize>,
}

/// The figures of a run and what they were computed from.
struct Figures {
    stamps: Vec<Option<Stamp>>,
    at: Instant,
    run: Arc<Run>,
    figures: RunFigures,
}

/// A run directory's files.
struct DirFiles {
    manifest: Document<Manifest>,
    results: Journal<SampleRecord>,
    samples: Journal<Value>,
    /// `samples.jsonl`, whose lines the runs list counts without parsing them, and the count
    /// with the stamp of the file it was made from.
    samples_path: PathBuf,
    samples_count: Option<(Stamp, usize)>,
    episodes: Journal<EpisodeRecord>,
    trajectories: Journal<TrajectoryRecord>,
    /// BigCodeBench: the requests of a generation, for what each answer thought.
    generation: Journal<GenerationRecord>,
    /// PyBench: what LLM judges were asked and answered.
    judgements: Journal<JudgementRecord>,
}

enum Files {
    Dir(Box<DirFiles>),
    Official(Document<OfficialFile>),
}

struct State {
    files: Files,
    /// The rows, and the version of the records they were built from (rebuilt when the
    /// records' file changes).
    rows: Vec<Row>,
    /// Of the rows: how many have each status, how many gamed their tests, and every library
    /// or category, sorted.
    statuses: BTreeMap<String, usize>,
    gamed: usize,
    groups: Vec<String>,
    built_from: Option<u64>,
    figures: Option<Figures>,
}

/// One run the viewer was given.
pub struct RunSource {
    /// Its number.
    pub id: usize,
    /// Its name.
    pub label: String,
    /// Where it is, as given.
    pub path: PathBuf,
    /// The directory files may be served from (canonical), for directories.
    pub root: Option<PathBuf>,
    state: Mutex<State>,
}

impl RunSource {
    /// A run directory (it has a `manifest.json`) or an official results file. Nothing is read
    /// yet but whether it exists.
    pub fn open(id: usize, path: &Path) -> Result<RunSource, ViewError> {
        let meta = std::fs::metadata(path).map_err(|e| io_error(path, e))?;
        let label = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        let (files, root) = if meta.is_dir() {
            if !path.join("manifest.json").is_file() {
                return Err(ViewError::NotARun {
                    path: path.to_path_buf(),
                });
            }
            let root = std::fs::canonicalize(path).map_err(|e| io_error(path, e))?;
            let dir = DirFiles {
                manifest: Document::new(root.join("manifest.json")),
                results: Journal::new(root.join("results.jsonl")),
                samples: Journal::new(root.join("samples.jsonl")),
                samples_path: root.join("samples.jsonl"),
                samples_count: None,
                episodes: Journal::new(root.join("results.jsonl")),
                trajectories: Journal::new(root.join("trajectory.jsonl")),
                generation: Journal::new(root.join("generation.jsonl")),
                judgements: Journal::new(root.join("judgements.jsonl")),
            };
            (Files::Dir(Box::new(dir)), Some(root))
        } else {
            (Files::Official(Document::new(path.to_path_buf())), None)
        };
        Ok(RunSource {
            id,
            label,
            path: path.to_path_buf(),
            root,
            state: Mutex::new(State {
                files,
                rows: Vec::new(),
                statuses: BTreeMap::new(),
                gamed: 0,
                groups: Vec::new(),
                built_from: None,
                figures: None,
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves only caches behind: they are rebuilt.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The report's view of the run (loaded again when its files changed, at most every
    /// few seconds while they keep changing), and its figures.
    fn figures(&self, state: &mut State) -> Result<(Arc<Run>, RunFigures), ViewError> {
        let stamps = self.stamps();
        if let Some(f) = &state.figures {
            if f.stamps == stamps || f.at.elapsed() < FIGURES_EVERY {
                return Ok((f.run.clone(), f.figures.clone()));
            }
        }
        let run = Run::load(&self.path)?;
        let figures = figures(&run);
        let run = Arc::new(run);
        state.figures = Some(Figures {
            stamps,
            at: Instant::now(),
            run: run.clone(),
            figures: figures.clone(),
        });
        Ok((run, figures))
    }

    /// What a diff needs of the run, read under one lock: the report's view of it, its
    /// figures (cached with it), and the first sample of each task.
    pub fn compared(&self) -> Result<Compared, ViewError> {
        let mut state = self.lock();
        state.refresh()?;
        let (run, figures) = self.figures(&mut state)?;
        let mut first_samples = HashMap::new();
        for row in &state.rows {
            first_samples
                .entry(row.task_id.clone())
                .or_insert(row.index);
        }
        Ok(Compared {
            run,
            figures,
            first_samples,
        })
    }

    fn stamps(&self) -> Vec<Option<Stamp>> {
        match &self.root {
            // The summary too: a judging writes its figures there.
            Some(root) => [
                "manifest.json",
                "results.jsonl",
                "samples.jsonl",
                "generation.jsonl",
                "summary.json",
            ]
            .iter()
            .map(|f| stamp(&root.join(f)))
            .collect(),
            None => vec![stamp(&self.path)],
        }
    }
}

impl State {
    /// Reads what changed and rebuilds the rows when the records did.
    fn refresh(&mut self) -> Result<(), ViewError> {
        let version = match &mut self.files {
            Files::Official(doc) => {
                doc.get()?;
                doc.reads()
            }
            Files::Dir(dir) => {
                if is_pybench(dir.manifest.get()?) {
                    dir.episodes.refresh()?;
                    dir.episodes.changes()
                } else {
                    dir.results.refresh()?;
                    dir.results.changes()
                }
            }
        };
        if self.built_from == Some(version) {
            return Ok(());
        }
        self.rows = match &mut self.files {
            Files::Official(doc) => doc.get()?.map(official_rows).unwrap_or_default(),
            Files::Dir(dir) => {
                let manifest = dir.manifest.get()?;
                if is_pybench(manifest) {
                    episode_rows(dir.episodes.records())
                } else {
                    let version = manifest.and_then(|m| m.identity.dataset.clone());
                    sample_rows(dir.results.records(), version.as_deref())
                }
            }
        };
        self.statuses.clear();
        self.gamed = 0;
        let mut groups: Vec<String> = Vec::new();
        for row in &self.rows {
            *self.statuses.entry(row.status.clone()).or_default() += 1;
            self.gamed += usize::from(!row.gamed.is_empty());
            groups.extend(row.groups.iter().cloned());
        }
        groups.sort();
        groups.dedup();
        self.groups = groups;
        self.built_from = Some(version);
        Ok(())
    }
}

/// Whether a manifest is a PyBench run's (episodes), not a BigCodeBench one's (samples).
fn is_pybench(manifest: Option<&Manifest>) -> bool {
    manifest.is_some_and(|m| matches!(m.kind, Kind::PybenchRun | Kind::PybenchEval))
}

#[cfg(test)]
mod tests {
    use super::testing::run_dir;
    use super::*;

    #[test]
    fn a_damaged_journal_is_named_in_the_runs_list_and_the_table() {
        let dir = run_dir(
            Kind::PybenchRun,
            &[("results.jsonl", "{\"task_id\": \"PyBench/1\"}\n".into())],
        );
        let run = RunSource::open(0, dir.path()).unwrap();
        let error = run.summary().error.unwrap();
        assert!(
            error.contains("results.jsonl:1: not a valid record"),
            "{error}"
        );
        let err = run.page(&Filter::default()).unwrap_err().to_string();
        assert!(err.contains("results.jsonl:1"), "{err}");
        assert!(RunSource::open(1, &dir.path().join("nothing")).is_err());
    }
}
