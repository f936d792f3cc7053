//! `assay run bigcodebench[-hard]`: generate and evaluate at once (each answer judged as soon as
//! it arrives), into one run directory. Without
//! `--model` the canonical solutions answer: the whole pipeline checked, offline.

use std::time::Duration;

use anyhow::{bail, Result};
use assay_coding_agents::{install, Declaration};
use assay_pipeline::agents::CodingAgent;
use assay_pipeline::run::{run as run_pipeline, RunRequest};
use assay_pyenv::Interpreter;
use clap::Args;
use serde_json::json;

use crate::args::{heading, DatasetArgs, JudgingArgs, ModelArgs, RunDirArgs, ShardArgs};
use crate::print;
use crate::progress::{Progress, Spinner};
use crate::secrets;

/// The other benchmark, with its own options.
#[derive(clap::Subcommand)]
pub enum PybenchRun {
    /// Run PyBench: a model works on data files in a Python session; checks judge the result.
    ///
    /// In each episode the model drives a persistent interpreter over the task's input files
    /// for up to ten turns; unit checks then judge what it produced. The same command resumes
    /// the run. See https://assay-eval.github.io/assay/pybench/.
    Pybench(Box<crate::pybench_cmd::RunArgs>),
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct RunArgs {
    #[command(subcommand)]
    pub pybench: Option<PybenchRun>,
    #[command(flatten)]
    pub tasks: DatasetArgs,
    #[command(flatten)]
    pub model: ModelArgs,
    /// A coding agent to write each answer instead of the model replying: `codex`,
    /// `claude-code`, `mini-swe-agent`, or a declaration file NAME.toml.
    ///
    /// The agent works in a workspace of its own and writes solution.py, which is judged as
    /// a model's answer is. It is installed first if it is not (`assay agents list` shows
    /// them). --max-tokens then defaults to 8192.
    #[arg(long, value_name = "AGENT", help_heading = heading::AGENT)]
    pub agent: Option<String>,
    /// With --agent: model requests an episode may make.
    #[arg(long, value_name = "N", default_value_t = 30, help_heading = heading::AGENT)]
    pub max_turns: u32,
    /// With --agent: seconds an episode may take, the agent's commands included.
    #[arg(long, value_name = "SECS", default_value_t = 600, help_heading = heading::AGENT)]
    pub agent_timeout: u64,
    /// With --agent: tokens an episode's model requests may use (prompts and replies, as the
    /// provider counts them); past them the agent is stopped and judged on what it produced.
    #[arg(long, value_name = "N", help_heading = heading::AGENT)]
    pub agent_tokens: Option<u64>,
    #[command(flatten)]
    pub judging: JudgingArgs,
    #[command(flatten)]
    pub run_dir: RunDirArgs,
    #[command(flatten)]
    pub shard: ShardArgs,
}

/// A coding agent's token limit per reply when --max-tokens is not given.
const AGENT_MAX_TOKENS: u32 = 8192;

pub async fn run(args: RunArgs) -> Result<i32> {
    // Said before the agent's install and the environment's setup (minutes, the first time).
    if let Some(out) = &args.run_dir.out {
        assay_rundir::check_place(out)?;
    }
    let mut settings = args.model.settings();
    let agent = match &args.agent {
        Some(name) => {
            if !(1..=24 * 60 * 60).contains(&args.agent_timeout) {
                bail!("--agent-timeout must be from 1 to 86400 seconds");
            }
            settings.max_tokens = settings.max_tokens.or(Some(AGENT_MAX_TOKENS));
            let declaration = Declaration::find(name)?;
            let python = Interpreter::discover(args.judging.engine.select.python.as_deref())?;
            let agent = install(&declaration, &python, &Spinner::new()).await?;
            let wall = Duration::from_secs(args.agent_timeout);
            let tokens = args.agent_tokens;
            Some((
                CodingAgent {
                    agent,
                    wall,
                    tokens,
                },
                args.max_turns,
            ))
        }
        None => None,
    };
    let chosen = settings.choose(true, secrets::key)?;
    let tasks = args.tasks.selection(args.shard.resolve()?);
    if args.model.model.is_none() && !args.run_dir.json {
        let benchmark = tasks.benchmark();
        eprintln!(
            "assay: no --model: the reference solutions answer (a self-check of the pipeline). \
             To evaluate a model: assay run {benchmark} --model openai:MODEL [--base-url URL] \
             or --model anthropic:MODEL"
        );
    }
    let judge = args.judging.settings();
    judge.validate()?;
    let request = RunRequest {
        tasks: tasks.clone(),
        chosen,
        out: args.run_dir.out,
        judge,
        env: args.judging.engine.environment().await?,
        agent,
    };
    let mut progress = Progress::new(args.run_dir.json);
    let report = run_pipeline(request, &mut progress).await;
    drop(progress);
    let report = report?;
    if args.run_dir.json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &json!({"generation": report.generation, "evaluation": report.evaluation})
            )?
        );
    } else {
        print::evaluation(
            tasks.benchmark(),
            report.split,
            &tasks.source(),
            &report.evaluation,
            &report.dir,
        );
    }
    Ok(i32::from(!report.generation.unanswered.is_empty()))
}
