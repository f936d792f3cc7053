//! `assay export`: a run directory in another tool's format, written where that tool looks.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use assay_export::inspect::{self, log::EvalStatus};
use clap::{Args, ValueEnum};

/// Inspect's default log directory, where `inspect view` looks when given none.
const INSPECT_LOG_DIR: &str = "logs";

#[derive(Args)]
pub struct ExportArgs {
    /// The run directory: of `assay eval` or `assay run` (BigCodeBench), or of `assay run
    /// pybench` or `assay eval pybench`.
    pub run: PathBuf,
    /// What to write.
    #[arg(long, value_enum)]
    pub format: Format,
    /// Where: a file, a folder (the log gets the name Inspect would give it there: a
    /// `<time>_<task>_<id>.json` that `inspect view --log-dir FOLDER` lists), or `-` for
    /// standard output. Default: ./logs/, Inspect's own default, which `inspect view` opens.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// An export format.
#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    /// An Inspect AI eval log (JSON), for `inspect view` and `inspect_ai.log.read_eval_log`.
    Inspect,
}

pub fn run(args: ExportArgs) -> Result<i32> {
    let Format::Inspect = args.format;
    let export = inspect::export(&args.run)?;
    for warning in &export.warnings {
        eprintln!("assay: warning: {warning}");
    }
    let text = serde_json::to_string_pretty(&export.log)?;
    let path = match args.out {
        Some(out) if out == Path::new("-") => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
            stdout.write_all(b"\n")?;
            return Ok(0);
        }
        Some(file) if !is_folder(&file) => file,
        folder => {
            let folder = folder.unwrap_or_else(|| PathBuf::from(INSPECT_LOG_DIR));
            std::fs::create_dir_all(&folder)
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
    Ok(0)
}

/// Whether `--out` names a folder: one that exists, or a path written with a trailing `/`.
fn is_folder(out: &Path) -> bool {
    out.is_dir() || out.as_os_str().to_string_lossy().ends_with('/')
}
