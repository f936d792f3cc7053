//! Isolated Python environments for assay.
//!
//! assay runs untrusted Python against pinned third-party libraries. Those libraries must not be
//! whatever happens to be installed on the machine: a benchmark's verdicts depend on exact
//! versions (a numpy or scipy bump flips tests). This crate owns that environment:
//!
//! * [`Interpreter`] finds the base CPython to build on (`--python`, `ASSAY_PYTHON`, then
//!   `python3.11` / `python3` on `PATH`) and resolves launcher shims such as pyenv's to the real
//!   binary, because a shim adds ~150 ms to every start.
//! * [`Profile`] is a named, pinned requirement set embedded in the binary, plus the modules
//!   worth pre-importing in the sandbox's worker processes.
//! * [`Environment`] is one profile installed for one interpreter in the user's cache directory
//!   (`$XDG_CACHE_HOME/assay/envs/...`). [`Environment::setup`] creates it with `uv` (found on
//!   `PATH` or bootstrapped from PyPI) or falls back to `venv` + `pip`; it is idempotent, holds a
//!   file lock so concurrent callers wait instead of racing, and writes a completion marker
//!   last, so a half-installed environment is never mistaken for a complete one.
//! * [`nltk`] fetches the NLTK data a profile's tasks load at run time into the environment.

pub mod bounded;
mod cache;
pub mod child_env;
mod environment;
pub mod flock;
mod install;
mod interpreter;
pub mod nltk;
mod profile;

pub use cache::cache_root;
pub use environment::{EnvStatus, Environment, Marker};
pub use install::{SetupObserver, SilentObserver};
pub use interpreter::Interpreter;
pub use profile::{Profile, Program, NPM_CLI, SMOLLM2};

use std::path::PathBuf;

/// Everything that can go wrong while finding or building a Python environment.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No candidate interpreter is on `PATH`; the message says which were tried.
    #[error("no Python interpreter found: {0}")]
    NoInterpreter(String),
    /// Probing the interpreter failed: it did not run, answered nonsense, or is not CPython.
    #[error("{path}: not a usable Python interpreter: {reason}")]
    BadInterpreter {
        /// The interpreter as given.
        path: PathBuf,
        /// What the probe found wrong.
        reason: String,
    },
    /// The interpreter's `major.minor` is not the one the profile's pins were resolved for.
    #[error(
        "profile `{profile}` needs Python {need}, but {path} is Python {found}; \
         choose another interpreter with --python PATH or ASSAY_PYTHON"
    )]
    WrongVersion {
        /// The profile's name.
        profile: String,
        /// The Python release the profile needs, `X.Y`.
        need: String,
        /// The interpreter's full version, `X.Y.Z`.
        found: String,
        /// The interpreter's executable.
        path: PathBuf,
    },
    /// No profile has this name; holds the name asked for and the known names, comma-separated.
    #[error("unknown profile `{0}` (known: {1})")]
    UnknownProfile(String, String),
    /// None of `ASSAY_CACHE_DIR`, `XDG_CACHE_HOME` (if absolute) or `HOME` is set.
    #[error("cannot determine a cache directory: set XDG_CACHE_HOME, HOME or ASSAY_CACHE_DIR")]
    NoCacheDir,
    /// A setup step (an installer run, the import check, the lock, an NLTK download) failed.
    #[error("{step} failed: {detail}")]
    Install {
        /// What was being done, e.g. `checking imports`.
        step: String,
        /// Why it failed, with the tail of the command's stderr when there is one.
        detail: String,
    },
    /// Reading or writing a file or directory of the environment failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// `Result` with this crate's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
