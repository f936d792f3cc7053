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

/// The headings `--help` groups options under, in the words a user looks for them by.
/// Shared argument structs name theirs; a command's own options after a flattened struct
/// name theirs too, as clap's heading carries over to every option added after it.
pub mod heading {
    pub const TASKS: &str = "Tasks";
    pub const MODEL: &str = "Model";
    pub const MODEL_API: &str = "Model API";
    pub const MODEL_SERVER: &str = "Local model server";
    pub const THINKING: &str = "Thinking models";
    pub const AGENT: &str = "Coding agent";
    pub const EPISODES: &str = "Episodes";
    pub const EVALUATION: &str = "Evaluation";
    pub const JUDGING: &str = "Judging";
    pub const SANDBOX: &str = "Sandbox";
    pub const LIMITS: &str = "Limits";
    pub const OUTPUT: &str = "Output";
    pub const SHARDING: &str = "Sharding";
}

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
    /// The benchmark.
    // An Option only so that `assay run pybench` and `assay eval pybench`, which replace the
    // whole argument set, go without it: clap requires it everywhere else.
    #[arg(required = true)]
    pub benchmark: Option<Benchmark>,
    /// The dataset version.
    #[arg(long, default_value = VERSIONS[0], value_parser = clap::builder::PossibleValuesParser::new(VERSIONS),
          help_heading = heading::TASKS)]
    pub version: String,
    /// A dataset file to use instead of a built-in version: JSON lines in the Hugging Face
    /// schema (.jsonl or .jsonl.gz).
    #[arg(long, value_name = "FILE", help_heading = heading::TASKS)]
    pub dataset: Option<PathBuf>,
    /// Only these tasks: comma-separated ids, e.g. BigCodeBench/13,BigCodeBench/15.
    #[arg(long, value_name = "IDS", value_delimiter = ',', help_heading = heading::TASKS)]
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
#[command(next_help_heading = heading::SHARDING)]
pub struct ShardArgs {
    /// Run only shard I of N (I counts from 0), one part of a run split over machines;
    /// `assay merge` joins the shards.
    ///
    /// Tasks are dealt whole, in turn, in the order of their ids. Without --shard, a Slurm
    /// array task runs the shard of its index in the array (which must be one range with
    /// step 1, e.g. --array=0-7), and a pod of a Kubernetes Indexed Job the shard of its
    /// JOB_COMPLETION_INDEX (with --shard-count). See
    /// https://assay-eval.github.io/assay/guides/many-machines/.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// The number of shards of a Kubernetes Indexed Job (its `completions`).
    #[arg(long, value_name = "N", env = "ASSAY_SHARD_COUNT")]
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

/// Where a run's files go, and how its summary is printed.
#[derive(Args)]
#[command(next_help_heading = heading::OUTPUT)]
pub struct RunDirArgs {
    /// The run directory (default: runs/<benchmark>-<version>-<split>-<model>).
    ///
    /// The same command run again resumes it: nothing already answered or judged is asked or
    /// run again.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// How code runs, beyond the sandbox.
#[derive(Args)]
pub struct SemanticsArgs {
    /// Run code without the official harness's process guards.
    ///
    /// The guards let the code kill only its own subprocesses, skip shell commands that
    /// mention `kill`, ignore exec, and so on. Some official verdicts depend on them: a
    /// multiprocessing pool never exits under them, for one.
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
    /// The pinned Python package set evaluated code runs with: `bigcodebench`, `test` or
    /// `pybench` (PyBench always uses `pybench`).
    #[arg(long, value_name = "PROFILE", default_value_t = Profile::default_profile().name.to_string())]
    pub profile: String,
    /// The CPython 3.11 to build the environment from (default: python3.11 or python3 on
    /// PATH).
    #[arg(long, value_name = "PATH", env = "ASSAY_PYTHON")]
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

/// How the sandbox runs evaluated code. Its options are listed last where it is flattened:
/// their heading carries over to whatever comes after.
#[derive(Args, Clone)]
#[command(next_help_heading = heading::SANDBOX)]
pub struct EngineArgs {
    /// CPU slots: jobs computing at once (default: the number of CPUs).
    ///
    /// A job that waits (sleeps, or blocks on a subprocess or a socket) lends its slot to the
    /// next one.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Jobs at once at most, counting those that lent their slot (default: 8 x --jobs; equal
    /// to --jobs: no lending).
    #[arg(long, value_name = "N")]
    pub max_jobs: Option<usize>,
    /// Worker processes that start the jobs (default: one per 8 --jobs).
    ///
    /// Each starts about 60 jobs a second, from a Python with the benchmark's libraries
    /// already imported, and holds its own copy of them in memory.
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// How strictly evaluated code is isolated.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = Isolation::Auto)]
    pub isolation: Isolation,
    /// Give evaluated code the host's network (default: a private network with loopback
    /// only).
    #[arg(long)]
    pub allow_network: bool,
    /// The order in which evaluated code sees a directory's entries (os.listdir, os.scandir,
    /// glob, os.walk, pathlib).
    #[arg(long, value_enum, value_name = "ORDER", default_value_t = Listing::Hashed)]
    pub listing_order: Listing,
    #[command(flatten)]
    pub select: Select,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Listing {
    /// By a keyed hash of each name: as arbitrary as on the official image's disk, but the
    /// same on every machine (https://assay-eval.github.io/assay/parity/ says why).
    Hashed,
    /// By name.
    Name,
    /// The filesystem's own order (a tmpfs lists newest first).
    Kernel,
}

/// How samples are judged: what `assay eval` and `assay run` share.
#[derive(Args)]
#[command(next_help_heading = heading::EVALUATION)]
pub struct JudgingArgs {
    /// One time limit for every sample, in seconds (240 is the official harness's).
    ///
    /// Default: a budget per task, from the time its reference solution takes on this
    /// machine (https://assay-eval.github.io/assay/concepts/time-budgets/).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// Memory limit per sample, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 8192)]
    pub memory: u64,
    /// Run solutions as given, without the official calibration prefix.
    #[arg(long)]
    pub no_calibrate: bool,
    /// Judge samples that gamed their tests as the official harness does.
    ///
    /// A sample that skips its tests, patches unittest or ends a test early fails by default.
    /// With this flag it is judged from its failures and errors alone, as the official
    /// harness judges it (and is still counted and named). For exact parity studies.
    #[arg(long)]
    pub gamed_as_official: bool,
    #[command(flatten)]
    pub semantics: SemanticsArgs,
    /// After judging, run every sample N more times under changed conditions, and report the
    /// verdicts that changed.
    ///
    /// Each round changes one condition a verdict ought not to depend on (round 1: the
    /// directory listing order, 2: the random seeds, 3: timing and CPU load; then again with
    /// new values). The report names the samples whose verdict changed and what changed it,
    /// and gives pass@1's range.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub stability: u32,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Which model answers, and how it is asked.
#[derive(Args)]
#[command(next_help_heading = heading::MODEL)]
pub struct ModelArgs {
    /// The model that answers: `openai:NAME` (key in OPENAI_API_KEY; any OpenAI-compatible
    /// server with --base-url), `anthropic:NAME` (ANTHROPIC_API_KEY), or `reference` (the
    /// reference solutions).
    #[arg(long)]
    pub model: Option<String>,
    /// The prompt style.
    #[arg(long, value_enum, default_value_t = SplitArg::Complete)]
    pub split: SplitArg,
    /// Answers per task (greedy when 1).
    #[arg(short = 'n', long = "n-samples", default_value_t = 1)]
    pub n: u32,
    /// Sampling temperature (default: 0 for one answer, 0.8 for several).
    #[arg(long, value_name = "T")]
    pub temperature: Option<f64>,
    /// Nucleus sampling's top_p (default: 0.95 when sampling; not sent when greedy).
    #[arg(long, value_name = "P")]
    pub top_p: Option<f64>,
    /// Token limit per answer (default: 1280, the official one).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,
    /// For a base model: continue the Complete prompt through the completions endpoint, with
    /// the official stop strings (Complete split only).
    #[arg(long)]
    pub direct_completion: bool,
    /// Requests in flight at most.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub concurrency: usize,
    #[command(flatten)]
    pub api: ApiArgs,
}

/// How a model's API is reached: every command that calls a model takes these.
#[derive(Args)]
#[command(next_help_heading = heading::MODEL_API)]
pub struct ApiArgs {
    /// The API's base URL: for an OpenAI-compatible server with `/v1` (e.g.
    /// http://localhost:8000/v1 for vLLM), for Anthropic without (default: OPENAI_BASE_URL or
    /// ANTHROPIC_BASE_URL when set, as the providers' SDKs read them, else the provider's API).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Seconds one HTTP attempt may take.
    #[arg(long, value_name = "SECS", default_value_t = 300.0)]
    pub request_timeout: f64,
    /// Retries after a rate limit, a server error, a timeout or a broken connection.
    #[arg(long, value_name = "N", default_value_t = 6)]
    pub retries: u32,
    /// Fields to add to every request body: a JSON object, or @FILE holding one.
    ///
    /// For a server's own sampling settings that would otherwise apply unseen (`top_k`,
    /// `min_p`, `repetition_penalty`, `seed`), `chat_template_kwargs` for vLLM and SGLang, or
    /// a provider's own fields. They are part of the run's identity. A field assay sends
    /// itself is replaced only when --extra-body-replaces names it.
    #[arg(long, value_name = "JSON|@FILE", value_parser = extra_body)]
    pub extra_body: Option<serde_json::Map<String, serde_json::Value>>,
    /// Fields of --extra-body that replace those assay sends itself (`temperature`, `top_p`,
    /// `max_tokens`, `stop`...): the run is then not what assay's own settings say.
    #[arg(long, value_name = "KEY", value_delimiter = ',')]
    pub extra_body_replaces: Vec<String>,
    #[command(flatten)]
    pub provider: ProviderArgs,
    #[command(flatten)]
    pub serve: ServeArgs,
    #[command(flatten)]
    pub reasoning: ReasoningArgs,
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
            base_url: self.base_url.clone(),
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
#[command(next_help_heading = heading::THINKING)]
pub struct ReasoningArgs {
    /// How hard a reasoning model thinks, on OpenAI and compatible servers: none, minimal,
    /// low, medium, high or xhigh (each model takes some of them).
    #[arg(long, value_name = "EFFORT", value_parser = effort)]
    pub reasoning_effort: Option<Effort>,
    /// Extended thinking for Anthropic models, with this many tokens to think (at least
    /// 1024).
    ///
    /// They come on top of the answer's --max-tokens. No temperature is sent with it:
    /// Anthropic allows none.
    #[arg(long, value_name = "TOKENS")]
    pub thinking_budget: Option<u32>,
    /// Whether the model is one of OpenAI's reasoning models, which take no temperature,
    /// top_p or token limit, when its name does not say (o1, o3, o4, gpt-5 and *-reasoner
    /// names do).
    #[arg(long, value_enum, value_name = "YES|NO")]
    pub reasoning_model: Option<YesNo>,
    /// The tags a model writes its thinking between: the thinking is set apart from the
    /// answer before the answer is judged.
    ///
    /// OPEN,CLOSE pairs separated by `;` (`,</think>` when the chat template opens the
    /// thinking itself), or `none`. Default: the forms open models use (<think>, <thinking>,
    /// <|begin_of_thought|>, ◁think▷, <seed:think>, [THINK]). See
    /// https://assay-eval.github.io/assay/guides/thinking-models/.
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
#[command(next_help_heading = heading::MODEL_SERVER)]
pub struct ServeArgs {
    /// Start this model server for the run, e.g. "vllm serve Qwen/Qwen2.5-Coder-7B-Instruct
    /// --port 8000"; it is stopped when the run ends, fails or is interrupted.
    ///
    /// The command is split into words as a shell splits it (leading NAME=value words set
    /// variables) and run without a shell and without the API keys; its output goes to
    /// server.log in the run directory. assay reaches it at --base-url, or at the --port its
    /// command names. See https://assay-eval.github.io/assay/guides/local-model/.
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
    /// Requests a minute at most (the provider's limit), retries included, spread evenly
    /// over the minute.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub rpm: Option<u32>,
    /// Tokens a minute at most (the provider's limit).
    ///
    /// A request counts its prompt (estimated at 4 characters a token) and its token limit
    /// until its answer says what it used.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub tpm: Option<u64>,
    /// US dollars per million prompt tokens, to report the cost (with --price-out).
    ///
    /// The cost goes in the run's manifest and summary, and in the summary printed at the
    /// end.
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
            base_url: self.api.base_url.clone(),
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
