//! Logging tracked runs with the tracker's own client: a small uploader script (embedded in the
//! binary) run in the tracker's pinned environment, in one process for all the runs of an
//! export, handed a document of them and answering a line per run.
//!
//! The uploader is trusted, not sandboxed, but it still gets only what it needs: the installers'
//! variables (`Inherit::Tools`) and the tracker's own (`MLFLOW_…`, `DATABRICKS_…` for a
//! Databricks workspace, `WANDB_…`), never the model providers' keys. Its wait is bounded:
//! the whole upload has a time limit, and MLflow's HTTP retries are bounded too unless the user
//! set them.

use std::path::Path;
use std::time::Duration;

use assay_pyenv::bounded::run_bounded;
use assay_pyenv::child_env::{self, Inherit};
use serde_json::{json, Value};

use super::{TrackedRun, Uploaded};

const MLFLOW_UPLOADER: &str = include_str!("mlflow_upload.py");
const WANDB_UPLOADER: &str = include_str!("wandb_upload.py");

/// What starts each line in which the uploader answers for a run: its other output (the
/// clients' logging) is set apart from the answers.
const ANSWER: &str = "assay-upload: ";

/// Bounded retries of MLflow's HTTP client unless the user set their own: its default (7
/// retries, doubling from 2 s) waits minutes on a server that is down.
const MLFLOW_DEFAULTS: [(&str, &str); 2] = [
    ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2"),
    ("MLFLOW_HTTP_REQUEST_TIMEOUT", "30"),
];

/// Where runs go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tracker {
    /// An MLflow tracking server (or store), and the experiment the runs go in.
    Mlflow {
        /// `http://…`, `databricks`, `sqlite:///…`, `file:…`.
        tracking_uri: String,
        /// The experiment's name; made when it does not exist.
        experiment: String,
    },
    /// Weights & Biases: online, or offline as `WANDB_MODE` says.
    Wandb {
        /// The project.
        project: String,
        /// The team or user; the account's default when none.
        entity: Option<String>,
    },
}

impl Tracker {
    /// The profile whose environment the uploader runs in.
    pub fn profile(&self) -> &'static str {
        match self {
            Tracker::Mlflow { .. } => "mlflow",
            Tracker::Wandb { .. } => "wandb",
        }
    }

    fn script(&self) -> &'static str {
        match self {
            Tracker::Mlflow { .. } => MLFLOW_UPLOADER,
            Tracker::Wandb { .. } => WANDB_UPLOADER,
        }
    }

    /// The tracker's own variables, by prefix.
    fn prefixes(&self) -> &'static [&'static str] {
        match self {
            Tracker::Mlflow { .. } => &["MLFLOW_", "DATABRICKS_"],
            Tracker::Wandb { .. } => &["WANDB_"],
        }
    }

    fn destination(&self) -> Value {
        match self {
            Tracker::Mlflow {
                tracking_uri,
                experiment,
            } => json!({"tracking_uri": tracking_uri, "experiment": experiment}),
            Tracker::Wandb { project, entity } => json!({"project": project, "entity": entity}),
        }
    }
}

/// Why nothing could be said of the runs: the uploader could not be started, or ended without
/// answering for every run.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    /// Writing the document or starting the uploader failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The uploader failed before answering for every run.
    #[error("the {tracker} uploader failed ({status}) before it answered for every run:\n{said}")]
    Failed {
        /// `mlflow` or `wandb`.
        tracker: &'static str,
        /// How it ended.
        status: String,
        /// The end of what it wrote to standard error.
        said: String,
    },
}

/// Logs `runs` with `python` (the tracker's environment's interpreter), within `timeout` in
/// all, handing it `secrets` (the tracker's tokens, which assay keeps out of its own
/// environment) beside the tracker's variables. Each run's outcome in the order given: where
/// it went, or why the tracker refused it. `on_line` hears the uploader's output as it comes.
pub fn upload(
    python: &Path,
    tracker: &Tracker,
    runs: &[TrackedRun],
    timeout: Duration,
    secrets: &[(&str, String)],
    on_line: &mut dyn FnMut(&str),
) -> Result<Vec<Result<Uploaded, String>>, UploadError> {
    let staging = tempfile::tempdir()?;
    let mut documents = Vec::new();
    for (index, run) in runs.iter().enumerate() {
        let report = staging.path().join(index.to_string()).join("report.html");
        std::fs::create_dir_all(report.parent().unwrap_or(staging.path()))?;
        std::fs::write(&report, &run.report_html)?;
        let mut files: Vec<String> = run.files.iter().map(|f| f.display().to_string()).collect();
        files.push(report.display().to_string());
        let mut document = serde_json::to_value(run).map_err(std::io::Error::other)?;
        document["files"] = json!(files);
        documents.push(document);
    }
    let document = staging.path().join("runs.json");
    let text = json!({"destination": tracker.destination(), "runs": documents});
    std::fs::write(&document, text.to_string())?;

    let mut command = child_env::command(python, Inherit::Tools);
    command.args(["-I", "-c", tracker.script()]).arg(&document);
    let prefixes = tracker.prefixes();
    command.envs(std::env::vars_os().filter(|(name, _)| {
        name.to_str()
            .is_some_and(|name| prefixes.iter().any(|p| name.starts_with(p)))
    }));
    if let Tracker::Mlflow { .. } = tracker {
        for (name, value) in MLFLOW_DEFAULTS {
            if std::env::var_os(name).is_none() {
                command.env(name, value);
            }
        }
    }
    let prefixes = tracker.prefixes();
    command.envs(
        secrets
            .iter()
            .filter(|(name, _)| prefixes.iter().any(|p| name.starts_with(p)))
            .map(|(name, value)| (name, value)),
    );
    let finished = run_bounded(command, timeout, on_line)?;
    let mut outcomes: Vec<Option<Result<Uploaded, String>>> = vec![None; runs.len()];
    for line in finished.stdout.lines() {
        let Some(answer) = line.strip_prefix(ANSWER) else {
            continue;
        };
        let Ok(answer) = serde_json::from_str::<Value>(answer) else {
            continue;
        };
        let Some(slot) = answer["index"]
            .as_u64()
            .and_then(|i| outcomes.get_mut(i as usize))
        else {
            continue;
        };
        *slot = Some(match answer["error"].as_str() {
            Some(error) => Err(error.to_string()),
            None => serde_json::from_value(answer).map_err(|e| e.to_string()),
        });
    }
    match outcomes.into_iter().collect::<Option<Vec<_>>>() {
        Some(outcomes) if finished.success => Ok(outcomes),
        _ => Err(UploadError::Failed {
            tracker: tracker.profile(),
            status: finished.status.to_string(),
            said: tail(&finished.stderr, 20),
        }),
    }
}

/// The last `lines` lines of `text`.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
