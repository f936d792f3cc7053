//! `assay generate bigcodebench[-hard]`: ask a model for answers (official prompts and
//! sanitizer) into a run directory's `samples.jsonl`, resumably. `assay run` shares the model
//! options and the generation step.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use assay_eval::bigcodebench::run::now;
use assay_generate::{prompt, Generation, Model, Outcome, Progress, Settings};
use assay_models::{ApiKey, Backoff, Client, ClientConfig, ModelSpec, Provider};
use assay_report::RunDir;
use assay_sanitize::Sanitizer;
use assay_tasks::bigcodebench::Dataset;
use clap::Args;
use indicatif::ProgressBar;
use serde_json::{json, Value};

use crate::bigcodebench_args::{progress_bar, DatasetArgs, RunDirArgs};
use crate::eval_cmd::{merge, SplitArg};
use crate::secrets;

/// Which model answers, and how it is asked.
#[derive(Args)]
pub struct ModelArgs {
    /// `openai:MODEL` (OPENAI_API_KEY; with --base-url any OpenAI-compatible server),
    /// `anthropic:MODEL` (ANTHROPIC_API_KEY) or `reference` (the canonical solutions).
    #[arg(long)]
    pub model: Option<String>,
    /// The server's base URL: for openai including `/v1` (e.g. http://localhost:8000/v1 for
    /// vLLM), for anthropic without it.
    #[arg(long)]
    pub base_url: Option<String>,
    /// A base model: continue the Complete prompt through the completions endpoint, with the
    /// official direct-completion stop strings (Complete split only).
    #[arg(long)]
    pub direct_completion: bool,
    /// The prompt style.
    #[arg(long, value_enum, default_value_t = SplitArg::Complete)]
    pub split: SplitArg,
    /// Answers per task (greedy when 1).
    #[arg(short = 'n', long = "n-samples", default_value_t = 1)]
    pub n: u32,
    /// Sampling temperature (default: 0 for one answer, 0.8 for several).
    #[arg(long)]
    pub temperature: Option<f64>,
    /// Nucleus sampling (default: 0.95 when sampling, not sent when greedy).
    #[arg(long)]
    pub top_p: Option<f64>,
    /// Token limit per answer (default: 1280, the official one).
    #[arg(long)]
    pub max_tokens: Option<u32>,
    /// Requests in flight at most.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// Seconds one HTTP attempt may take.
    #[arg(long, default_value_t = 300.0)]
    pub request_timeout: f64,
    /// Attempts after the first on rate limits, server errors, timeouts and broken connections.
    #[arg(long, default_value_t = 6)]
    pub retries: u32,
}

#[derive(Args)]
pub struct GenerateArgs {
    #[command(flatten)]
    pub tasks: DatasetArgs,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub run_dir: RunDirArgs,
    /// The CPython 3.11 that checks syntax while sanitizing (default: python3.11 or python3).
    #[arg(long, env = "ASSAY_PYTHON")]
    pub python: Option<PathBuf>,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The model as chosen on the command line.
pub struct Chosen {
    pub model: Model,
    /// `reference`, or `provider:model`.
    pub spec: String,
    /// The model's name in file names and `pass_at_k.json` (`/` becomes `--`, as officially).
    pub name: String,
    pub settings: Settings,
    /// Retries so far (the progress line shows them).
    pub retries: Arc<AtomicU64>,
}

impl ModelArgs {
    /// The model and settings; `default_reference` says whether no --model means `reference`.
    pub fn choose(&self, default_reference: bool) -> Result<Chosen> {
        if self.concurrency == 0 {
            bail!("--concurrency must be at least 1");
        }
        let spec = match &self.model {
            Some(spec) => spec.trim().to_string(),
            None if default_reference => "reference".to_string(),
            None => bail!("--model is required: openai:MODEL, anthropic:MODEL or reference"),
        };
        let settings = |sampling_top_p| {
            Settings::resolve(
                self.split.split(),
                self.n,
                self.temperature,
                self.top_p,
                self.max_tokens,
                sampling_top_p,
            )
        };
        if spec == "reference" {
            if self.base_url.is_some() || self.direct_completion {
                bail!("--base-url and --direct-completion are for model APIs, not `reference`");
            }
            return Ok(Chosen {
                model: Model::Reference,
                name: "reference".into(),
                spec,
                settings: settings(true)?,
                retries: Arc::default(),
            });
        }
        let parsed: ModelSpec = spec.parse()?;
        let anthropic = parsed.provider == Provider::Anthropic;
        let settings = settings(!anthropic)?;
        if anthropic && settings.temperature > 1.0 {
            bail!(
                "--temperature {}: Anthropic accepts 0 to 1",
                settings.temperature
            );
        }
        // An empty or blank variable counts as unset (`Client::new` says so when one is needed).
        let api_key = secrets::key(&parsed.provider).map(ApiKey::new);
        let request_timeout = Duration::try_from_secs_f64(self.request_timeout)
            .ok()
            .filter(|d| !d.is_zero())
            .context("--request-timeout must be a positive number of seconds")?;
        let client = Client::new(ClientConfig {
            spec: parsed.clone(),
            base_url: self.base_url.clone(),
            api_key,
            request_timeout,
            retries: self.retries,
            backoff: Backoff::default(),
        })?;
        let retries = Arc::new(AtomicU64::new(0));
        let counter = retries.clone();
        let client = client.on_retry(move |_| {
            counter.fetch_add(1, Ordering::Relaxed);
        });
        let model = if self.direct_completion {
            Model::Completion(client)
        } else {
            Model::Chat(client)
        };
        Ok(Chosen {
            model,
            name: parsed.model.replace('/', "--"),
            spec,
            settings,
            retries,
        })
    }

    /// What decides the answers, for a run's identity.
    pub fn identity(&self, chosen: &Chosen) -> Value {
        json!({
            "model": chosen.spec,
            "direct_completion": self.direct_completion,
            "generation": chosen.settings,
            "prompt": prompt::TEMPLATE_VERSION,
        })
    }

    /// How the model was reached (not identity: the same model may move servers), without
    /// credentials a URL may carry.
    pub fn access(&self, chosen: &Chosen) -> Value {
        let base_url = match &chosen.model {
            Model::Chat(client) | Model::Completion(client) => Some(client.base_url().to_string()),
            Model::Reference => None,
        };
        json!({
            "base_url": base_url,
            "concurrency": self.concurrency,
            "request_timeout_seconds": self.request_timeout,
            "retries": self.retries,
        })
    }
}

/// Generates into `run` and records the totals, and how the model was reached this time, in
/// its manifest.
pub async fn generate(
    run: &mut RunDir,
    dataset: &Dataset,
    chosen: &Chosen,
    args: &ModelArgs,
    python: &std::path::Path,
    quiet: bool,
) -> Result<Outcome> {
    let python = python.to_path_buf();
    let sanitizer = tokio::task::spawn_blocking(move || Sanitizer::new(&python))
        .await
        .context("starting the sanitizer")??;
    let generation = Generation {
        dataset,
        settings: &chosen.settings,
        model: &chosen.model,
        sanitizer: Arc::new(Mutex::new(sanitizer)),
        concurrency: args.concurrency,
    };
    let mut bar = GenerationBar::new(quiet, chosen.retries.clone());
    let outcome = generation.run(run, &mut bar).await;
    drop(bar);
    let outcome = outcome?;
    let mut manifest = run.manifest()?;
    manifest["model_access"] = args.access(chosen);
    manifest["generation"] = json!(outcome);
    manifest["generation"]["finished_at"] = json!(now());
    run.update_manifest(&manifest)?;
    Ok(outcome)
}

/// Prints what a generation came to.
pub fn print_outcome(outcome: &Outcome, run: &RunDir) {
    let t = &outcome.totals;
    println!(
        "generated {} samples in {} ({} requests, {} retried; tokens: {} prompt, {} completion; \
         latency mean {:.1} s, max {:.1} s)",
        outcome.samples,
        run.path().join(assay_report::SAMPLES).display(),
        t.requests,
        t.retried_requests,
        t.usage.prompt_tokens,
        t.usage.completion_tokens,
        t.latency_mean_seconds,
        t.latency_max_seconds,
    );
    if t.cut_short > 0 || t.empty > 0 {
        println!(
            "  warning: {} answers hit the token limit (--max-tokens), {} are empty; they are \
             scored as they are",
            t.cut_short, t.empty
        );
    }
    if !outcome.unanswered.is_empty() {
        println!(
            "  {} tasks lack answers (the requests failed; rerun the same command to ask again):",
            outcome.unanswered.len()
        );
        for u in &outcome.unanswered {
            let noun = if u.samples == 1 { "sample" } else { "samples" };
            println!("    {} ({} {noun}): {}", u.task_id, u.samples, u.reason);
        }
    }
}

pub async fn run(args: GenerateArgs) -> Result<i32> {
    let chosen = args.model.choose(false)?;
    let dataset = args.tasks.load()?;
    let split = chosen.settings.split;
    let out = args.run_dir.dir(&args.tasks, split, &chosen.name);
    let manifest = manifest(
        "bigcodebench-generate",
        &args.tasks,
        &dataset,
        &args.model,
        &chosen,
    );
    let mut run = RunDir::open(&out, &manifest)?.dir;
    let python = assay_pyenv::Interpreter::discover(args.python.as_deref())?.executable;
    let outcome = generate(&mut run, &dataset, &chosen, &args.model, &python, args.json).await?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&{
                let mut doc = json!(outcome);
                doc["dir"] = json!(run.path());
                doc
            })?
        );
    } else {
        print_outcome(&outcome, &run);
    }
    if !args.json && outcome.samples > 0 {
        println!(
            "evaluate them: the same command with `run` instead of `generate` continues this \
             directory (or the official harness: bigcodebench.evaluate --samples {})",
            run.path().join(assay_report::SAMPLES).display(),
        );
    }
    Ok(i32::from(!outcome.unanswered.is_empty()))
}

/// A run directory's manifest for a generation (`kind`), without the evaluation's part.
pub fn manifest(
    kind: &str,
    tasks: &DatasetArgs,
    dataset: &Dataset,
    args: &ModelArgs,
    chosen: &Chosen,
) -> Value {
    let mut identity = tasks.identity(dataset);
    merge(&mut identity, args.identity(chosen));
    json!({
        "assay_version": env!("CARGO_PKG_VERSION"),
        "kind": kind,
        "identity": identity,
        "model_access": args.access(chosen),
        "started_at": now(),
    })
}

/// Answers so far, requests in flight, tokens per second and the ETA.
struct GenerationBar {
    bar: ProgressBar,
    quiet: bool,
    retries: Arc<AtomicU64>,
    started: Instant,
    tokens: u64,
    in_flight: usize,
    failed: usize,
}

impl GenerationBar {
    fn new(quiet: bool, retries: Arc<AtomicU64>) -> Self {
        GenerationBar {
            bar: progress_bar(quiet, " answers"),
            quiet,
            retries,
            started: Instant::now(),
            tokens: 0,
            in_flight: 0,
            failed: 0,
        }
    }

    fn show(&self) {
        let seconds = self.started.elapsed().as_secs_f64().max(1e-3);
        let mut message = format!(
            "{} in flight · {:.0} tok/s",
            self.in_flight,
            self.tokens as f64 / seconds
        );
        let retries = self.retries.load(Ordering::Relaxed);
        if retries > 0 {
            message.push_str(&format!(" · {retries} retries"));
        }
        if self.failed > 0 {
            message.push_str(&format!(" · {} failed", self.failed));
        }
        self.bar.set_message(message);
    }
}

impl Progress for GenerationBar {
    fn start(&mut self, samples: usize, done: usize) {
        if done > 0 && !self.quiet {
            eprintln!("assay: {done} of {samples} answers are already there; asking for the rest");
        }
        self.bar.set_length(samples as u64);
        self.bar.set_position(done as u64);
        self.bar.reset_eta();
        self.started = Instant::now();
        self.show();
    }

    fn in_flight(&mut self, requests: usize) {
        self.in_flight = requests;
        self.show();
    }

    fn answered(&mut self, samples: usize, completion_tokens: u64) {
        self.tokens += completion_tokens;
        self.bar.inc(samples as u64);
        self.show();
    }

    fn failed(&mut self, task_id: &str, samples: usize, error: &str) {
        self.failed += samples;
        self.bar
            .suspend(|| eprintln!("assay: no answer for {task_id}: {error}"));
        self.bar.inc(samples as u64);
        self.show();
    }
}
