//! `assay run pybench` (an agent's episodes, then their checks) and `assay eval pybench`
//! (recorded trajectories judged), each into a resumable run directory.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use assay_agent::pybench::checks::Mode;
use assay_agent::pybench::{EpisodeSettings, Protocol};
use assay_coding_agents::{install, Declaration};
use assay_pipeline::pybench::{pybench, CodingAgent, PybenchRequest, Source};
use assay_pipeline::pybench_data::{self, fetch, FetchRequest};
use assay_pyenv::{Interpreter, Profile};
use assay_tasks::pybench::{PyBench, DATA_ENV, REPO_ENV, TASK_FILE, UPSTREAM_COMMIT};
use clap::{Args, ValueEnum};

use crate::args::{heading, ApiArgs, EngineArgs, ShardArgs};
use crate::print;
use crate::progress::{Progress, Spinner};

/// The longest cell time limit taken: a day.
const MAX_CELL_SECONDS: u64 = 24 * 60 * 60;
/// A coding agent's token limit per reply by default.
const AGENT_MAX_TOKENS: u32 = 8192;

#[derive(Clone, Copy, ValueEnum)]
pub enum ChecksArg {
    /// Upstream's unit tests as they are, bugs included: numbers comparable to the paper.
    Faithful,
    /// Upstream's tests with their bugs corrected
    /// (https://assay-eval.github.io/assay/pybench/ lists each).
    Fixed,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ProtocolArg {
    /// Upstream's: code in a fenced python block of the reply.
    Markdown,
    /// Native tool calls (a `python` tool).
    Tools,
}

/// What both PyBench commands share, flattened last: the sandbox's heading carries over.
#[derive(Args)]
pub struct Common {
    /// The task data: a folder in upstream's layout (data/meta/task.json, and the input files
    /// under data/).
    ///
    /// Default: $ASSAY_PYBENCH_DATA, else the data `assay data pybench` fetches into assay's
    /// cache (fetched first if it is not there).
    #[arg(long, value_name = "DIR", help_heading = heading::TASKS)]
    pub data: Option<PathBuf>,
    /// Only these tasks: comma-separated indices or ids, e.g. 3,PyBench/15.
    #[arg(long, value_name = "IDS", value_delimiter = ',', help_heading = heading::TASKS)]
    pub tasks: Vec<String>,
    /// Which checks' verdicts the results lead with (both are recorded).
    #[arg(long, value_enum, default_value_t = ChecksArg::Faithful,
          help_heading = heading::EVALUATION)]
    pub checks: ChecksArg,
    /// The run directory (default: runs/pybench-<checks>-<protocol>-<model>).
    ///
    /// The same command run again resumes it.
    #[arg(long, value_name = "DIR", help_heading = heading::OUTPUT)]
    pub out: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long, help_heading = heading::OUTPUT)]
    pub json: bool,
    #[command(flatten)]
    pub shard: ShardArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Args)]
pub struct RunArgs {
    /// The model: `openai:NAME` (key in OPENAI_API_KEY; any OpenAI-compatible server with
    /// --base-url), `anthropic:NAME` (ANTHROPIC_API_KEY), or `replay:FILE` (the replies of an
    /// upstream trajectory file, in order, whatever the observations say).
    #[arg(long, help_heading = heading::MODEL)]
    pub model: String,
    /// Token limit of a reply (default: upstream's 1000; with --agent, 8192, as coding agents
    /// write whole files in one reply).
    ///
    /// A thinking model can spend all of it thinking: its reply then ends inside its
    /// thinking, with no code and no answer.
    #[arg(long, value_name = "N", help_heading = heading::MODEL)]
    pub max_tokens: Option<u32>,
    #[command(flatten)]
    pub api: ApiArgs,
    /// How the model's code reaches the interpreter.
    #[arg(long, value_enum, default_value_t = ProtocolArg::Markdown,
          help_heading = heading::EPISODES)]
    pub protocol: ProtocolArg,
    /// Replies an episode may have.
    #[arg(long, value_name = "N", default_value_t = 10, help_heading = heading::EPISODES)]
    pub max_turns: u32,
    /// Seconds a cell may run before it is interrupted (KeyboardInterrupt).
    #[arg(long, value_name = "SECS", default_value_t = 120, help_heading = heading::EPISODES)]
    pub cell_timeout: u64,
    /// Characters of a cell's output the model reads (its head and tail kept; 0: all of it,
    /// as upstream).
    #[arg(long, value_name = "N", default_value_t = 20_000, help_heading = heading::EPISODES)]
    pub observation_chars: usize,
    /// A coding agent to solve each task instead of upstream's loop: `codex`, `claude-code`,
    /// `mini-swe-agent`, or a declaration file NAME.toml.
    ///
    /// It is installed first if it is not (`assay agents list` shows them). Its model
    /// requests are the turns, which --max-turns bounds.
    #[arg(long, value_name = "AGENT", help_heading = heading::AGENT)]
    pub agent: Option<String>,
    /// With --agent: seconds an episode may take, the agent's commands included.
    #[arg(long, value_name = "SECS", default_value_t = 1200, help_heading = heading::AGENT)]
    pub agent_timeout: u64,
    /// With --agent: tokens an episode's model requests may use (prompts and replies, as the
    /// provider counts them); past them the agent is stopped and judged on what it produced.
    #[arg(long, value_name = "N", help_heading = heading::AGENT)]
    pub agent_tokens: Option<u64>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args)]
pub struct EvalArgs {
    /// The recorded trajectories, in upstream's trajectory.jsonl format (`index`,
    /// `messages`).
    #[arg(long, value_name = "FILE")]
    pub trajectories: PathBuf,
    /// The folder of files the recorded run wrote (upstream's ./output/).
    ///
    /// Without it, the checks that read those files cannot run, and count as `infra`.
    #[arg(long, value_name = "DIR")]
    pub outputs: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

pub async fn run(args: RunArgs) -> Result<i32> {
    // Said before the agent's install, the data's fetch and the environment's setup.
    if let Some(out) = &args.common.out {
        assay_rundir::check_place(out)?;
    }
    if !(1..=MAX_CELL_SECONDS).contains(&args.cell_timeout) {
        bail!("--cell-timeout must be from 1 to {MAX_CELL_SECONDS} seconds");
    }
    let agent = match &args.agent {
        Some(name) => {
            if !(1..=MAX_CELL_SECONDS).contains(&args.agent_timeout) {
                bail!("--agent-timeout must be from 1 to {MAX_CELL_SECONDS} seconds");
            }
            let declaration = Declaration::find(name)?;
            let python = Interpreter::discover(args.common.engine.select.python.as_deref())?;
            Some(Box::new(CodingAgent {
                agent: install(&declaration, &python, &Spinner::new()).await?,
                wall: Duration::from_secs(args.agent_timeout),
                tokens: args.agent_tokens,
            }))
        }
        None => None,
    };
    let max_tokens = args.max_tokens.unwrap_or(match agent {
        Some(_) => AGENT_MAX_TOKENS,
        None => assay_agent::pybench::model::MAX_TOKENS,
    });
    let source = Source::Episodes {
        agent,
        access: Box::new(args.api.access(&args.model)),
        model: args.model,
        settings: EpisodeSettings {
            protocol: match args.protocol {
                ProtocolArg::Markdown => Protocol::Markdown,
                ProtocolArg::Tools => Protocol::Tools,
            },
            max_turns: args.max_turns,
            reply_tokens: max_tokens,
            cell_timeout: Duration::from_secs(args.cell_timeout),
            observation_chars: args.observation_chars,
        },
    };
    execute(args.common, source).await
}

pub async fn eval(args: EvalArgs) -> Result<i32> {
    // A mistyped path is said before the data is fetched (the pipeline reads the file later).
    std::fs::metadata(&args.trajectories)
        .with_context(|| format!("--trajectories {}", args.trajectories.display()))?;
    if let Some(out) = &args.common.out {
        assay_rundir::check_place(out)?;
    }
    let source = Source::Recorded {
        trajectories: args.trajectories,
        outputs: args.outputs,
    };
    execute(args.common, source).await
}

async fn execute(common: Common, source: Source) -> Result<i32> {
    let mut engine = common.engine;
    engine.select.profile = Profile::by_name("pybench")?.name.to_string();
    let checks = match common.checks {
        ChecksArg::Faithful => Mode::Faithful,
        ChecksArg::Fixed => Mode::Fixed,
    };
    let shard = common.shard.resolve()?;
    // After the checks that cost nothing: fetching the data takes minutes.
    let data = match PyBench::folder(common.data.as_deref()) {
        Some(data) => named_data(data, common.data.is_some())?,
        None => fetched_data().await?,
    };
    let request = PybenchRequest {
        data,
        tasks: common.tasks,
        shard,
        checks,
        out: common.out,
        env: engine.environment().await?,
        engine: engine.settings(),
        source,
    };
    let mut progress = Progress::new(common.json);
    let report = pybench(request, &mut progress).await;
    drop(progress);
    let report = report?;
    if common.json {
        println!("{}", serde_json::to_string_pretty(&report.summary)?);
    } else {
        print::pybench(&report.summary, &report.dir);
    }
    if report.unfinished > 0 {
        eprintln!(
            "assay: the model or the harness failed for good on {} tasks (recorded as infra); \
             rerun the same command to run them again",
            report.unfinished
        );
    }
    Ok(i32::from(report.unfinished > 0))
}

/// The data folder --data (`flag`) or $ASSAY_PYBENCH_DATA names, refused before the
/// environment's setup when it holds no task list: the way to the data assay's checks were
/// written against is `assay data pybench`, which the message says.
fn named_data(data: PathBuf, flag: bool) -> Result<PathBuf> {
    if data.join(TASK_FILE).is_file() {
        return Ok(data);
    }
    let named = if flag {
        format!("--data {}", data.display())
    } else {
        format!("{DATA_ENV}={}", data.display())
    };
    let unset = if flag { "leave out --data" } else { "unset it" };
    bail!(
        "{named} holds no PyBench data (no {TASK_FILE} there): `assay data pybench` fetches \
         upstream's data at commit {UPSTREAM_COMMIT}, the one assay's checks were written \
         against, into assay's cache; then {unset}, or pass --data the folder `assay data \
         pybench --into DIR` made"
    )
}

/// The data when neither --data nor $ASSAY_PYBENCH_DATA names it: what `assay data pybench`
/// put in assay's cache, else upstream's commit fetched there now (from $ASSAY_PYBENCH_REPO
/// if set), each said on stderr (stdout may be --json's).
async fn fetched_data() -> Result<PathBuf> {
    if let Some((dir, commit)) = pybench_data::cached()? {
        let note = if commit == UPSTREAM_COMMIT {
            String::new()
        } else {
            format!(
                "; not {UPSTREAM_COMMIT}, upstream's commit assay's checks were written against"
            )
        };
        eprintln!(
            "assay: no --data given: using PyBench's data at {} (commit {commit}{note})",
            dir.display()
        );
        return Ok(dir);
    }
    let request = FetchRequest::upstream();
    eprintln!(
        "assay: no --data given: fetching PyBench's data from {} at {} into {} (same as \
         `assay data pybench`)",
        request.from,
        request.commit,
        request.target()?.display()
    );
    let fetched = tokio::task::spawn_blocking(move || fetch(&request, &Spinner::new()))
        .await
        .context("fetching PyBench's data")?
        .with_context(|| {
            format!(
                "no --data given, and PyBench's data could not be fetched: pass --data DIR \
                 (a folder in upstream's layout, with {TASK_FILE}), set {DATA_ENV}, or name a \
                 mirror in {REPO_ENV}"
            )
        })?;
    eprint!("{}", print::pybench_data(&fetched));
    Ok(fetched.dir)
}
