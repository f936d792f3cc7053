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

use crate::args::{ApiArgs, EngineArgs, ShardArgs};
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
    /// Upstream's tests with their bugs corrected (docs/pybench.md lists each).
    Fixed,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ProtocolArg {
    /// Upstream's: code in a ```python block of the reply.
    Markdown,
    /// Native tool calls (a `python` tool).
    Tools,
}

/// What both PyBench commands share.
#[derive(Args)]
pub struct Common {
    /// The task data: a folder in upstream's layout (data/meta/task.json and the input files
    /// under data/). Default: $ASSAY_PYBENCH_DATA, else the data `assay data pybench` put in
    /// assay's cache, fetched first (as that command does) if it is not there.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Only these tasks (comma-separated indices or ids: 3,PyBench/15).
    #[arg(long, value_delimiter = ',')]
    pub tasks: Vec<String>,
    #[command(flatten)]
    pub shard: ShardArgs,
    /// Which verdict heads the results (both are recorded).
    #[arg(long, value_enum, default_value_t = ChecksArg::Faithful)]
    pub checks: ChecksArg,
    /// The run directory (default: runs/pybench-<checks>-<protocol>-<model>). Rerunning the
    /// same command resumes it.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Args)]
pub struct RunArgs {
    /// The agent's model: `openai:MODEL` (OPENAI_API_KEY; with --base-url any
    /// OpenAI-compatible server), `anthropic:MODEL` (ANTHROPIC_API_KEY), or `replay:FILE` (the
    /// replies of an upstream trajectory file, in order, whatever the observations say).
    #[arg(long)]
    pub model: String,
    #[command(flatten)]
    pub api: ApiArgs,
    /// How the agent's code reaches the interpreter.
    #[arg(long, value_enum, default_value_t = ProtocolArg::Markdown)]
    pub protocol: ProtocolArg,
    /// Replies an episode may have.
    #[arg(long, default_value_t = 10)]
    pub max_turns: u32,
    /// Token limit of a reply (default: upstream's 1000; with --agent, 8192, as coding
    /// agents write whole files in one reply). A thinking model can spend that much thinking:
    /// its reply then ends inside its thinking, with no code and no answer.
    #[arg(long)]
    pub max_tokens: Option<u32>,
    /// A coding agent that solves each task instead of upstream's loop: `codex`,
    /// `claude-code`, `mini-swe-agent` (see `assay agents list`), or a declaration file
    /// `NAME.toml`; installed first if it is not. Its model requests are the turns
    /// (--max-turns bounds them).
    #[arg(long)]
    pub agent: Option<String>,
    /// With --agent: seconds an episode may take, the agent's commands included.
    #[arg(long, default_value_t = 1200)]
    pub agent_timeout: u64,
    /// With --agent: tokens an episode's model requests may use (prompt and reply, as the
    /// provider counts them); past them the agent is ended and judged on what it produced.
    #[arg(long)]
    pub agent_tokens: Option<u64>,
    /// Seconds a cell may run before it is interrupted (KeyboardInterrupt).
    #[arg(long, default_value_t = 120)]
    pub cell_timeout: u64,
    /// Characters of a cell's output the model reads (head and tail kept; 0: everything, as
    /// upstream).
    #[arg(long, default_value_t = 20_000)]
    pub observation_chars: usize,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args)]
pub struct EvalArgs {
    /// Recorded trajectories: upstream's trajectory.jsonl format (`index`, `messages`).
    #[arg(long)]
    pub trajectories: PathBuf,
    /// The run's output folder (upstream's ./output/); without it, checks that read output
    /// files are `infra`.
    #[arg(long)]
    pub outputs: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

pub async fn run(args: RunArgs) -> Result<i32> {
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
        Some(data) => data,
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
