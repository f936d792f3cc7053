//! A run as the runs list shows it: what its manifest says, how far it got, whether it is still
//! running, and its figures. Apart, as the list asks it of every run every few seconds and
//! it reads files of its own (the samples' lines, the journals' times).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use assay_report::RunFigures;
use serde::Serialize;

use super::{is_pybench, Files, RunSource};
use crate::journal::stamp;
use crate::{io_error, ViewError};

/// How long a journal may go unwritten and its run still count as running.
const RUNNING_WITHIN: Duration = Duration::from_secs(60);

/// A run in the runs list.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Its number in the viewer.
    pub id: usize,
    /// Its name.
    pub label: String,
    /// Where it is.
    pub path: PathBuf,
    /// `bigcodebench`, `pybench`... (empty until its manifest reads).
    pub benchmark: String,
    /// The manifest's kind, or `official` for an official results file.
    pub kind: String,
    /// The prompt style.
    pub split: Option<String>,
    /// The model.
    pub model: Option<String>,
    /// `finished`, `running` (a journal written in the last minute), `unfinished`.
    pub state: String,
    /// Samples judged so far.
    pub judged: usize,
    /// Samples to judge, when known.
    pub expected: Option<usize>,
    /// Samples per status.
    pub statuses: BTreeMap<String, usize>,
    /// The report's figures (pass@k with intervals...), when the run has judged anything.
    pub figures: Option<RunFigures>,
    /// Why the run could not be read, when it could not.
    pub error: Option<String>,
}

impl RunSource {
    /// The run as the runs list shows it. A run that cannot be read says why.
    pub fn summary(&self) -> Summary {
        let mut summary = Summary {
            id: self.id,
            label: self.label.clone(),
            path: self.path.clone(),
            benchmark: String::new(),
            kind: String::new(),
            split: None,
            model: None,
            state: "finished".into(),
            judged: 0,
            expected: None,
            statuses: BTreeMap::new(),
            figures: None,
            error: None,
        };
        if let Err(e) = self.fill(&mut summary) {
            summary.error = Some(e.to_string());
        }
        summary
    }

    fn fill(&self, summary: &mut Summary) -> Result<(), ViewError> {
        let mut state = self.lock();
        state.refresh()?;
        summary.judged = state.rows.len();
        summary.statuses = state.statuses.clone();
        match &mut state.files {
            Files::Dir(dir) => {
                let manifest = dir.manifest.get()?.cloned();
                if let Some(m) = &manifest {
                    summary.kind = m.kind.as_str().to_string();
                    summary.benchmark = m.identity.benchmark.clone().unwrap_or_default();
                    summary.split = m.identity.split.clone();
                    summary.model = m.identity.model.clone();
                }
                summary.expected = if is_pybench(manifest.as_ref()) {
                    None
                } else {
                    let now = stamp(&dir.samples_path);
                    let n = match (now, dir.samples_count) {
                        (None, _) => 0,
                        (Some(now), Some((then, n))) if now == then => n,
                        (Some(now), _) => {
                            let n = count_lines(&dir.samples_path)?;
                            dir.samples_count = Some((now, n));
                            n
                        }
                    };
                    (n > 0).then_some(n)
                };
                summary.state = activity(self.root.as_deref().unwrap_or(&self.path));
            }
            // The report reads what an official file's name says (benchmark, split, model).
            Files::Official(_) => summary.kind = "official".into(),
        }
        if summary.judged > 0 {
            let figures = self.figures(&mut state)?.1;
            if summary.kind == "official" {
                summary.benchmark = figures.benchmark.clone();
                summary.split = figures.split.clone();
                summary.model = figures.model.clone();
            }
            summary.figures = Some(figures);
        }
        Ok(())
    }
}

/// The lines of a file (none when it does not exist).
fn count_lines(path: &Path) -> Result<usize, ViewError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(bytes.iter().filter(|&&b| b == b'\n').count()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(io_error(path, e)),
    }
}

/// `finished` (its summary is newer than its journals), `running` (a journal written within
/// the last minute) or `unfinished`.
fn activity(dir: &Path) -> String {
    if assay_report::finished_at(dir).is_some() {
        return "finished".into();
    }
    let recent = assay_report::last_write(dir)
        .and_then(|written| SystemTime::now().duration_since(written).ok())
        .is_some_and(|age| age < RUNNING_WITHIN);
    if recent { "running" } else { "unfinished" }.into()
}
