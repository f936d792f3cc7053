//! `assay eval bigcodebench[-hard]`: evaluate a samples file, resumably, into a run directory
//! with the official result files.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use assay_eval::bigcodebench::run::{
    missing_modules, model_name, now, Evaluation, Options, Progress, SampleResult, Summary,
};
use assay_eval::bigcodebench::samples;
use assay_eval::bigcodebench::verdict::Environment;
use assay_report::RunDir;
use assay_sandbox::{Limits, Status};
use assay_tasks::bigcodebench::{Dataset, Split, Subset, VERSIONS};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use crate::sandbox_cmd::{start_engine_in, EngineArgs};

#[derive(Clone, Copy, ValueEnum)]
pub enum Benchmark {
    /// All 1,140 tasks.
    Bigcodebench,
    /// The 148 tasks of the Hard subset.
    BigcodebenchHard,
}

impl Benchmark {
    fn subset(self) -> Subset {
        match self {
            Benchmark::Bigcodebench => Subset::Full,
            Benchmark::BigcodebenchHard => Subset::Hard,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Benchmark::Bigcodebench => "bigcodebench",
            Benchmark::BigcodebenchHard => "bigcodebench-hard",
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum SplitArg {
    Complete,
    Instruct,
}

#[derive(Args)]
pub struct EvalArgs {
    pub benchmark: Benchmark,
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
    /// Dataset version.
    #[arg(long, default_value = VERSIONS[0], value_parser = clap::builder::PossibleValuesParser::new(VERSIONS))]
    pub version: String,
    /// A dataset file in the Hugging Face schema (.jsonl or .jsonl.gz) instead of an embedded
    /// version.
    #[arg(long)]
    pub dataset: Option<PathBuf>,
    /// Only these tasks (comma-separated ids, e.g. BigCodeBench/13,BigCodeBench/15).
    #[arg(long, value_delimiter = ',')]
    pub tasks: Vec<String>,
    /// Run solutions as given, without the official calibration prefix.
    #[arg(long)]
    pub no_calibrate: bool,
    /// Time limit per sample, in seconds (the official harness waits 240).
    #[arg(long, default_value_t = 240.0)]
    pub timeout: f64,
    /// Memory limit per sample, in MiB.
    #[arg(long, default_value_t = 8192)]
    pub memory: u64,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
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

fn load_dataset(args: &EvalArgs) -> Result<Dataset> {
    let subset = args.benchmark.subset();
    let mut dataset = match &args.dataset {
        Some(path) => Dataset::from_file(path, subset)?,
        None => Dataset::embedded(&args.version, subset)?,
    };
    if !args.tasks.is_empty() {
        let ids: Vec<String> = args.tasks.iter().map(|t| t.trim().to_string()).collect();
        dataset.select(&ids)?;
    }
    Ok(dataset)
}

pub async fn run(args: EvalArgs) -> Result<i32> {
    let timeout = Duration::try_from_secs_f64(args.timeout)
        .ok()
        .filter(|d| !d.is_zero())
        .context("--timeout must be a positive number of seconds")?;
    if args.memory < 64 {
        bail!("--memory must be at least 64 MiB");
    }
    let split = split_of(&args);
    let dataset = load_dataset(&args)?;
    let samples = samples::load(&args.samples, &dataset)?;
    if samples.skipped > 0 {
        eprintln!(
            "assay: {} samples are for tasks outside {}: skipped",
            samples.skipped,
            args.benchmark.name()
        );
    }
    let version = match &args.dataset {
        Some(path) => path.display().to_string(),
        None => args.version.clone(),
    };
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("runs").join(format!(
            "{}-{}-{}-{}",
            args.benchmark.name(),
            args.dataset
                .as_ref()
                .map_or(args.version.as_str(), |_| "custom"),
            split.as_str(),
            model_name(&args.samples)
        ))
    });
    let options = Options {
        split,
        calibrated: !args.no_calibrate,
        limits: Limits {
            wall: timeout,
            memory_bytes: args.memory << 20,
            // The official harness raises the stack limit to 10 MiB.
            stack_bytes: Some(10 << 20),
            ..Limits::default()
        },
        network: args.engine.allow_network,
    };
    let (engine, env) = start_engine_in(&args.engine).await?;
    let identity = json!({
        "benchmark": args.benchmark.name(),
        "dataset": version,
        "dataset_digest": dataset.digest,
        "tasks": args.tasks,
        "samples_digest": samples.digest,
        "split": split.as_str(),
        "calibrated": options.calibrated,
        "timeout_seconds": args.timeout,
        "memory_mib": args.memory,
        "network": options.network,
        "environment": env.dir.file_name().map(|n| n.to_string_lossy().into_owned()),
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
    let environment = Environment {
        missing_modules: missing_modules(&engine, &dataset)
            .await
            .map_err(anyhow::Error::msg)?,
        network: options.network,
    };
    if !environment.missing_modules.is_empty() {
        eprintln!(
            "assay: not installed here, so tasks needing them are infra: {}",
            environment
                .missing_modules
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let evaluation = Evaluation {
        engine: &engine,
        dataset: &dataset,
        samples: &samples,
        options: &options,
        environment: &environment,
    };
    let mut progress = Bar::new(args.json);
    let summary = evaluation
        .run(&mut run, opened.records, &mut progress)
        .await
        .map_err(anyhow::Error::msg)?;
    drop(progress);
    run.write_json("summary.json", &summary)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print_summary(&args, split, &version, &summary, run.path());
    }
    Ok(0)
}

fn print_summary(args: &EvalArgs, split: Split, version: &str, summary: &Summary, dir: &Path) {
    println!(
        "{} ({}, {version}): {} samples, {} of {} tasks scored",
        args.benchmark.name(),
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

/// A progress bar with the live pass count and ETA (hidden when not a terminal or with --json).
struct Bar {
    bar: ProgressBar,
    counts: std::collections::BTreeMap<Status, usize>,
}

impl Bar {
    fn new(quiet: bool) -> Self {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::new(0)
        };
        bar.set_style(
            ProgressStyle::with_template(
                "{bar:30} {pos}/{len} [{elapsed_precise} < {eta_precise}] {msg}",
            )
            .expect("valid template"),
        );
        Bar {
            bar,
            counts: Default::default(),
        }
    }
}

impl Progress for Bar {
    fn start(&mut self, total: usize, done: usize) {
        self.bar.set_length(total as u64);
        self.bar.set_position(done as u64);
        self.bar.reset_eta();
    }

    fn finished(&mut self, result: &SampleResult) {
        *self.counts.entry(result.status).or_insert(0) += 1;
        let message: Vec<String> = self
            .counts
            .iter()
            .map(|(status, n)| format!("{status} {n}"))
            .collect();
        self.bar.set_message(message.join(" · "));
        self.bar.inc(1);
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
