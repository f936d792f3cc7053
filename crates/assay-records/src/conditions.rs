//! The conditions a job runs under that its code ought not to depend on: the order directory
//! listings come in and the seeds of unseeded randomness. assay fixes them on purpose, so that a
//! verdict does not depend on the machine or the run, and a stability rerun changes them on
//! purpose, to find the samples whose verdict does (the sandbox's `conditions.py` applies them).

use serde::{Deserialize, Serialize};

/// The order in which a job's Python sees directory entries (`os.listdir`, `os.scandir` and
/// everything built on them: `os.walk`, `glob`, `pathlib`, `shutil`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ListingOrder {
    /// By a keyed hash of each name: arbitrary, as ext4's order (which the official image's
    /// disk gives) is, but the same on every machine for the same key.
    #[default]
    Hashed,
    /// Sorted by name.
    Name,
    /// The filesystem's own order: a tmpfs lists newest first.
    Kernel,
}

impl ListingOrder {
    /// The name the command line and the records use.
    pub fn as_str(self) -> &'static str {
        match self {
            ListingOrder::Hashed => "hashed",
            ListingOrder::Name => "name",
            ListingOrder::Kernel => "kernel",
        }
    }
}

/// What a job's code ought not to depend on, as the engine sets it for every job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Conditions {
    /// How directory listings are ordered.
    pub listing: ListingOrder,
    /// The key of a [`ListingOrder::Hashed`] order.
    pub listing_key: u32,
    /// Seeds `random`, numpy's global generator and `PYTHONHASHSEED` (the order of sets and
    /// dicts of strings) in every job.
    pub seed: u32,
}

impl Conditions {
    /// The conditions of stability rerun `round` (from 1): another listing order and other
    /// seeds than the default's, different for every round.
    pub fn rerun(round: u32) -> Self {
        Conditions {
            listing: ListingOrder::Hashed,
            listing_key: round,
            seed: round,
        }
    }

    /// These conditions with only what `change` says taken from `other`.
    pub fn with(self, change: Change, other: Conditions) -> Self {
        match change {
            Change::Listing => Conditions {
                listing: other.listing,
                listing_key: other.listing_key,
                ..self
            },
            Change::Seed => Conditions {
                seed: other.seed,
                ..self
            },
        }
    }
}

/// One of the conditions a rerun changes, to tell which of them changed a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// The directory listing order.
    Listing,
    /// The seeds of unseeded randomness.
    Seed,
}
