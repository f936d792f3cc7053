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
    /// The built-in agents: what each is, what it speaks, its pinned packages, and whether
    /// it is installed.
    List {
        /// The base CPython 3.11 the agents' environments are made from.
        #[arg(long, env = "ASSAY_PYTHON")]
        python: Option<PathBuf>,
    },
    /// Install an agent's pinned packages into assay's cache (nothing if they are).
    Install {
        /// A built-in agent's name, or a declaration file (`NAME.toml`).
        agent: String,
        /// The base CPython 3.11 the agents' environments are made from.
        #[arg(long, env = "ASSAY_PYTHON")]
        python: Option<PathBuf>,
    },
    /// Install an agent if needed and run it once in the sandbox, driven by a scripted model
    /// through the gateway: it must run one shell command and exit cleanly. Needs no API key.
    Check {
        /// A built-in agent's name, or a declaration file (`NAME.toml`).
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
