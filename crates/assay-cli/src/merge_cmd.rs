//! `assay merge`: shards run apart joined into one run directory.

use std::path::PathBuf;

use anyhow::Result;
use assay_pipeline::merge::{merge, Figures, MergeRequest};
use clap::Args;

use crate::print;

#[derive(Args)]
pub struct MergeArgs {
    /// The shards' run directories: the `--shard I/N` runs of one command (generate, eval or
    /// run; BigCodeBench or PyBench).
    #[arg(required = true, value_name = "SHARD")]
    pub shards: Vec<PathBuf>,
    /// The merged run directory, a new one.
    #[arg(long, value_name = "DIR")]
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
    for dir in &report.same_as_taken {
        eprintln!(
            "assay: {} repeats a shard already taken, with the same verdicts: left out",
            dir.display()
        );
    }
    match &report.figures {
        Figures::Bigcodebench {
            summary,
            benchmark,
            version,
            split,
        } => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(summary)?);
            } else {
                eprintln!("assay: merged {} shards", report.shards);
                print::evaluation(benchmark, *split, version, summary, &report.dir);
            }
        }
        Figures::Generation { samples } => {
            if args.json {
                println!("{}", serde_json::json!({ "samples": samples }));
            } else {
                eprintln!("assay: merged {} shards", report.shards);
                println!(
                    "{samples} answers in {}",
                    report.dir.join("samples.jsonl").display()
                );
            }
        }
        Figures::Pybench(summary) => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(summary)?);
            } else {
                eprintln!("assay: merged {} shards", report.shards);
                print::pybench(summary, &report.dir);
            }
        }
    }
    Ok(0)
}
