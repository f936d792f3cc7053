//! The arguments commands share, and the typed settings each turns into: the command files
//! parse with these and hand the settings to `assay-pipeline`.

use std::num::{NonZeroU32, NonZeroU64};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use assay_models::{parse_think_tags, ApiKey, ExtraBody, ModelSpec, ServeSettings};
use assay_pipeline::engine::EngineSettings;
use assay_pipeline::generate::ModelSettings;
use assay_pipeline::judge::JudgeSettings;
use assay_pipeline::pybench::Access;
use assay_pipeline::selection::TaskSelection;
use assay_pyenv::{EnvStatus, Environment, Interpreter, Profile};
use assay_records::{
    Conditions, Effort, ListingOrder, Prices, ReasoningSettings, Shard, Split, ThinkTag,
};
use assay_sandbox::IsolationMode;
use assay_tasks::bigcodebench::{Subset, VERSIONS};
use clap::{Args, ValueEnum};

use crate::progress::Spinner;
use crate::secrets;

/// The prompt style.
#[derive(Clone, Copy, ValueEnum)]
pub enum SplitArg {
    /// The function signature and its docstring, to be completed.
    Complete,
    /// A natural-language instruction.
    Instruct,
}

impl SplitArg {
    /// The split it names.
    pub fn split(self) -> Split {
        match self {
            SplitArg::Complete => Split::Complete,
            SplitArg::Instruct => Split::Instruct,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Benchmark {
    /// All 1,140 tasks.
    Bigcodebench,
    /// The 148 tasks of the Hard subset.
    BigcodebenchHard,
}

/// Which tasks: the benchmark, its data version or file, and optionally some task ids.
#[derive(Args)]
pub struct DatasetArgs {
    /// The benchmark. Always given (clap requires it), except that `assay run pybench` and
    /// `assay eval pybench` replace the whole argument set.
    #[arg(required = true)]
    pub benchmark: Option<Benchmark>,
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
    /// The task selection (of `shard` only, when given).
    pub fn selection(&self, shard: Option<Shard>) -> TaskSelection {
        TaskSelection {
            subset: match self.benchmark {
                Some(Benchmark::BigcodebenchHard) => Subset::Hard,
                Some(Benchmark::Bigcodebench) | None => Subset::Full,
            },
            version: self.version.clone(),
            dataset: self.dataset.clone(),
            tasks: self.tasks.clone(),
            shard,
        }
    }
}

/// Which part of the tasks this machine runs, when a run is split over machines.
#[derive(Args)]
pub struct ShardArgs {
    /// Run only shard I of N (I from 0): tasks are dealt whole, in turn, from their sorted ids;
    /// `assay merge` joins the shards. Default: from a Slurm array task (SLURM_ARRAY_TASK_ID
    /// from SLURM_ARRAY_TASK_MIN, of SLURM_ARRAY_TASK_COUNT; the array one contiguous range
    /// with step 1) or a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, of --shard-count).
    #[arg(long)]
    pub shard: Option<Shard>,
    /// How many shards a Kubernetes Indexed Job has (its `completions`), for
    /// JOB_COMPLETION_INDEX.
    #[arg(long, env = "ASSAY_SHARD_COUNT")]
    pub shard_count: Option<u32>,
}

impl ShardArgs {
    /// The shard asked for, or the one the cluster's environment gives this process; says so
    /// on standard error when it came from the environment.
    pub fn resolve(&self) -> Result<Option<Shard>> {
        let found = self.resolve_from(|name| std::env::var(name).ok())?;
        if let (None, Some((shard, from))) = (self.shard, &found) {
            eprintln!("assay: running shard {shard} (from {from})");
        }
        Ok(found.map(|(shard, _)| shard))
    }

    /// The shard, and the variable it was read from (empty: the option).
    fn resolve_from(
        &self,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<(Shard, &'static str)>> {
        let number = |name: &'static str| -> Result<Option<u32>> {
            var(name)
                .map(|v| {
                    v.trim()
                        .parse::<u32>()
                        .with_context(|| format!("{name}={v:?} is not a number"))
                })
                .transpose()
        };
        let checked = |index: u32, count: u32, from: &'static str| {
            Shard::new(index, count)
                .map(|shard| Some((shard, from)))
                .map_err(|e| anyhow::anyhow!("{from}: {e}"))
        };
        if let Some(shard) = self.shard {
            if let Some(count) = self.shard_count.filter(|&c| c != shard.count) {
                anyhow::bail!("--shard {shard} and --shard-count {count} disagree");
            }
            return Ok(Some((shard, "")));
        }
        if let Some(id) = number("SLURM_ARRAY_TASK_ID")? {
            let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            let count = number("SLURM_ARRAY_TASK_COUNT")?.context(
                "SLURM_ARRAY_TASK_ID is set but not SLURM_ARRAY_TASK_COUNT: pass --shard I/N",
            )?;
            if number("SLURM_ARRAY_TASK_STEP")?.is_some_and(|step| step != 1) {
                anyhow::bail!(
                    "the Slurm array has a step other than 1: submit it as --array=0-{} (or \
                     pass --shard I/N)",
                    count.saturating_sub(1)
                );
            }
            // Shards are counted from the array's first index, so only one contiguous range
            // maps every task to one shard: --array=0-7, 1-8 or 0-7%2, never 0,3,5.
            if let Some(max) = number("SLURM_ARRAY_TASK_MAX")? {
                if u64::from(min) + u64::from(count) != u64::from(max) + 1 {
                    anyhow::bail!(
                        "the Slurm array is not one contiguous range (SLURM_ARRAY_TASK_MIN {min}, \
                         SLURM_ARRAY_TASK_MAX {max}, SLURM_ARRAY_TASK_COUNT {count}): submit it \
                         as --array=0-{} (or pass --shard I/N)",
                        count.saturating_sub(1)
                    );
                }
            }
            let index = id.checked_sub(min).with_context(|| {
                format!("SLURM_ARRAY_TASK_ID {id} is below SLURM_ARRAY_TASK_MIN {min}")
            })?;
            return checked(index, count, "SLURM_ARRAY_TASK_ID");
        }
        if let Some(index) = number("JOB_COMPLETION_INDEX")? {
            let count = self.shard_count.context(
                "JOB_COMPLETION_INDEX is set but not the number of shards: pass --shard-count N \
                 or set ASSAY_SHARD_COUNT (the Job's completions)",
            )?;
            return checked(index, count, "JOB_COMPLETION_INDEX");
        }
        Ok(None)
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

/// Which environment a command works with.
#[derive(Args, Clone)]
pub struct Select {
    /// The pinned package set: `bigcodebench`, `test` or `pybench` (PyBench always runs in
    /// `pybench`).
    #[arg(long, default_value_t = Profile::default_profile().name.to_string())]
    pub profile: String,
    /// The base CPython 3.11 to build the environment from (default: python3.11 or python3 on PATH).
    #[arg(long, env = "ASSAY_PYTHON")]
    pub python: Option<PathBuf>,
}

/// `env`, set up first (once, with a spinner) if it is not yet: no command needs `assay env
/// setup` run before it.
pub fn ready(env: Environment) -> Result<Environment> {
    if !matches!(env.status(), EnvStatus::Complete(_)) {
        eprintln!(
            "assay: the `{}` environment is not set up yet; setting it up now (once)",
            env.profile.name
        );
        env.setup(&Spinner::new())?;
    }
    Ok(env)
}

impl Select {
    /// The environment chosen, set up or not.
    pub fn locate(&self) -> Result<Environment> {
        let profile = Profile::by_name(&self.profile)?;
        let interpreter = Interpreter::discover(self.python.as_deref())?;
        Ok(Environment::locate(profile, interpreter)?)
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Isolation {
    /// Use what the kernel offers; record the level reached.
    Auto,
    /// Refuse to run below full isolation.
    Strict,
}

#[derive(Args, Clone)]
pub struct EngineArgs {
    #[command(flatten)]
    pub select: Select,
    #[arg(long, value_enum, default_value_t = Isolation::Auto)]
    pub isolation: Isolation,
    /// CPU slots: jobs computing at once (default: the number of CPUs). A job that waits
    /// (sleeps, blocks on a subprocess or a socket) lends its slot to the next one.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Jobs at once at most, counting those that lent their slot (default: 8 x --jobs;
    /// equal to --jobs: no lending).
    #[arg(long)]
    pub max_jobs: Option<usize>,
    /// Worker processes that fork the jobs (default: one per 8 --jobs). Each forks one job at
    /// a time, about 60 a second, from an interpreter holding the preloaded libraries, and
    /// holds its own copy of them in memory.
    #[arg(long)]
    pub workers: Option<usize>,
    /// Give evaluated code the host's network (off: a private network with loopback only).
    #[arg(long)]
    pub allow_network: bool,
    /// The order in which evaluated code's directory listings (os.listdir, os.scandir, glob,
    /// os.walk, pathlib) come: by a keyed hash of each name, arbitrary as on the official
    /// image's ext4 disk but the same on every machine (docs/parity.md says why); by name; or
    /// the filesystem's own (a tmpfs lists newest first).
    #[arg(long, value_enum, default_value_t = Listing::Hashed)]
    pub listing_order: Listing,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Listing {
    Hashed,
    Name,
    Kernel,
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
    /// Judge samples that gamed their tests (skipped them, patched unittest, ended a test
    /// early...) as the official harness does, from failures and errors alone, instead of
    /// `fail`; they are still counted and named. For exact parity studies.
    #[arg(long)]
    pub gamed_as_official: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// After judging, run every judged sample N more times, each round changing one condition
    /// its verdict ought not to depend on (round 1: another directory listing order, 2: other
    /// random seeds, 3: other timing and CPU load, then again with new values), and report the
    /// samples whose verdict changed, with what changed it, and pass@1's range.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub stability: u32,
}

/// Which model answers, and how it is asked.
#[derive(Args)]
pub struct ModelArgs {
    /// `openai:MODEL` (OPENAI_API_KEY; with --base-url any OpenAI-compatible server),
    /// `anthropic:MODEL` (ANTHROPIC_API_KEY) or `reference` (the canonical solutions).
    #[arg(long)]
    pub model: Option<String>,
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
    #[command(flatten)]
    pub api: ApiArgs,
}

/// How a model's API is reached: every command that calls a model takes these.
#[derive(Args)]
pub struct ApiArgs {
    /// The server's base URL: for openai including `/v1` (e.g. http://localhost:8000/v1 for
    /// vLLM), for anthropic without it. Default: OPENAI_BASE_URL or ANTHROPIC_BASE_URL if
    /// set (as the providers' SDKs read them), else the provider's API.
    #[arg(long)]
    pub base_url: Option<String>,
    /// Seconds one HTTP attempt may take.
    #[arg(long, default_value_t = 300.0)]
    pub request_timeout: f64,
    /// Attempts after the first on rate limits, server errors, timeouts and broken connections.
    #[arg(long, default_value_t = 6)]
    pub retries: u32,
    #[command(flatten)]
    pub provider: ProviderArgs,
    #[command(flatten)]
    pub serve: ServeArgs,
    #[command(flatten)]
    pub reasoning: ReasoningArgs,
    /// Fields added to every request body, as a JSON object or @FILE holding one: a server's
    /// own sampling settings that would otherwise apply silently (`top_k`, `min_p`,
    /// `repetition_penalty`, `seed`), `chat_template_kwargs` for vLLM and SGLang, provider
    /// fields. Part of the run's identity. Fields assay sends itself need
    /// --extra-body-replaces.
    #[arg(long, value_name = "JSON|@FILE", value_parser = extra_body)]
    pub extra_body: Option<serde_json::Map<String, serde_json::Value>>,
    /// Fields of --extra-body that replace what assay itself sends (`temperature`, `top_p`,
    /// `max_tokens`, `stop`...), named on purpose: the run then is not what assay's own
    /// settings say.
    #[arg(long, value_name = "KEY", value_delimiter = ',')]
    pub extra_body_replaces: Vec<String>,
}

/// `--extra-body` as given: a JSON object inline, or in the file after `@`.
fn extra_body(text: &str) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    let (json, source) = match text.strip_prefix('@') {
        Some(file) => (
            std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?,
            format!("{file}: "),
        ),
        None => (text.to_string(), String::new()),
    };
    match serde_json::from_str::<serde_json::Value>(&json) {
        Ok(serde_json::Value::Object(fields)) => Ok(fields),
        Ok(other) => Err(format!(
            "{source}expected a JSON object of fields to add ({{\"top_k\": 1}}), not {other}"
        )),
        Err(e) => Err(format!("{source}not JSON: {e}")),
    }
}

impl ApiArgs {
    /// Where `model` (a spec) is asked: `--base-url`, else (unless `--serve` starts the server,
    /// whose `--port` says where) the variable the provider's own SDK reads
    /// (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`; empty counts as unset), else the provider's
    /// own API.
    pub fn base_url(&self, model: &str) -> Option<String> {
        if self.base_url.is_some() || self.serve.serve.is_some() {
            return self.base_url.clone();
        }
        let provider = model.parse::<ModelSpec>().ok()?.provider;
        std::env::var(provider.base_url_env_var())
            .ok()
            .filter(|url| !url.is_empty())
    }

    /// The fields to add to every request body.
    pub fn extra_body(&self) -> ExtraBody {
        ExtraBody::new(
            self.extra_body.clone().unwrap_or_default(),
            self.extra_body_replaces.iter().cloned(),
        )
    }

    /// How the API of `model` (a spec) is reached, with its provider's key if assay took one
    /// from the environment (none for a spec naming no provider, such as `replay:FILE`).
    pub fn access(&self, model: &str) -> Access {
        let api_key = model
            .parse::<ModelSpec>()
            .ok()
            .and_then(|spec| secrets::key(&spec.provider))
            .map(ApiKey::new);
        Access {
            base_url: self.base_url(model),
            api_key,
            request_timeout: self.request_timeout,
            retries: self.retries,
            requests_per_minute: self.provider.requests_per_minute(),
            tokens_per_minute: self.provider.tokens_per_minute(),
            prices: self.provider.prices(),
            serve: self.serve.settings(),
            reasoning: self.reasoning.settings(),
            extra_body: self.extra_body(),
        }
    }
}

/// How a reasoning model is asked to think, and how its thinking is told from its answers:
/// every command that calls a model takes these.
#[derive(Args)]
pub struct ReasoningArgs {
    /// OpenAI and compatible servers: how hard a reasoning model thinks, sent as
    /// `reasoning_effort` (none, minimal, low, medium, high or xhigh; each model takes some).
    #[arg(long, value_name = "EFFORT", value_parser = effort)]
    pub reasoning_effort: Option<Effort>,
    /// Anthropic: extended thinking with this many tokens to think (at least 1024), on top of
    /// the answer's --max-tokens. The temperature is not sent with it (Anthropic allows none).
    #[arg(long, value_name = "TOKENS")]
    pub thinking_budget: Option<u32>,
    /// Whether the model takes OpenAI's reasoning-model requests (no temperature, top_p or
    /// token limit sent), when its name does not say (o1, o3, o4, gpt-5 and *-reasoner do).
    #[arg(long, value_enum, value_name = "YES|NO")]
    pub reasoning_model: Option<YesNo>,
    /// The tags a model writes its thinking between, set apart from its answer before it is
    /// judged: OPEN,CLOSE pairs separated by `;` (`,</think>` when the chat template opens the
    /// thinking), or `none`. Default: the forms open models use (<think>, <thinking>,
    /// <|begin_of_thought|>, ◁think▷, <seed:think>, [THINK]).
    #[arg(long, value_name = "OPEN,CLOSE", value_parser = think_tags)]
    pub think_tags: Option<ThinkTags>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum YesNo {
    Yes,
    No,
}

/// `--think-tags` as given.
#[derive(Clone)]
pub struct ThinkTags(Vec<ThinkTag>);

fn think_tags(text: &str) -> Result<ThinkTags, String> {
    parse_think_tags(text).map(ThinkTags)
}

fn effort(text: &str) -> Result<Effort, String> {
    text.parse()
}

impl ReasoningArgs {
    /// The settings, as the client and the run's identity take them.
    pub fn settings(&self) -> ReasoningSettings {
        ReasoningSettings {
            effort: self.reasoning_effort,
            thinking_budget: self.thinking_budget,
            reasoning_model: self.reasoning_model.map(|r| matches!(r, YesNo::Yes)),
            think_tags: self.think_tags.clone().map(|t| t.0),
        }
    }
}

/// A model server assay starts for the run: every command that calls a model takes these.
#[derive(Args)]
pub struct ServeArgs {
    /// Start this model server for the run, and stop it when the run ends, fails or is
    /// interrupted (e.g. "vllm serve Qwen/Qwen2.5-Coder-7B-Instruct --port 8000"). Split as a
    /// shell splits it (leading NAME=value words set variables), run without a shell in a
    /// process group of its own, without the API keys; its output goes to the run directory's
    /// server.log. It is reached at --base-url, or at the --port its command names.
    #[arg(long, value_name = "COMMAND")]
    pub serve: Option<String>,
    /// Seconds the server may take to load its model and list it at /models.
    #[arg(long, value_name = "SECS", default_value_t = 900, requires = "serve",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub serve_timeout: u64,
}

impl ServeArgs {
    /// The server to start, if any.
    pub fn settings(&self) -> Option<ServeSettings> {
        self.serve.as_ref().map(|command| ServeSettings {
            command: command.clone(),
            ready_timeout: Duration::from_secs(self.serve_timeout),
        })
    }
}

/// What a model's provider allows and charges: every command that calls a model takes these.
#[derive(Args)]
pub struct ProviderArgs {
    /// Requests a minute at most, retries included, spread evenly over the minute (the
    /// provider's requests-per-minute limit).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub rpm: Option<u32>,
    /// Tokens a minute at most (the provider's tokens-per-minute limit): a request counts its
    /// prompt (estimated as characters / 4) and its token limit per answer until its answer
    /// reports what it used.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub tpm: Option<u64>,
    /// US dollars per million prompt tokens: the cost goes in the manifest, summary.json and
    /// the summary printed at the end (with --price-out).
    #[arg(long, value_name = "USD", requires = "price_out", value_parser = price)]
    pub price_in: Option<f64>,
    /// US dollars per million completion tokens (with --price-in).
    #[arg(long, value_name = "USD", requires = "price_in", value_parser = price)]
    pub price_out: Option<f64>,
}

impl ProviderArgs {
    /// `--rpm` (clap refuses 0).
    pub fn requests_per_minute(&self) -> Option<NonZeroU32> {
        self.rpm.and_then(NonZeroU32::new)
    }

    /// `--tpm` (clap refuses 0).
    pub fn tokens_per_minute(&self) -> Option<NonZeroU64> {
        self.tpm.and_then(NonZeroU64::new)
    }

    /// `--price-in` and `--price-out` (clap has them together or not at all).
    pub fn prices(&self) -> Option<Prices> {
        Some(Prices {
            prompt_usd_per_million: self.price_in?,
            completion_usd_per_million: self.price_out?,
        })
    }
}

/// A price in US dollars: a finite number, 0 or more.
fn price(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd >= 0.0 => Ok(usd),
        _ => Err("expected US dollars per million tokens: a number, 0 or more".into()),
    }
}

impl EngineArgs {
    /// The chosen environment, set up first (once) if it is not yet.
    pub async fn environment(&self) -> Result<Environment> {
        let env = self.select.locate()?;
        tokio::task::spawn_blocking(move || ready(env))
            .await
            .context("environment setup")?
    }

    /// How the sandbox runs jobs.
    pub fn settings(&self) -> EngineSettings {
        EngineSettings {
            isolation: match self.isolation {
                Isolation::Auto => IsolationMode::Auto,
                Isolation::Strict => IsolationMode::Strict,
            },
            jobs: self.jobs,
            max_jobs: self.max_jobs,
            workers: self.workers,
            network: self.allow_network,
            conditions: Conditions {
                listing: match self.listing_order {
                    Listing::Hashed => ListingOrder::Hashed,
                    Listing::Name => ListingOrder::Name,
                    Listing::Kernel => ListingOrder::Kernel,
                },
                ..Conditions::default()
            },
            visible: Vec::new(),
        }
    }
}

impl JudgingArgs {
    /// How samples are judged.
    pub fn settings(&self) -> JudgeSettings {
        JudgeSettings {
            calibrated: !self.no_calibrate,
            timeout: self.timeout,
            memory_mib: self.memory,
            guards: self.semantics.guards(),
            gamed_as_official: self.gamed_as_official,
            engine: self.engine.settings(),
            stability: self.stability,
        }
    }
}

impl ModelArgs {
    /// Which model answers, and how.
    pub fn settings(&self) -> ModelSettings {
        ModelSettings {
            model: self.model.clone(),
            base_url: self.model.as_deref().and_then(|model| self.api.base_url(model)),
            direct_completion: self.direct_completion,
            split: self.split.split(),
            n: self.n,
            temperature: self.temperature,
            top_p: self.top_p,
            max_tokens: self.max_tokens,
            concurrency: self.concurrency,
            request_timeout: self.api.request_timeout,
            retries: self.api.retries,
            requests_per_minute: self.api.provider.requests_per_minute(),
            tokens_per_minute: self.api.provider.tokens_per_minute(),
            prices: self.api.provider.prices(),
            serve: self.api.serve.settings(),
            reasoning: self.api.reasoning.settings(),
            extra_body: self.api.extra_body(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(
        shard: Option<&str>,
        count: Option<u32>,
        env: &[(&str, &str)],
    ) -> Result<Option<String>> {
        let args = ShardArgs {
            shard: shard.map(|s| s.parse().unwrap()),
            shard_count: count,
        };
        let found = args.resolve_from(|name| {
            env.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })?;
        Ok(found.map(|(shard, _)| shard.to_string()))
    }

    #[test]
    fn the_shard_comes_from_the_option_or_the_cluster() {
        assert_eq!(resolve(None, None, &[]).unwrap(), None);
        assert_eq!(
            resolve(Some("1/3"), None, &[("SLURM_ARRAY_TASK_ID", "0")])
                .unwrap()
                .unwrap(),
            "1/3"
        );
        let slurm = [
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ];
        assert_eq!(resolve(None, None, &slurm).unwrap().unwrap(), "2/4");
        // With SLURM_ARRAY_TASK_MAX, as Slurm sets it for a contiguous array (--array=1-4,
        // or 1-4%2: the limit changes nothing).
        let contiguous = [
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_MAX", "4"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("SLURM_ARRAY_TASK_STEP", "1"),
        ];
        assert_eq!(resolve(None, None, &contiguous).unwrap().unwrap(), "2/4");
        let k8s = [("JOB_COMPLETION_INDEX", "5")];
        assert_eq!(resolve(None, Some(8), &k8s).unwrap().unwrap(), "5/8");
        for (shard, count, env, says) in [
            (None, None, &k8s[..], "ASSAY_SHARD_COUNT"),
            (
                None,
                Some(4),
                &k8s[..],
                "JOB_COMPLETION_INDEX: shard 5 of 4 does not exist",
            ),
            (
                None,
                None,
                &[("SLURM_ARRAY_TASK_ID", "x")][..],
                "SLURM_ARRAY_TASK_ID=\"x\" is not a number",
            ),
            (
                None,
                None,
                &[("SLURM_ARRAY_TASK_ID", "2")][..],
                "SLURM_ARRAY_TASK_COUNT",
            ),
            (
                None,
                None,
                &[
                    ("SLURM_ARRAY_TASK_ID", "2"),
                    ("SLURM_ARRAY_TASK_COUNT", "4"),
                    ("SLURM_ARRAY_TASK_STEP", "2"),
                ][..],
                "step",
            ),
            // --array=0,3,5: three tasks over 0-5, so task 5 would be shard 5 of 3.
            (
                None,
                None,
                &[
                    ("SLURM_ARRAY_TASK_ID", "3"),
                    ("SLURM_ARRAY_TASK_MIN", "0"),
                    ("SLURM_ARRAY_TASK_MAX", "5"),
                    ("SLURM_ARRAY_TASK_COUNT", "3"),
                ][..],
                "not one contiguous range (SLURM_ARRAY_TASK_MIN 0, SLURM_ARRAY_TASK_MAX 5, \
                 SLURM_ARRAY_TASK_COUNT 3): submit it as --array=0-2",
            ),
            (
                None,
                None,
                &[
                    ("SLURM_ARRAY_TASK_ID", "3"),
                    ("SLURM_ARRAY_TASK_MIN", "0"),
                    ("SLURM_ARRAY_TASK_MAX", "x"),
                    ("SLURM_ARRAY_TASK_COUNT", "3"),
                ][..],
                "SLURM_ARRAY_TASK_MAX=\"x\" is not a number",
            ),
            (Some("1/3"), Some(4), &[][..], "disagree"),
        ] {
            let err = resolve(shard, count, env).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
    }
}
