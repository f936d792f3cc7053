//! `assay eval bigcodebench[-hard]`: evaluate a samples file, resumably, into a run directory
//! with the official result files.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use assay_eval::bigcodebench::run::{
    model_name, now, Evaluation, Options, Summary, TimePolicy, STACK_BYTES,
};
use assay_eval::bigcodebench::samples;
use assay_report::RunDir;
use assay_sandbox::Limits;
use assay_tasks::bigcodebench::Split;
use clap::{Args, ValueEnum};
use serde_json::json;

use crate::bigcodebench_args::{prepare, Bar, DatasetArgs, SemanticsArgs};
use crate::sandbox_cmd::{start_engine_in, EngineArgs};

#[derive(Clone, Copy, ValueEnum)]
pub enum SplitArg {
    Complete,
    Instruct,
}

#[derive(Args)]
pub struct EvalArgs {
    #[command(flatten)]
    pub tasks: DatasetArgs,
    /// Samples in the official format: JSON lines with `task_id` and `solution` (or
    /// `completion`), any number per task.
    #[arg(long)]
    pub samples: PathBuf,
    /// The prompt style the samples answer (default: from the file name, else complete).
    #[arg(long, value_enum)]
    pub split: Option<SplitArg>,
    /// The run directory (default: runs/<benchmark>-<version>-<split>-<model>). Rerunning the
    /// same command resumes it.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run solutions as given, without the official calibration prefix.
    #[arg(long)]
    pub no_calibrate: bool,
    /// One time limit for every sample, in seconds (`--timeout 240` is the official policy).
    /// Default: a budget per task from its reference solution's time here (docs/parity.md).
    #[arg(long)]
    pub timeout: Option<f64>,
    /// Memory limit per sample, in MiB.
    #[arg(long, default_value_t = 8192)]
    pub memory: u64,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub semantics: SemanticsArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

fn split_of(args: &EvalArgs) -> Split {
    match args.split {
        Some(SplitArg::Complete) => Split::Complete,
        Some(SplitArg::Instruct) => Split::Instruct,
        None => {
            let name = args
                .samples
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
            if name.is_some_and(|n| n.contains("-instruct")) {
                Split::Instruct
            } else {
                Split::Complete
            }
        }
    }
}

pub async fn run(args: EvalArgs) -> Result<i32> {
    let time = match args.timeout {
        None => TimePolicy::DEFAULT,
        Some(seconds) if seconds.is_finite() && seconds > 0.0 => TimePolicy::Fixed { seconds },
        Some(_) => bail!("--timeout must be a positive number of seconds"),
    };
    if args.memory < 64 {
        bail!("--memory must be at least 64 MiB");
    }
    let split = split_of(&args);
    let dataset = args.tasks.load()?;
    let benchmark = args.tasks.benchmark.name();
    let samples = samples::load(&args.samples, &dataset)?;
    if samples.skipped > 0 {
        eprintln!(
            "assay: {} samples are for tasks outside {benchmark}: skipped",
            samples.skipped,
        );
    }
    let version = args.tasks.source();
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("runs").join(format!(
            "{benchmark}-{}-{}-{}",
            args.tasks
                .dataset
                .as_ref()
                .map_or(args.tasks.version.as_str(), |_| "custom"),
            split.as_str(),
            model_name(&args.samples)
        ))
    });
    let options = Options {
        split,
        calibrated: !args.no_calibrate,
        limits: Limits {
            memory_bytes: args.memory << 20,
            stack_bytes: Some(STACK_BYTES),
            ..Limits::default()
        },
        time,
        network: args.engine.allow_network,
        guards: args.semantics.guards(),
    };
    let (engine, env) = start_engine_in(&args.engine).await?;
    let identity = json!({
        "benchmark": benchmark,
        "dataset": version,
        "dataset_digest": dataset.digest,
        "tasks": args.tasks.tasks,
        "samples_digest": samples.digest,
        "split": split.as_str(),
        "calibrated": options.calibrated,
        "time_policy": options.time,
        "memory_mib": args.memory,
        "network": options.network,
        "guards": options.guards,
        "environment": env.key(),
    });
    let manifest = json!({
        "assay_version": env!("CARGO_PKG_VERSION"),
        "kind": "bigcodebench-eval",
        "identity": identity,
        "samples": std::fs::canonicalize(&args.samples).unwrap_or(args.samples.clone()),
        "started_at": now(),
        "python": engine.python_version(),
        "isolation": engine.isolation(),
    });
    let opened = RunDir::open(&out, &manifest)?;
    let mut run = opened.dir;
    if opened.resumed {
        eprintln!(
            "assay: resuming {} ({} samples already evaluated)",
            out.display(),
            opened.records.len()
        );
    }
    let originals: Vec<serde_json::Value> = samples
        .samples
        .iter()
        .map(|s| serde_json::Value::Object(s.fields.clone()))
        .collect();
    run.write_lines("samples.jsonl", &originals)?;
    let (environment, mut references) =
        prepare(&engine, &env, &dataset, options.network, options.guards).await?;
    let evaluation = Evaluation {
        engine: &engine,
        dataset: &dataset,
        samples: &samples,
        options: &options,
        environment: &environment,
    };
    let mut progress = Bar::new(args.json);
    let summary = evaluation
        .run(&mut run, opened.records, &mut references, &mut progress)
        .await
        .map_err(anyhow::Error::msg)?;
    drop(progress);
    run.write_json("summary.json", &summary)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print_summary(benchmark, split, &version, &summary, run.path());
    }
    Ok(0)
}

fn print_summary(benchmark: &str, split: Split, version: &str, summary: &Summary, dir: &Path) {
    println!(
        "{benchmark} ({}, {version}): {} samples, {} of {} tasks scored",
        split.as_str(),
        summary.samples,
        summary.tasks_scored,
        summary.tasks_in_dataset
    );
    for (k, v) in &summary.pass_at_k {
        println!("  {k}: {v:.4}");
    }
    let counts = |m: &std::collections::BTreeMap<String, usize>| {
        m.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("  assay statuses: {}", counts(&summary.statuses));
    println!("  official statuses: {}", counts(&summary.official));
    let truth = &summary.ground_truth;
    println!(
        "  ground truth here: {:.4}{}",
        truth.pass_rate,
        match truth.failed_tasks.len() {
            0 => String::new(),
            n => format!(" ({n} reference solutions fail here; `assay check` lists them)"),
        }
    );
    if !summary.tasks_missing.is_empty() {
        println!(
            "  warning: {} tasks have no samples; pass@k covers {} of {} tasks",
            summary.tasks_missing.len(),
            summary.tasks_scored,
            summary.tasks_in_dataset
        );
    }
    if !summary.infra.is_empty() {
        println!(
            "  infra (not counted; the environment decided): {}",
            summary.infra.len()
        );
        for (task, reason) in &summary.infra {
            println!("    {task}: {reason}");
        }
    }
    let slow: Vec<String> = summary
        .slowest
        .iter()
        .take(5)
        .map(|(task, secs, status)| format!("{task} {secs:.1} s ({status})"))
        .collect();
    println!("  slowest: {}", slow.join(", "));
    println!(
        "  {:.0} s; results in {}",
        summary.wall_seconds,
        dir.display()
    );
}
