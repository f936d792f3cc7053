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
    /// These conditions with `change` made for the `cycle`-th time (from 1): another listing
    /// order (hashed, with another key), or other seeds, each different from these and from
    /// every earlier cycle's; [`Change::Load`] leaves the conditions as they are (it changes
    /// how many jobs share the CPUs, not what a job sees).
    pub fn changed(self, change: Change, cycle: u32) -> Self {
        match change {
            Change::Listing => Conditions {
                listing: ListingOrder::Hashed,
                listing_key: self.listing_key.wrapping_add(cycle),
                ..self
            },
            Change::Seed => Conditions {
                seed: self.seed.wrapping_add(cycle),
                ..self
            },
            Change::Load => self,
        }
    }
}

/// What a stability rerun changes, one at a time, so that a verdict that changes with it is
/// known to depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// The directory listing order.
    Listing,
    /// The seeds of unseeded randomness (`random`, numpy, `PYTHONHASHSEED`).
    Seed,
    /// Timing and CPU load: twice as many jobs sharing the CPUs.
    Load,
}

impl Change {
    /// Every change, in the order rounds take them.
    pub const ROTATION: [Change; 3] = [Change::Listing, Change::Seed, Change::Load];

    /// The change of stability round `round` (from 1), and how many times it has come round.
    pub fn of_round(round: u32) -> (Change, u32) {
        let turn = round.saturating_sub(1);
        (Self::ROTATION[(turn % 3) as usize], turn / 3 + 1)
    }

    /// Its name in the records: `listing`, `seed`, `load`.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Listing => "listing",
            Change::Seed => "seed",
            Change::Load => "load",
        }
    }

    /// What the summary calls it.
    pub fn describe(self) -> &'static str {
        match self {
            Change::Listing => "another directory listing order",
            Change::Seed => "other random seeds",
            Change::Load => "other timing and CPU load",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_take_each_change_in_turn_each_time_anew() {
        let rounds: Vec<_> = (1..=7).map(Change::of_round).collect();
        assert_eq!(
            rounds,
            [
                (Change::Listing, 1),
                (Change::Seed, 1),
                (Change::Load, 1),
                (Change::Listing, 2),
                (Change::Seed, 2),
                (Change::Load, 2),
                (Change::Listing, 3),
            ]
        );
        let main = Conditions::default();
        let first = main.changed(Change::Listing, 1);
        let second = main.changed(Change::Listing, 2);
        assert!(first != main && second != main && first != second);
        assert_eq!(first.seed, main.seed, "one change at a time");
        let by_name = Conditions {
            listing: ListingOrder::Name,
            ..main
        };
        assert_eq!(
            by_name.changed(Change::Listing, 1).listing,
            ListingOrder::Hashed
        );
        let seeded = main.changed(Change::Seed, 1);
        assert_ne!(seeded.seed, main.seed);
        assert_eq!(seeded.listing_key, main.listing_key);
        assert_eq!(main.changed(Change::Load, 1), main);
    }
}
