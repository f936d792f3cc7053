//! `assay eval bigcodebench[-hard]`: evaluate a samples file, resumably, into a run directory
//! with the official result files.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use assay_eval::bigcodebench::ground_truth::References;
use assay_eval::bigcodebench::run::{
    check, model_name, now, Evaluation, Options, Summary, TimePolicy, STACK_BYTES,
};
use assay_eval::bigcodebench::samples::{self, Samples};
use assay_eval::bigcodebench::verdict::Environment;
use assay_report::{Opened, RunDir};
use assay_sandbox::Engine;
use assay_sandbox::Limits;
use assay_tasks::bigcodebench::Dataset;
use assay_tasks::bigcodebench::Split;
use clap::{Args, ValueEnum};
use serde_json::json;

use crate::bigcodebench_args::{prepare, Bar, DatasetArgs, RunDirArgs, SemanticsArgs};
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
    #[command(flatten)]
    pub run_dir: RunDirArgs,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub judging: JudgingArgs,
}

/// How samples are judged: what `assay eval` and `assay run` share.
#[derive(Args)]
pub struct JudgingArgs {
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
    #[command(flatten)]
    pub semantics: SemanticsArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

impl SplitArg {
    pub fn split(self) -> Split {
        match self {
            SplitArg::Complete => Split::Complete,
            SplitArg::Instruct => Split::Instruct,
        }
    }
}

fn split_of(args: &EvalArgs) -> Split {
    match args.split {
        Some(split) => split.split(),
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

/// A started engine and the settings samples are judged with.
pub struct Judge {
    engine: Engine,
    env: assay_pyenv::Environment,
    options: Options,
    memory_mib: u64,
}

impl JudgingArgs {
    /// The evaluation options, checked (before anything slow starts).
    pub fn options(&self, split: Split) -> Result<Options> {
        let time = match self.timeout {
            None => TimePolicy::DEFAULT,
            Some(seconds) if seconds.is_finite() && seconds > 0.0 => TimePolicy::Fixed { seconds },
            Some(_) => bail!("--timeout must be a positive number of seconds"),
        };
        if self.memory < 64 {
            bail!("--memory must be at least 64 MiB");
        }
        let options = Options {
            split,
            calibrated: !self.no_calibrate,
            limits: Limits {
                memory_bytes: self.memory << 20,
                stack_bytes: Some(STACK_BYTES),
                ..Limits::default()
            },
            time,
            network: self.engine.allow_network,
            guards: self.semantics.guards(),
        };
        Ok(options)
    }

    /// Starts the engine (setting up its environment if needed) to judge with `options`;
    /// `harness` (the run directory, the samples file) stays hidden from jobs.
    pub async fn start(&self, options: Options, harness: &[&Path]) -> Result<Judge> {
        let (engine, env) = start_engine_in(&self.engine, harness).await?;
        Ok(Judge {
            engine,
            env,
            options,
            memory_mib: self.memory,
        })
    }
}

/// What an evaluation of a dataset needs besides the engine: what the environment lacks, and
/// the reference runs.
pub struct Prepared {
    environment: Environment,
    references: References,
}

/// One evaluation into an open run directory.
pub struct Evaluate<'a> {
    pub dataset: &'a Dataset,
    pub samples: &'a Samples,
    pub run: &'a mut RunDir,
    pub records: Vec<serde_json::Value>,
    pub model: &'a str,
    pub unanswered: &'a [(String, String)],
    pub quiet: bool,
}

impl Judge {
    /// The settings that decide verdicts, for a run's identity.
    pub fn identity(&self) -> serde_json::Value {
        json!({
            "split": self.options.split.as_str(),
            "calibrated": self.options.calibrated,
            "time_policy": self.options.time,
            "memory_mib": self.memory_mib,
            "network": self.options.network,
            "guards": self.options.guards,
            "environment": self.env.key(),
        })
    }

    /// The environment's interpreter (the sanitizer checks syntax with it).
    pub fn python(&self) -> std::path::PathBuf {
        self.env.python()
    }

    /// Opens (or resumes) the run directory `out` for `manifest`, adding where code runs.
    pub fn open(&self, out: &Path, mut manifest: serde_json::Value) -> Result<Opened> {
        merge(
            &mut manifest,
            json!({
                "python": self.engine.python_version(),
                "isolation": self.engine.isolation(),
            }),
        );
        let opened = RunDir::open(out, &manifest)?;
        if opened.resumed {
            eprintln!(
                "assay: resuming {} ({} samples already evaluated)",
                out.display(),
                opened.records.len()
            );
        }
        Ok(opened)
    }

    /// Probes what the environment lacks for `dataset` (said once, on stderr) and opens its
    /// reference-run cache.
    pub async fn prepare(&self, dataset: &Dataset) -> Result<Prepared> {
        let (environment, references) = prepare(
            &self.engine,
            &self.env,
            dataset,
            self.options.network,
            self.options.guards,
        )
        .await?;
        Ok(Prepared {
            environment,
            references,
        })
    }

    /// Runs the reference solutions not measured yet (their times set the samples' time
    /// limits), showing them on `bar`: `assay run` does it while the model answers.
    pub async fn measure_references(
        &self,
        prepared: &mut Prepared,
        dataset: &Dataset,
        mut bar: Bar,
    ) -> Result<()> {
        check(
            &self.engine,
            dataset,
            &prepared.environment,
            &mut prepared.references,
            &mut bar,
        )
        .await
        .map_err(anyhow::Error::msg)?;
        Ok(())
    }

    pub async fn evaluate(&self, prepared: Prepared, job: Evaluate<'_>) -> Result<Summary> {
        let Prepared {
            environment,
            mut references,
        } = prepared;
        let evaluation = Evaluation {
            engine: &self.engine,
            dataset: job.dataset,
            samples: job.samples,
            options: &self.options,
            environment: &environment,
            model: job.model,
            unanswered: job.unanswered,
        };
        let mut progress = Bar::new(job.quiet);
        let summary = evaluation
            .run(job.run, job.records, &mut references, &mut progress)
            .await
            .map_err(anyhow::Error::msg)?;
        drop(progress);
        job.run.write_json("summary.json", &summary)?;
        Ok(summary)
    }
}

pub async fn run(args: EvalArgs) -> Result<i32> {
    let split = split_of(&args);
    let options = args.judging.options(split)?;
    let dataset = args.tasks.load()?;
    let benchmark = args.tasks.benchmark.name();
    let samples = samples::load(&args.samples, &dataset)?;
    if samples.skipped > 0 {
        eprintln!(
            "assay: {} samples are for tasks outside {benchmark}: skipped",
            samples.skipped,
        );
    }
    let model = model_name(&args.samples);
    let out = args.run_dir.dir(&args.tasks, split, &model);
    let judge = args.judging.start(options, &[&out, &args.samples]).await?;
    let mut identity = args.tasks.identity(&dataset);
    merge(&mut identity, judge.identity());
    identity["samples_digest"] = json!(samples.digest);
    let manifest = json!({
        "assay_version": env!("CARGO_PKG_VERSION"),
        "kind": "bigcodebench-eval",
        "identity": identity,
        "samples": std::fs::canonicalize(&args.samples).unwrap_or(args.samples.clone()),
        "started_at": now(),
    });
    let opened = judge.open(&out, manifest)?;
    let mut run = opened.dir;
    let evaluated: String = samples
        .samples
        .iter()
        .map(|s| s.text.clone() + "\n")
        .collect();
    run.write_file(assay_report::SAMPLES, evaluated.as_bytes())?;
    let prepared = judge.prepare(&dataset).await?;
    let summary = judge
        .evaluate(
            prepared,
            Evaluate {
                dataset: &dataset,
                samples: &samples,
                run: &mut run,
                records: opened.records,
                model: &model,
                unanswered: &[],
                quiet: args.json,
            },
        )
        .await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print_summary(benchmark, split, &args.tasks.source(), &summary, run.path());
    }
    Ok(0)
}

/// `n` and what it counts: `one` when `n` is 1, else `many`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Adds `extra`'s fields to the object `into`.
pub fn merge(into: &mut serde_json::Value, extra: serde_json::Value) {
    if let (Some(into), serde_json::Value::Object(extra)) = (into.as_object_mut(), extra) {
        into.extend(extra);
    }
}

pub fn print_summary(benchmark: &str, split: Split, version: &str, summary: &Summary, dir: &Path) {
    let scores = &summary.scores;
    println!(
        "{benchmark} ({}, {version}): {} samples, {} of {} tasks judged",
        split.as_str(),
        summary.samples,
        scores.tasks_judged,
        summary.tasks_in_dataset
    );
    let set_apart = match (scores.samples_set_apart, scores.tasks_set_apart.len()) {
        (0, _) => String::new(),
        (samples, 0) => format!(
            " ({} set apart)",
            count(samples, "infra sample", "infra samples")
        ),
        (samples, tasks) => format!(
            " ({} set apart; {} with no verdict at all)",
            count(samples, "infra sample", "infra samples"),
            count(tasks, "task", "tasks"),
        ),
    };
    for (k, v) in &scores.pass_at_k {
        println!(
            "  {k}: {v:.4} over {} judged{set_apart}",
            count(scores.tasks_judged, "task", "tasks")
        );
    }
    if scores.samples_set_apart > 0 {
        let tasks = scores.tasks_judged + scores.tasks_set_apart.len();
        for (k, v) in &scores.pass_at_k_infra_as_fail {
            println!(
                "  {k} with infra as failures: {v:.4} over {} (the official harness's figure \
                 on this machine)",
                count(tasks, "task", "tasks")
            );
        }
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
    if scores.tasks_judged < summary.tasks_in_dataset {
        println!(
            "  warning: pass@k covers {} of {} tasks ({} without samples, {} infra only)",
            scores.tasks_judged,
            summary.tasks_in_dataset,
            summary.tasks_missing.len(),
            scores.tasks_set_apart.len(),
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
