//! `assay agents list|install|check`: the coding agents assay can run as the solver.

use std::path::PathBuf;

use anyhow::{Context, Result};
use assay_coding_agents::{install, installed, Declaration};
use assay_pyenv::Interpreter;
use clap::Subcommand;

use crate::args::EngineArgs;
use crate::progress::Spinner;

#[derive(Subcommand)]
pub enum AgentsCommand {
    /// List the built-in agents, and whether each is installed.
    ///
    /// For each: what it is, which API it speaks, and its pinned packages.
    List {
        /// The CPython 3.11 the agents' environments are built from (default: python3.11 or
        /// python3 on PATH).
        #[arg(long, value_name = "PATH", env = "ASSAY_PYTHON")]
        python: Option<PathBuf>,
    },
    /// Install an agent's pinned packages into assay's cache (nothing to do if they are).
    Install {
        /// A built-in agent's name, or a declaration file NAME.toml.
        agent: String,
        /// The CPython 3.11 the agents' environments are built from (default: python3.11 or
        /// python3 on PATH).
        #[arg(long, value_name = "PATH", env = "ASSAY_PYTHON")]
        python: Option<PathBuf>,
    },
    /// Check that an agent runs: installed if needed, then run once in the sandbox.
    ///
    /// A scripted model stands in for a real one, so no API key is needed: the agent must
    /// run one shell command and exit cleanly.
    Check {
        /// A built-in agent's name, or a declaration file NAME.toml.
        agent: String,

        #[command(flatten)]
        engine: EngineArgs,
    },
}

pub async fn run(cmd: AgentsCommand) -> Result<i32> {
    match cmd {
        AgentsCommand::List { python } => {
            let python = Interpreter::discover(python.as_deref())?;
            for declaration in Declaration::built_in() {
                let state = match installed(&declaration, &python)? {
                    Some(_) => "installed",
                    None => "not installed",
                };
                let packages = [&declaration.install.npm[..], &declaration.install.pypi[..]]
                    .concat()
                    .join(" ");
                println!("{:<16} {}", declaration.name, declaration.summary);
                println!(
                    "{:<16} speaks {}; {packages}; {state}",
                    "",
                    declaration.protocol.as_str()
                );
            }
            Ok(0)
        }
        AgentsCommand::Install { agent, python } => {
            let declaration = Declaration::find(&agent)?;
            let python = Interpreter::discover(python.as_deref())?;
            let agent = install(&declaration, &python, &Spinner::new()).await?;
            println!(
                "agent `{}` installed ({})",
                agent.declaration.name,
                agent
                    .visible
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            Ok(0)
        }
        AgentsCommand::Check { agent, engine } => {
            let declaration = Declaration::find(&agent)?;
            let python = Interpreter::discover(engine.select.python.as_deref())?;
            let agent = install(&declaration, &python, &Spinner::new()).await?;
            let env = engine.environment().await?;
            let report = assay_pipeline::agents::check(&agent, &env, &engine.settings())
                .await
                .context("checking the agent")?;
            let episode = &report.episode;
            let outcome = &episode.outcome;
            println!(
                "{}: {} model requests, {:.1} s, exit {}; answer {:?}",
                agent.declaration.name,
                episode.totals.requests,
                outcome.usage.wall.as_secs_f64(),
                outcome
                    .exit_code
                    .map_or_else(|| outcome.reason.clone(), |c| c.to_string()),
                episode.answer
            );
            match report.verdict {
                Ok(()) => {
                    println!("ok: it ran the command in the sandbox and exited cleanly");
                    Ok(0)
                }
                Err(why) => {
                    println!("FAILED: {why}");
                    let tail = |text: &str| {
                        let lines: Vec<&str> = text.lines().collect();
                        lines[lines.len().saturating_sub(20)..].join("\n")
                    };
                    println!(
                        "--- its stderr (last lines)\n{}",
                        tail(&outcome.stderr.text)
                    );
                    println!(
                        "--- its stdout (last lines)\n{}",
                        tail(&outcome.stdout.text)
                    );
                    Ok(1)
                }
            }
        }
    }
}
