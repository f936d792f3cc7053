//! `assay check bigcodebench[-hard]`: run the canonical solutions, as the official
//! `--check_gt_only` does, and say which tasks this environment cannot pass and why.

use std::path::PathBuf;

use anyhow::Result;
use assay_pipeline::check::{check, CheckRequest};
use clap::Args;

use crate::args::{heading, DatasetArgs, EngineArgs, SemanticsArgs};
use crate::print;
use crate::progress::Progress;

#[derive(Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub tasks: DatasetArgs,
    #[command(flatten, next_help_heading = heading::EVALUATION)]
    pub semantics: SemanticsArgs,
    /// Also write pass_at_k.json (the official `gt_pass_rate` and `failed_tasks`) and
    /// summary.json into this directory.
    #[arg(long, value_name = "DIR", help_heading = heading::OUTPUT)]
    pub out: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long, help_heading = heading::OUTPUT)]
    pub json: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
}

pub async fn run(args: CheckArgs) -> Result<i32> {
    let request = CheckRequest {
        tasks: args.tasks.selection(None),
        out: args.out,
        guards: args.semantics.guards(),
        engine: args.engine.settings(),
        env: args.engine.environment().await?,
    };
    let mut progress = Progress::new(args.json);
    let summary = check(request, &mut progress).await;
    drop(progress);
    let summary = summary?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print::check(&summary.benchmark, summary.tasks, &summary.ground_truth);
    }
    Ok(0)
}
