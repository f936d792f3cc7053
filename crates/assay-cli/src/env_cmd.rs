//! `assay env setup`, `assay env status` and `assay env path`.

use std::path::PathBuf;

use anyhow::Result;
use assay_pyenv::{EnvStatus, Environment, Interpreter, Marker, Profile};
use clap::Subcommand;

use crate::args::Select;
use crate::progress::Spinner;

#[derive(Subcommand)]
pub enum EnvCommand {
    /// Set up a profile's Python environment in assay's cache, or finish one cut short.
    ///
    /// Commands that run code set up the environment they need themselves; this does it
    /// ahead of time, e.g. before going offline. Run again, it finds the environment ready
    /// and does nothing.
    Setup {
        #[command(flatten)]
        select: Select,
    },
    /// Print where a profile's environment is.
    ///
    /// Its interpreter is DIR/bin/python, for a script that runs a program installed in it.
    Path {
        #[command(flatten)]
        select: Select,
    },
    /// Show which profiles are installed for the chosen interpreter, and where.
    Status {
        /// The CPython 3.11 whose environments to show (default: python3.11 or python3 on
        /// PATH).
        #[arg(long, value_name = "PATH", env = "ASSAY_PYTHON")]
        python: Option<PathBuf>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: EnvCommand) -> Result<()> {
    match cmd {
        EnvCommand::Setup { select } => {
            let env = select.locate()?;
            if let EnvStatus::Complete(m) = env.status() {
                let m = if env.missing_data(&m).is_empty() {
                    *m
                } else {
                    env.fetch_missing_data(&Spinner::new())?
                };
                println!(
                    "profile `{}` is complete at {} ({} packages, Python {}){}",
                    m.profile,
                    env.dir.display(),
                    m.packages.len(),
                    m.python_version,
                    data_note(&env, &m)
                );
                return Ok(());
            }
            let marker = env.setup(&Spinner::new())?;
            println!(
                "profile `{}` ready at {} ({} packages via {}, {:.0} s){}",
                marker.profile,
                env.dir.display(),
                marker.packages.len(),
                marker.installer,
                marker.setup_seconds,
                data_note(&env, &marker)
            );
            Ok(())
        }
        EnvCommand::Path { select } => {
            let env = select.locate()?;
            if !matches!(env.status(), EnvStatus::Complete(_)) {
                anyhow::bail!(
                    "profile `{0}` is not set up for this Python: run `assay env setup --profile {0}`",
                    env.profile.name
                );
            }
            println!("{}", env.dir.display());
            Ok(())
        }
        EnvCommand::Status { python, json } => status(python, json),
    }
}

/// What the summary line says about NLTK data that could not be fetched.
fn data_note(env: &Environment, marker: &Marker) -> String {
    match env.missing_data(marker) {
        missing if missing.is_empty() => String::new(),
        missing => format!(
            "; NLTK data missing: {} (tasks needing it are `infra`)",
            missing.join(", ")
        ),
    }
}

fn status(python: Option<PathBuf>, json: bool) -> Result<()> {
    let interpreter = Interpreter::discover(python.as_deref())?;
    let mut rows = Vec::new();
    for profile in Profile::ALL {
        let row = match Environment::locate(*profile, interpreter.clone()) {
            Ok(env) => {
                let (state, marker) = match env.status() {
                    EnvStatus::Missing => ("missing", None),
                    EnvStatus::Incomplete => ("incomplete", None),
                    EnvStatus::Complete(m) => ("complete", Some(m)),
                };
                serde_json::json!({
                    "profile": profile.name, "status": state, "path": env.dir,
                    "packages": marker.as_ref().map(|m| m.packages.len()),
                    "pinned": profile.package_count(),
                    "nltk_data": marker.as_ref().map(|m| &m.nltk_data),
                    "note": marker.as_ref().map(|m| data_note(&env, m)).unwrap_or_default(),
                })
            }
            Err(e) => serde_json::json!({
                "profile": profile.name, "status": "unavailable", "reason": e.to_string(),
            }),
        };
        rows.push(row);
    }
    if json {
        let doc = serde_json::json!({
            "python": {"executable": interpreter.executable, "version": interpreter.version_string()},
            "profiles": rows,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    println!(
        "Python {} ({})",
        interpreter.version_string(),
        interpreter.executable.display()
    );
    for row in &rows {
        let name = row["profile"].as_str().unwrap_or_default();
        let state = row["status"].as_str().unwrap_or_default();
        let detail = match state {
            "complete" => format!(
                "{} packages at {}{}",
                row["packages"],
                row["path"].as_str().unwrap_or(""),
                row["note"].as_str().unwrap_or("")
            ),
            "unavailable" => row["reason"].as_str().unwrap_or("").to_string(),
            _ => format!("run `assay env setup --profile {name}`"),
        };
        println!("  {name:<14} {state:<11} {detail}");
    }
    Ok(())
}
