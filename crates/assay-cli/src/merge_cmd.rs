//! `assay merge`: shards run apart joined into one run directory.

use std::path::PathBuf;

use anyhow::Result;
use assay_pipeline::merge::{merge, MergeRequest};
use clap::Args;

use crate::print;

#[derive(Args)]
pub struct MergeArgs {
    /// The shards' run directories (`--shard I/N` runs of one BigCodeBench eval or run).
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
    /// The merged run directory (new).
    #[arg(long)]
    pub out: PathBuf,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: MergeArgs) -> Result<i32> {
    let report = merge(MergeRequest {
        shards: args.shards,
        out: args.out,
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.summary)?);
    } else {
        eprintln!("assay: merged {} shards", report.shards);
        print::evaluation(
            &report.benchmark,
            report.split,
            &report.version,
            &report.summary,
            &report.dir,
        );
    }
    Ok(0)
}
