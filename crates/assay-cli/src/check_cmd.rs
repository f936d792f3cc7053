//! `assay check bigcodebench[-hard]`: run the canonical solutions, as the official
//! `--check_gt_only` does, and say which tasks this environment cannot pass and why.

use std::path::{Path, PathBuf};

use anyhow::Result;
use assay_eval::bigcodebench::ground_truth::GroundTruthSummary;
use assay_eval::bigcodebench::run::check;
use assay_report::RunDir;
use clap::Args;
use serde_json::json;

use crate::bigcodebench_args::{prepare, Bar, DatasetArgs, SemanticsArgs};
use crate::sandbox_cmd::{start_engine_in, EngineArgs};

#[derive(Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub tasks: DatasetArgs,
    /// Also write `pass_at_k.json` (official `gt_pass_rate` and `failed_tasks`) and
    /// `summary.json` into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub semantics: SemanticsArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

pub async fn run(args: CheckArgs) -> Result<i32> {
    let dataset = args.tasks.load()?;
    let harness: Vec<&Path> = args.out.iter().map(PathBuf::as_path).collect();
    let (engine, env) = start_engine_in(&args.engine, &harness).await?;
    let guards = args.semantics.guards();
    let (environment, mut references) =
        prepare(&engine, &env, &dataset, args.engine.allow_network, guards).await?;
    let mut progress = Bar::new(args.json);
    let started = std::time::Instant::now();
    let summary = check(
        &engine,
        &dataset,
        &environment,
        &mut references,
        &mut progress,
    )
    .await
    .map_err(anyhow::Error::msg)?;
    drop(progress);
    let benchmark = args.tasks.benchmark.name();
    let doc = json!({
        "benchmark": benchmark,
        "dataset": args.tasks.source(),
        "environment": env.key(),
        "isolation": engine.isolation(),
        "tasks": dataset.tasks.len(),
        "ground_truth": summary,
        "wall_seconds": started.elapsed().as_secs_f64(),
    });
    if let Some(out) = &args.out {
        let manifest = json!({
            "assay_version": env!("CARGO_PKG_VERSION"),
            "kind": "bigcodebench-check",
            "identity": {
                "benchmark": benchmark,
                "dataset_digest": dataset.digest,
                "tasks": args.tasks.tasks,
                "environment": env.key(),
                "network": args.engine.allow_network,
                "guards": guards,
            },
            "started_at": assay_eval::bigcodebench::run::now(),
        });
        let dir = RunDir::open(out, &manifest)?.dir;
        dir.write_json(
            "pass_at_k.json",
            &json!({
                "subset": dataset.subset.as_str(),
                "gt_pass_rate": summary.pass_rate,
                "failed_tasks": summary.failed_ids(),
            }),
        )?;
        dir.write_json("summary.json", &doc)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_summary(benchmark, dataset.tasks.len(), &summary);
    }
    Ok(0)
}

fn print_summary(benchmark: &str, tasks: usize, summary: &GroundTruthSummary) {
    println!(
        "{benchmark}: the reference solutions of {:.4} of {tasks} tasks pass here",
        summary.pass_rate
    );
    if !summary.failed_tasks.is_empty() {
        println!("  failing ({}):", summary.failed_tasks.len());
        for task in summary.failed_ids() {
            println!("    {task}: {}", first_line(&summary.failed_tasks[task]));
        }
    }
    let peaks = &summary.processes;
    if let Some((task, peak)) = peaks.highest.first() {
        println!(
            "  processes and threads at once: at most {peak} ({task}), over {} references \
             measured",
            peaks.measured
        );
    }
    println!("  reference results: {}", summary.cache.display());
}

/// A reason's first line, shortened: tracebacks belong in the files.
fn first_line(reason: &str) -> String {
    let line = reason.lines().next().unwrap_or_default();
    match line.char_indices().nth(160) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}
