//! `assay generate bigcodebench[-hard]`: ask a model for answers (official prompts and
//! sanitizer) into a run directory's `samples.jsonl`, resumably.

use std::path::PathBuf;

use anyhow::Result;
use assay_pipeline::generate::{generate_only, GenerateRequest};
use clap::Args;
use serde_json::json;

use crate::args::{DatasetArgs, ModelArgs, RunDirArgs, ShardArgs};
use crate::progress::Progress;
use crate::secrets;

#[derive(Args)]
pub struct GenerateArgs {
    #[command(flatten)]
    pub tasks: DatasetArgs,
    /// The CPython 3.11 that checks the answers' syntax while they are sanitized (default:
    /// python3.11 or python3 on PATH).
    #[arg(long, value_name = "PATH", env = "ASSAY_PYTHON")]
    pub python: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub run_dir: RunDirArgs,
    #[command(flatten)]
    pub shard: ShardArgs,
}

pub async fn run(args: GenerateArgs) -> Result<i32> {
    let request = GenerateRequest {
        tasks: args.tasks.selection(args.shard.resolve()?),
        chosen: args.model.settings().choose(false, secrets::key)?,
        out: args.run_dir.out,
        python: assay_pyenv::Interpreter::discover(args.python.as_deref())?.executable,
    };
    let mut progress = Progress::new(args.run_dir.json);
    let report = generate_only(request, &mut progress).await;
    drop(progress);
    let report = report?;
    let samples = report.dir.join(assay_rundir::SAMPLES);
    if args.run_dir.json {
        let mut doc = json!(report.outcome);
        doc["dir"] = json!(report.dir);
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!("samples: {}", samples.display());
        if report.outcome.samples > 0 {
            println!(
                "evaluate them: the same command with `run` instead of `generate` continues \
                 this directory (or the official harness: bigcodebench.evaluate --samples {})",
                samples.display(),
            );
        }
    }
    Ok(i32::from(!report.outcome.unanswered.is_empty()))
}
