//! The environment fingerprint: what verdicts depend on beyond the run's settings, written to
//! the manifest by every run that executes code. Shards run on different machines are one run
//! only if their fingerprints are equal, so `assay merge` compares them field by field, and a
//! run resumed on another machine must match the one that started it.

use serde::{Deserialize, Serialize};

use crate::isolation::{Enforcement, IsolationLevel};

/// The machine-side facts a verdict depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// The sandbox's Python, `X.Y.Z`.
    pub python: String,
    /// The environment's profile (`bigcodebench`, `pybench`, ...).
    pub profile: String,
    /// Digest of the installed distributions' sorted `name==version` lines: the locked set
    /// as installed, not as asked for.
    pub packages: String,
    /// How many distributions that is (to read, beside the digest).
    pub package_count: usize,
    /// The NLTK data packages installed (tasks needing others are judged `infra`).
    pub nltk_data: Vec<String>,
    /// Whether jobs had the host's network.
    pub network: bool,
    /// The isolation every job reached.
    pub isolation: IsolationLevel,
    /// How memory limits were enforced (a cgroup counts a tree's resident memory, rlimits
    /// each process's address space: a sample can pass under one and fail under the other).
    pub memory_limit: Enforcement,
}
