//! `assay export`: run directories in another tool's format, written where that tool looks:
//! Inspect AI eval logs, or runs of the experiment trackers teams keep results in (MLflow,
//! Weights & Biases).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use assay_export::inspect::{self, log::EvalStatus};
use assay_export::tracker::upload::{upload, Tracker};
use assay_export::tracker::{document, TrackedRun};
use clap::{Args, ValueEnum};

use assay_pyenv::SetupObserver;
use assay_report::count;

use crate::args::{ready, Select};
use crate::print;
use crate::progress::Spinner;
use crate::secrets;

/// Inspect's default log directory, where `inspect view` looks when given none.
const INSPECT_LOG_DIR: &str = "logs";

/// `--help`'s headings: one per destination.
const INSPECT: &str = "Inspect AI";
const MLFLOW: &str = "MLflow";
const WANDB: &str = "Weights & Biases";
const TRACKERS: &str = "MLflow and Weights & Biases";

#[derive(Args)]
pub struct ExportArgs {
    /// Run directories: of `assay run` or `assay eval` (BigCodeBench), or of `assay run
    /// pybench` or `assay eval pybench`.
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<PathBuf>,
    /// Where to: an Inspect AI log, or an MLflow or Weights & Biases run per assay run.
    #[arg(long, visible_alias = "format", value_enum, value_name = "DEST")]
    pub to: Destination,
    /// Where the log goes: a file, a folder, or `-` for standard output (default: ./logs/,
    /// where `inspect view` looks).
    ///
    /// In a folder the log gets the name Inspect would give it, `<time>_<task>_<id>.json`,
    /// which `inspect view --log-dir FOLDER` lists.
    #[arg(long, value_name = "PATH", help_heading = INSPECT)]
    pub out: Option<PathBuf>,
    /// The tracking server (`http://host:5000`, `databricks`) or a local store
    /// (`sqlite:///mlflow.db`).
    #[arg(long, value_name = "URI", env = "MLFLOW_TRACKING_URI", help_heading = MLFLOW)]
    pub tracking_uri: Option<String>,
    /// The experiment the runs go in (created if it does not exist).
    #[arg(long, value_name = "NAME", env = "MLFLOW_EXPERIMENT_NAME", default_value = "assay",
          help_heading = MLFLOW)]
    pub experiment: String,
    /// The project. Set WANDB_MODE=offline to export without an account, and `wandb sync`
    /// later.
    #[arg(long, value_name = "NAME", env = "WANDB_PROJECT", default_value = "assay",
          help_heading = WANDB)]
    pub project: String,
    /// The team or user (default: the account's own).
    #[arg(long, value_name = "NAME", env = "WANDB_ENTITY", help_heading = WANDB)]
    pub entity: Option<String>,
    /// The most seconds the upload may take, all runs together.
    #[arg(long, value_name = "SECS", default_value_t = 600,
          value_parser = clap::value_parser!(u64).range(1..), help_heading = TRACKERS)]
    pub timeout: u64,
    /// The CPython 3.11 to build the tracker client's environment from (default: python3.11
    /// or python3 on PATH).
    #[arg(long, value_name = "PATH", env = "ASSAY_PYTHON", help_heading = TRACKERS)]
    pub python: Option<PathBuf>,
}

/// Where an export goes.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Destination {
    /// An Inspect AI eval log (JSON), for `inspect view` and `inspect_ai.log.read_eval_log`.
    Inspect,
    /// An MLflow run per assay run, in an experiment of a tracking server.
    Mlflow,
    /// A Weights & Biases run per assay run, online or offline.
    Wandb,
}

pub fn run(args: ExportArgs) -> Result<i32> {
    let tracker = match args.to {
        Destination::Inspect => return to_inspect(&args),
        Destination::Mlflow => Tracker::Mlflow {
            tracking_uri: args.tracking_uri.clone().context(
                "no MLflow tracking server: give --tracking-uri URI or set MLFLOW_TRACKING_URI \
                 (a server, `http://host:5000`, or a local store, `sqlite:///mlflow.db`)",
            )?,
            experiment: args.experiment.clone(),
        },
        Destination::Wandb => Tracker::Wandb {
            project: args.project.clone(),
            entity: args.entity.clone(),
        },
    };
    if args.out.is_some() {
        bail!("--out is where an Inspect log goes; a tracker's runs go to the tracker");
    }
    to_tracker(&args, &tracker)
}

/// Each run as an Inspect log. A run that cannot be exported is said and the others still are;
/// the exit code is 1 then.
fn to_inspect(args: &ExportArgs) -> Result<i32> {
    let single = matches!(&args.out, Some(out) if !is_folder(out));
    if single && args.runs.len() > 1 {
        bail!(
            "--out names one file (or `-`) and {} runs were given: give a folder (`--out \
             FOLDER/`) for several",
            args.runs.len()
        );
    }
    let mut failed = 0;
    for dir in &args.runs {
        if let Err(e) = inspect_log(dir, args.out.as_deref()) {
            // The run is named once: most errors name its directory (or a file in it).
            let message = print::error(&e);
            let dir = dir.display().to_string();
            if message.contains(&dir) {
                eprintln!("assay: {message}");
            } else {
                eprintln!("assay: {dir}: {message}");
            }
            failed += 1;
        }
    }
    Ok(i32::from(failed > 0))
}

fn inspect_log(dir: &Path, out: Option<&Path>) -> Result<()> {
    let export = inspect::export(dir)?;
    for warning in &export.warnings {
        eprintln!("assay: warning: {warning}");
    }
    let text = serde_json::to_string_pretty(&export.log)?;
    let path = match out {
        Some(out) if out == Path::new("-") => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
            stdout.write_all(b"\n")?;
            return Ok(());
        }
        Some(file) if !is_folder(file) => file.to_path_buf(),
        folder => {
            let folder = folder.unwrap_or(Path::new(INSPECT_LOG_DIR));
            std::fs::create_dir_all(folder)
                .with_context(|| format!("creating {}", folder.display()))?;
            folder.join(&export.file_name)
        }
    };
    // Whole or not at all: a viewer watching the folder never reads a half-written log.
    assay_rundir::write_atomically(&path, text.as_bytes())?;
    let log = &export.log;
    let headline = log
        .results
        .scores
        .first()
        .and_then(|s| s.metrics.get("accuracy"))
        .map_or("no sample judged".to_string(), |a| {
            format!("accuracy {:.4}", a.value)
        });
    let unfinished = match log.status {
        EvalStatus::Success => "",
        EvalStatus::Started => "; the run has not finished (status `started`)",
    };
    eprintln!(
        "assay: wrote {} ({} samples, {} judged, {headline}{unfinished})",
        path.display(),
        log.results.total_samples,
        log.results.completed_samples
    );
    Ok(())
}

/// Each run as a tracker run, logged by the tracker's client in its environment (set up first
/// when it is not yet). A run that cannot be read or logged is said and the others still go;
/// the exit code is 1 then.
fn to_tracker(args: &ExportArgs, tracker: &Tracker) -> Result<i32> {
    let mut failed = 0;
    let mut runs: Vec<TrackedRun> = Vec::new();
    for dir in &args.runs {
        match document(dir) {
            Ok(run) => {
                for warning in &run.warnings {
                    eprintln!("assay: warning: {}: {warning}", dir.display());
                }
                runs.push(run)
            }
            Err(e) => {
                eprintln!("assay: {}: {e}", dir.display());
                failed += 1;
            }
        }
    }
    if runs.is_empty() {
        return Ok(1);
    }
    let select = Select {
        profile: tracker.profile().to_string(),
        python: args.python.clone(),
    };
    let env = ready(select.locate()?)?;
    let timeout = Duration::from_secs(args.timeout);
    let upload = {
        // The client's latest line beside the spinner while it logs.
        let spinner = Spinner::new();
        spinner.step(&format!(
            "logging {} to {} (at most {} s)",
            count(runs.len(), "run", "runs"),
            tracker.name(),
            args.timeout
        ));
        let secrets = secrets::tracker_secrets();
        upload(
            &env.python(),
            tracker,
            &runs,
            timeout,
            &secrets,
            &mut |line| spinner.output(line),
        )?
    };
    if let Some(ended) = &upload.failed {
        eprintln!("assay: {ended}");
        failed += 1;
    }
    for (run, outcome) in runs.iter().zip(upload.outcomes) {
        match outcome {
            Ok(uploaded) => {
                for warning in &uploaded.warnings {
                    eprintln!("assay: warning: {}: {warning}", run.dir.display());
                }
                let how = match uploaded.created {
                    Some(true) => "new",
                    Some(false) => "updated",
                    None => "offline",
                };
                eprintln!(
                    "assay: {} -> {} run {} \"{}\" ({how}, {} metrics): {}",
                    run.dir.display(),
                    tracker.name(),
                    uploaded.run_id,
                    run.name,
                    run.metrics.len(),
                    uploaded.location
                );
            }
            Err(e) => {
                eprintln!("assay: {}: {e}", run.dir.display());
                failed += 1;
            }
        }
    }
    Ok(i32::from(failed > 0))
}

/// Whether `--out` names a folder: one that exists, or a path written with a trailing `/`.
fn is_folder(out: &Path) -> bool {
    out.is_dir() || out.as_os_str().to_string_lossy().ends_with('/')
}
