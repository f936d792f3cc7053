//! Logging tracked runs with the tracker's own client: a small uploader script (embedded in the
//! binary) run in the tracker's pinned environment, in one process for all the runs of an
//! export, handed a document of them and answering a line per run.
//!
//! The uploader is trusted, not sandboxed, but it still gets only what it needs: the installers'
//! variables (`Inherit::Tools`) and the tracker's own (`MLFLOW_…`, `DATABRICKS_…` for a
//! Databricks workspace and Azure's secrets for MLflow, `WANDB_…`), never the model providers' keys. Its wait is bounded:
//! the whole upload has a time limit, and MLflow's HTTP retries are bounded too unless the user
//! set them.

use std::path::Path;
use std::time::Duration;

use assay_pyenv::bounded::{run_bounded, TimedOut};
use assay_pyenv::child_env::{self, Inherit};
use serde_json::{json, Value};

use super::{wandb_names, TrackedRun, Uploaded};

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

/// Azure's service principal secrets, which MLflow's Azure artifact stores read: handed to the
/// MLflow uploader beside its own variables.
pub const AZURE_SECRETS: [&str; 2] = ["AZURE_CLIENT_SECRET", "ARM_CLIENT_SECRET"];

/// Whether an MLflow tracking URI names a database MLflow opens itself (SQLAlchemy's schemes).
fn is_database(uri: &str) -> bool {
    let scheme = uri.split(':').next().unwrap_or_default();
    let dialect = scheme.split('+').next().unwrap_or_default();
    ["sqlite", "postgresql", "mysql", "mssql"].contains(&dialect)
}

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
    /// The tracker's name, as users call it.
    pub fn name(&self) -> &'static str {
        match self {
            Tracker::Mlflow { .. } => "mlflow",
            Tracker::Wandb { .. } => "wandb",
        }
    }

    /// The profile whose environment the uploader runs in: MLflow's client (`mlflow-skinny`)
    /// for a server, the whole of MLflow for a store it opens itself (`sqlite:///mlflow.db`,
    /// another database), which needs SQLAlchemy and the store's code.
    pub fn profile(&self) -> &'static str {
        match self {
            Tracker::Mlflow { tracking_uri, .. } if is_database(tracking_uri) => "mlflow-server",
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

    /// Whether the variable `name` is the tracker's own: by prefix, and for MLflow Azure's
    /// secrets.
    fn admits(&self, name: &str) -> bool {
        let prefixes: &[&str] = match self {
            Tracker::Mlflow { .. } => {
                if AZURE_SECRETS.contains(&name) {
                    return true;
                }
                &["MLFLOW_", "DATABRICKS_"]
            }
            Tracker::Wandb { .. } => &["WANDB_"],
        };
        prefixes.iter().any(|p| name.starts_with(p))
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

/// What became of an upload: each run's outcome in the order given, and how the uploader
/// ended when it did not end well.
#[derive(Debug)]
pub struct Upload {
    /// Each run's: where it went, or why it was not logged.
    pub outcomes: Vec<Result<Uploaded, Unlogged>>,
    /// How the uploader ended, when it failed or was stopped at the time limit (then the runs
    /// it had not answered for are [`Unlogged::NotAnswered`]), with the end of what it said
    /// on standard error.
    pub failed: Option<String>,
}

/// Why a run was not logged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unlogged {
    /// The tracker (or its client) refused it, in its words.
    #[error("{tracker} refused it: {said}")]
    Refused {
        /// `mlflow` or `wandb`.
        tracker: &'static str,
        /// The client's error.
        said: String,
    },
    /// The uploader ended before it answered for the run.
    #[error("not answered: the {tracker} uploader {ended}")]
    NotAnswered {
        /// `mlflow` or `wandb`.
        tracker: &'static str,
        /// `timed out after N s (--timeout)`, or `exited with …`.
        ended: String,
    },
}

/// Logs `runs` with `python` (the tracker's environment's interpreter), within `timeout` in
/// all, handing it `secrets` (the tracker's tokens, which assay keeps out of its own
/// environment) beside the tracker's variables. The runs answered for before the uploader
/// ended (failing, or stopped at `timeout`) keep their outcomes; the others are said not
/// answered. `on_line` hears the uploader's output as it comes. An error only when the
/// uploader could not be started.
pub fn upload(
    python: &Path,
    tracker: &Tracker,
    runs: &[TrackedRun],
    timeout: Duration,
    secrets: &[(String, String)],
    on_line: &mut dyn FnMut(&str),
) -> std::io::Result<Upload> {
    let staging = tempfile::tempdir()?;
    let mut documents = Vec::new();
    // What each run's W&B names left out.
    let mut renamed = Vec::new();
    for (index, run) in runs.iter().enumerate() {
        let report = staging.path().join(index.to_string()).join("report.html");
        std::fs::create_dir_all(report.parent().unwrap_or(staging.path()))?;
        std::fs::write(&report, &run.report_html)?;
        let mut files: Vec<String> = run.files.iter().map(|f| f.display().to_string()).collect();
        files.push(report.display().to_string());
        let mut document = serde_json::to_value(run).map_err(std::io::Error::other)?;
        document["files"] = json!(files);
        if let Tracker::Wandb { .. } = tracker {
            let (metrics, left_out) = wandb_names::of(&run.metrics);
            document["metrics"] = json!(metrics);
            renamed.push(left_out);
        } else {
            renamed.push(Vec::new());
        }
        documents.push(document);
    }
    let document = staging.path().join("runs.json");
    let text = json!({"destination": tracker.destination(), "runs": documents});
    std::fs::write(&document, text.to_string())?;

    let mut command = child_env::command(python, Inherit::Tools);
    command.args(["-I", "-c", tracker.script()]).arg(&document);
    command.envs(
        std::env::vars_os().filter(|(name, _)| name.to_str().is_some_and(|n| tracker.admits(n))),
    );
    if let Tracker::Mlflow { .. } = tracker {
        for (name, value) in MLFLOW_DEFAULTS {
            if std::env::var_os(name).is_none() {
                command.env(name, value);
            }
        }
    }
    command.envs(
        secrets
            .iter()
            .filter(|(name, _)| tracker.admits(name))
            .map(|(name, value)| (name, value)),
    );
    let name = tracker.profile();
    let (stdout, stderr, ended) = match run_bounded(command, timeout, on_line) {
        Ok(finished) if finished.success => (finished.stdout, finished.stderr, None),
        Ok(finished) => {
            let ended = format!("exited with {}", finished.status);
            (finished.stdout, finished.stderr, Some(ended))
        }
        Err(error) => match TimedOut::of(&error) {
            Some(partial) => {
                let ended = format!("timed out after {} s (--timeout)", timeout.as_secs());
                (partial.stdout.clone(), partial.stderr.clone(), Some(ended))
            }
            None => return Err(error),
        },
    };
    let mut outcomes: Vec<Option<Result<Uploaded, Unlogged>>> = vec![None; runs.len()];
    for line in stdout.lines() {
        let Some(answer) = line.strip_prefix(ANSWER) else {
            continue;
        };
        let Ok(answer) = serde_json::from_str::<Value>(answer) else {
            continue;
        };
        let Some(index) = answer["index"].as_u64().map(|i| i as usize) else {
            continue;
        };
        let Some(slot) = outcomes.get_mut(index) else {
            continue;
        };
        let refused = |said: String| Unlogged::Refused {
            tracker: name,
            said,
        };
        *slot = Some(match answer["error"].as_str() {
            Some(error) => Err(refused(error.to_string())),
            None => serde_json::from_value(answer)
                .map(|mut uploaded: Uploaded| {
                    uploaded
                        .warnings
                        .splice(0..0, renamed[index].iter().cloned());
                    uploaded
                })
                .map_err(|e| refused(e.to_string())),
        });
    }
    let not_answered = Unlogged::NotAnswered {
        tracker: name,
        ended: ended.clone().unwrap_or_else(|| "ended".into()),
    };
    Ok(Upload {
        outcomes: outcomes
            .into_iter()
            .map(|outcome| outcome.unwrap_or_else(|| Err(not_answered.clone())))
            .collect(),
        failed: ended.map(|ended| {
            format!(
                "the {name} uploader {ended}; the end of what it said:\n{}",
                tail(&stderr, 20)
            )
        }),
    })
}

/// The last `lines` lines of `text`.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn a_database_store_gets_the_whole_of_mlflow_and_a_server_its_client() {
        let mlflow = |uri: &str| Tracker::Mlflow {
            tracking_uri: uri.into(),
            experiment: "e".into(),
        };
        for uri in [
            "sqlite:///mlflow.db",
            "postgresql+psycopg2://h/db",
            "mysql://h/db",
        ] {
            assert_eq!(mlflow(uri).profile(), "mlflow-server", "{uri}");
        }
        for uri in [
            "http://127.0.0.1:5000",
            "https://x",
            "databricks",
            "file:./mlruns",
        ] {
            assert_eq!(mlflow(uri).profile(), "mlflow", "{uri}");
        }
    }

    fn run(key: &str) -> TrackedRun {
        TrackedRun {
            dir: PathBuf::from(key),
            key: key.into(),
            name: key.into(),
            started_ms: 0,
            finished_ms: None,
            measured_ms: 0,
            params: BTreeMap::new(),
            tags: BTreeMap::new(),
            metrics: BTreeMap::new(),
            files: Vec::new(),
            report_html: String::new(),
            warnings: Vec::new(),
        }
    }

    /// An uploader standing in for the tracker's interpreter: a shell script that answers for
    /// the first run, then does what `then` says.
    fn uploader(dir: &Path, then: &str) -> PathBuf {
        let path = dir.join("python");
        let answer = r#"{"index": 0, "run_id": "r0", "created": true, "location": "here"}"#;
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\necho '{ANSWER}{answer}'\necho 'said before it ended' >&2\n{then}\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn upload_two(python: &Path, timeout: Duration) -> Upload {
        let tracker = Tracker::Wandb {
            project: "p".into(),
            entity: None,
        };
        upload(
            python,
            &tracker,
            &[run("a"), run("b")],
            timeout,
            &[],
            &mut |_| {},
        )
        .unwrap()
    }

    #[test]
    fn an_uploader_stopped_at_its_time_limit_keeps_the_runs_it_answered_for() {
        let dir = tempfile::tempdir().unwrap();
        let done = upload_two(
            &uploader(dir.path(), "exec sleep 60"),
            Duration::from_secs(2),
        );
        assert_eq!(done.outcomes[0].as_ref().unwrap().run_id, "r0");
        assert_eq!(
            done.outcomes[1].as_ref().unwrap_err().to_string(),
            "not answered: the wandb uploader timed out after 2 s (--timeout)"
        );
        let failed = done.failed.unwrap();
        assert!(failed.contains("said before it ended"), "{failed}");
    }

    #[test]
    fn an_uploader_that_crashes_keeps_the_runs_it_answered_for() {
        let dir = tempfile::tempdir().unwrap();
        let done = upload_two(&uploader(dir.path(), "exit 3"), Duration::from_secs(60));
        assert_eq!(done.outcomes[0].as_ref().unwrap().run_id, "r0");
        assert_eq!(
            done.outcomes[1].as_ref().unwrap_err().to_string(),
            "not answered: the wandb uploader exited with exit status: 3"
        );
        assert!(done.failed.is_some());
    }
}
