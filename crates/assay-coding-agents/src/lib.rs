//! Coding agents as the solver: Codex, Claude Code, mini-swe-agent, or a user's own, each a
//! small declaration ([`Declaration`]: how it is installed, run on one prompt, configured to
//! talk to assay's gateway offline, and where its answer is read), installed pinned into
//! assay's cache ([`install`]) and run confined on one task ([`run_episode`]): its working
//! directory holds the task's files, its only way out is a loopback port whose connections the
//! sandbox hands to a [`assay_gateway::Gateway`] that holds the real key and the episode's
//! budgets.

mod declaration;
mod episode;
mod install;
mod scripted;

use std::path::PathBuf;

pub use declaration::{Answer, Declaration, Install, Run, Smoke, Values, Wire};
pub use episode::{run_episode, Episode, EpisodeSpec, ModelAccess, Timing};
pub use install::{install, installed, Installed};
pub use scripted::{ScriptedModel, CHECK_FILE, CHECK_TEXT};

/// What can go wrong with an agent before it runs.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No built-in agent has this name.
    #[error("unknown agent `{name}` (built in: {known}; or a declaration file NAME.toml)")]
    UnknownAgent {
        /// The name asked for.
        name: String,
        /// The built-in names, comma-separated.
        known: String,
    },
    /// A declaration that does not parse or holds something unusable.
    #[error("{}:{}{message}", file.display(), line.map(|l| format!("{l}: ")).unwrap_or_else(|| " ".into()))]
    Declaration {
        /// Its file.
        file: PathBuf,
        /// The line, when it is known.
        line: Option<usize>,
        /// What is wrong, naming the field.
        message: String,
    },
    /// Installing its packages failed.
    #[error("installing the agent: {0}")]
    Install(String),
    /// Its Python environment (or Node's) could not be set up.
    #[error(transparent)]
    Environment(#[from] assay_pyenv::Error),
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}
