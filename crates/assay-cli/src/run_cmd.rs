//! `assay run bigcodebench[-hard]`: generate and evaluate at once (each answer judged as soon as
//! it arrives), into one run directory. Without
//! `--model` the canonical solutions answer: the whole pipeline checked, offline.

use anyhow::Result;
use assay_pipeline::run::{run as run_pipeline, RunRequest};
use clap::Args;
use serde_json::json;

use crate::args::{DatasetArgs, JudgingArgs, ModelArgs, RunDirArgs, ShardArgs};
use crate::print;
use crate::progress::Progress;
use crate::secrets;

/// The other benchmark, with its own options.
#[derive(clap::Subcommand)]
pub enum PybenchRun {
    /// PyBench: an agent drives a persistent interpreter over input files, for up to ten
    /// turns; unit checks judge what it produced.
    Pybench(Box<crate::pybench_cmd::RunArgs>),
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct RunArgs {
    #[command(subcommand)]
    pub pybench: Option<PybenchRun>,
    #[command(flatten)]
    pub tasks: DatasetArgs,
    #[command(flatten)]
    pub shard: ShardArgs,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub run_dir: RunDirArgs,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub judging: JudgingArgs,
}

pub async fn run(args: RunArgs) -> Result<i32> {
    let chosen = args.model.settings().choose(true, secrets::key)?;
    let tasks = args.tasks.selection(args.shard.resolve()?);
    if args.model.model.is_none() && !args.json {
        let benchmark = tasks.benchmark();
        eprintln!(
            "assay: no --model: the reference solutions answer (a self-check of the pipeline). \
             To evaluate a model: assay run {benchmark} --model openai:MODEL [--base-url URL] \
             or --model anthropic:MODEL"
        );
    }
    let judge = args.judging.settings();
    judge.validate()?;
    let request = RunRequest {
        tasks: tasks.clone(),
        chosen,
        out: args.run_dir.out,
        judge,
        env: args.judging.engine.environment().await?,
    };
    let mut progress = Progress::new(args.json);
    let report = run_pipeline(request, &mut progress).await;
    drop(progress);
    let report = report?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &json!({"generation": report.generation, "evaluation": report.evaluation})
            )?
        );
    } else {
        print::evaluation(
            tasks.benchmark(),
            report.split,
            &tasks.source(),
            &report.evaluation,
            &report.dir,
        );
    }
    Ok(i32::from(!report.generation.unanswered.is_empty()))
}
