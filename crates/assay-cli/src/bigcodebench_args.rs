//! What `assay eval` and `assay check` share for BigCodeBench: choosing the tasks, probing the
//! environment, the reference-run cache and the progress bar.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Result;
use assay_eval::bigcodebench::ground_truth::References;
use assay_eval::bigcodebench::run::{missing_modules, Progress, SampleResult};
use assay_eval::bigcodebench::verdict::Environment;
use assay_sandbox::{Engine, Status};
use assay_tasks::bigcodebench::{Dataset, Split, Subset, VERSIONS};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

#[derive(Clone, Copy, ValueEnum)]
pub enum Benchmark {
    /// All 1,140 tasks.
    Bigcodebench,
    /// The 148 tasks of the Hard subset.
    BigcodebenchHard,
}

impl Benchmark {
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::Bigcodebench => "bigcodebench",
            Benchmark::BigcodebenchHard => "bigcodebench-hard",
        }
    }
}

/// Which tasks: the benchmark, its data version or file, and optionally some task ids.
#[derive(Args)]
pub struct DatasetArgs {
    pub benchmark: Benchmark,
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
}

impl DatasetArgs {
    pub fn load(&self) -> Result<Dataset> {
        let subset = match self.benchmark {
            Benchmark::Bigcodebench => Subset::Full,
            Benchmark::BigcodebenchHard => Subset::Hard,
        };
        let mut dataset = match &self.dataset {
            Some(path) => Dataset::from_file(path, subset)?,
            None => Dataset::embedded(&self.version, subset)?,
        };
        if !self.tasks.is_empty() {
            let ids: Vec<String> = self.tasks.iter().map(|t| t.trim().to_string()).collect();
            dataset.select(&ids)?;
        }
        Ok(dataset)
    }

    /// The task selection as part of a run's identity: what decides which tasks a run has.
    pub fn identity(&self, dataset: &Dataset) -> serde_json::Value {
        serde_json::json!({
            "benchmark": self.benchmark.name(),
            "dataset": self.source(),
            "dataset_digest": dataset.digest,
            "tasks": self.tasks,
        })
    }

    /// The version, or the dataset file, as run directories and summaries name it.
    pub fn source(&self) -> String {
        match &self.dataset {
            Some(path) => path.display().to_string(),
            None => self.version.clone(),
        }
    }
}

/// Where a run's files go.
#[derive(Args)]
pub struct RunDirArgs {
    /// The run directory (default: runs/<benchmark>-<version>-<split>-<model>). Rerunning the
    /// same command resumes it: nothing answered or judged is asked or run again.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl RunDirArgs {
    /// `--out`, or the default name for a run of `tasks` in `split` by `model`.
    pub fn dir(&self, tasks: &DatasetArgs, split: Split, model: &str) -> PathBuf {
        self.out.clone().unwrap_or_else(|| {
            PathBuf::from("runs").join(format!(
                "{}-{}-{}-{model}",
                tasks.benchmark.name(),
                tasks
                    .dataset
                    .as_ref()
                    .map_or(tasks.version.as_str(), |_| "custom"),
                split.as_str(),
            ))
        })
    }
}

/// How code runs, beyond the sandbox.
#[derive(Args)]
pub struct SemanticsArgs {
    /// Run code without the official harness's process guards (os.kill limited to the code's
    /// own subprocesses, commands mentioning `kill` skipped, exec ignored...). Some official
    /// verdicts depend on them: a multiprocessing pool never exits under them, for one.
    #[arg(long)]
    pub no_official_guards: bool,
}

impl SemanticsArgs {
    /// Whether jobs run under the official guards.
    pub fn guards(&self) -> bool {
        !self.no_official_guards
    }
}

/// What the sandbox's environment lacks (said once, on stderr), and the reference runs of
/// `dataset` in it.
pub async fn prepare(
    engine: &Engine,
    env: &assay_pyenv::Environment,
    dataset: &Dataset,
    network: bool,
    guards: bool,
) -> Result<(Environment, References)> {
    let environment = Environment {
        missing_modules: missing_modules(engine, dataset)
            .await
            .map_err(anyhow::Error::msg)?,
        network,
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
    let references = References::open(
        &assay_pyenv::cache_root()?,
        dataset,
        &env.key(),
        network,
        guards,
    )
    .map_err(anyhow::Error::msg)?;
    Ok((environment, references))
}

/// A progress bar `{bar} done/total{unit} [elapsed < ETA] message`, hidden when `quiet` (and
/// by indicatif when stderr is not a terminal).
pub fn progress_bar(quiet: bool, unit: &str) -> ProgressBar {
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(0)
    };
    let template =
        format!("{{bar:30}} {{pos}}/{{len}}{unit} [{{elapsed_precise}} < {{eta_precise}}] {{msg}}");
    bar.set_style(ProgressStyle::with_template(&template).expect("valid template"));
    bar
}

/// A progress bar with the live status counts and ETA (hidden when not a terminal or with
/// --json).
pub struct Bar {
    bar: ProgressBar,
    counts: BTreeMap<Status, usize>,
    references: (usize, usize),
}

impl Bar {
    pub fn new(quiet: bool) -> Self {
        Bar {
            bar: progress_bar(quiet, ""),
            counts: BTreeMap::new(),
            references: (0, 0),
        }
    }

    /// The bar itself, to reveal a bar made hidden once the terminal is free for it.
    pub fn handle(&self) -> ProgressBar {
        self.bar.clone()
    }

    fn show(&self) {
        let mut parts: Vec<String> = self
            .counts
            .iter()
            .map(|(status, n)| format!("{status} {n}"))
            .collect();
        let (done, total) = self.references;
        if total > 0 {
            parts.push(format!("reference solutions {done}/{total}"));
        }
        self.bar.set_message(parts.join(" · "));
    }
}

impl Progress for Bar {
    fn start(&mut self, samples: usize, done: usize, references: usize) {
        self.references = (0, references);
        self.bar.set_length((samples + references) as u64);
        self.bar.set_position(done as u64);
        self.bar.reset_eta();
        self.show();
    }

    fn finished(&mut self, result: &SampleResult) {
        *self.counts.entry(result.status).or_insert(0) += 1;
        self.bar.inc(1);
        self.show();
    }

    fn reference_finished(&mut self, _: &SampleResult) {
        self.references.0 += 1;
        self.bar.inc(1);
        self.show();
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
