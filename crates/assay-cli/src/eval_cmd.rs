//! `assay eval bigcodebench[-hard]`: evaluate a samples file, resumably, into a run directory
//! with the official result files.

use std::path::PathBuf;

use anyhow::{Context, Result};
use assay_pipeline::eval::{eval, EvalRequest};
use clap::Args;

use crate::args::{DatasetArgs, JudgingArgs, RunDirArgs, ShardArgs, SplitArg};
use crate::print;
use crate::progress::Progress;

/// The other benchmark, with its own options.
#[derive(clap::Subcommand)]
pub enum PybenchEval {
    /// Judge recorded PyBench trajectories, and their output files, by the unit checks.
    ///
    /// The same command resumes the run. See https://assay-eval.github.io/assay/pybench/.
    Pybench(crate::pybench_cmd::EvalArgs),
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct EvalArgs {
    #[command(subcommand)]
    pub pybench: Option<PybenchEval>,
    #[command(flatten)]
    pub tasks: DatasetArgs,
    /// The samples, in the official format: JSON lines with `task_id` and `solution` (or
    /// `completion`), any number per task.
    // An Option only so that `assay eval pybench` goes without it.
    #[arg(long, value_name = "FILE", required = true)]
    pub samples: Option<PathBuf>,
    /// The prompt style the samples answer (default: from the file name, else complete).
    #[arg(long, value_enum)]
    pub split: Option<SplitArg>,
    #[command(flatten)]
    pub judging: JudgingArgs,
    #[command(flatten)]
    pub run_dir: RunDirArgs,
    #[command(flatten)]
    pub shard: ShardArgs,
}

pub async fn run(args: EvalArgs) -> Result<i32> {
    let Some(samples) = args.samples else {
        anyhow::bail!("--samples is required");
    };
    // Mistyped paths are said before the environment is set up (minutes, the first time).
    std::fs::metadata(&samples).with_context(|| format!("--samples {}", samples.display()))?;
    if let Some(out) = &args.run_dir.out {
        assay_rundir::check_place(out)?;
    }
    let tasks = args.tasks.selection(args.shard.resolve()?);
    let judge = args.judging.settings();
    judge.validate()?;
    let request = EvalRequest {
        tasks: tasks.clone(),
        samples,
        split: args.split.map(SplitArg::split),
        out: args.run_dir.out,
        judge,
        env: args.judging.engine.environment().await?,
    };
    let mut progress = Progress::new(args.run_dir.json);
    let report = eval(request, &mut progress).await;
    drop(progress);
    let report = report?;
    if args.run_dir.json {
        println!("{}", serde_json::to_string_pretty(&report.summary)?);
    } else {
        print::evaluation(
            tasks.benchmark(),
            report.split,
            &tasks.source(),
            &report.summary,
            &report.dir,
        );
    }
    Ok(0)
}
