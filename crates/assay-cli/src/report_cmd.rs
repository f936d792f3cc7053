//! `assay report`: runs side by side, with intervals, and each against a baseline.

use std::path::PathBuf;

use anyhow::{Context, Result};
use assay_report::{html, render, report, Run};
use clap::Args;

#[derive(Args)]
pub struct ReportArgs {
    /// Run directories (BigCodeBench or PyBench) or official `*_eval_results.json` files.
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<PathBuf>,
    /// The run the others are compared with (default: the first); added to the runs if it
    /// is not among them.
    #[arg(long, value_name = "RUN")]
    pub baseline: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the report as one self-contained HTML file (charts inline, nothing
    /// fetched).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

pub fn run(args: ReportArgs) -> Result<i32> {
    let mut paths = args.runs;
    let baseline = match args.baseline {
        Some(base) => match paths.iter().position(|p| same(p, &base)) {
            Some(i) => i,
            None => {
                paths.insert(0, base);
                0
            }
        },
        None => 0,
    };
    let runs = paths
        .iter()
        .map(|p| Run::load(p))
        .collect::<Result<Vec<_>, _>>()?;
    let report = report(&runs, baseline);
    if let Some(path) = &args.html {
        std::fs::write(path, html(&report, &runs))
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("assay: wrote {}", path.display());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    Ok(0)
}

/// Whether two paths name the same run.
fn same(a: &PathBuf, b: &PathBuf) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
