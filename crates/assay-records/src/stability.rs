//! Stability reruns (`--stability N`): every judged sample run again, round after round, under
//! a condition its verdict ought not to depend on, changed one at a time (another directory
//! listing order, other seeds, other timing and load); the samples whose verdict changed, with
//! what changed it, and pass@1 over the rounds.

use serde::{Deserialize, Serialize};

use crate::conditions::{Change, Conditions};
use crate::outcome::Status;
use crate::sample::SampleRecord;

/// One sample run again: a line of `stability.jsonl`, appended as it finishes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StabilityRecord {
    /// The round (from 1).
    pub round: u32,
    /// What the round changed. Absent: a sample whose verdict the round changed, run once more
    /// under the run's own conditions, to tell a verdict that follows the change from one that
    /// changes whatever is done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<Change>,
    /// The conditions it ran under.
    pub conditions: Conditions,
    /// What it came to.
    pub record: SampleRecord,
}

/// What the stability rounds came to (`summary.json`'s `stability`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StabilitySummary {
    /// The run's own conditions.
    pub conditions: Conditions,
    /// Each round's figures.
    pub rounds: Vec<RoundFigures>,
    /// pass@1 of the run and its range over the run and every round.
    pub pass_at_1: PassAt1Range,
    /// Every sample whose verdict (pass or not) a round changed, in sample order.
    pub changed: Vec<ChangedVerdict>,
}

/// One round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundFigures {
    /// From 1.
    pub round: u32,
    /// What it changed.
    pub change: Change,
    /// The conditions its jobs ran under.
    pub conditions: Conditions,
    /// Samples run again (those the run judged; `infra` ones are not).
    pub samples: usize,
    /// pass@1 with this round's verdicts in place of the run's.
    pub pass_at_1: f64,
    /// Samples whose verdict changed.
    pub changed: usize,
    /// Seconds this session spent on it (its reruns and their confirmations; about none when
    /// an earlier session ran them).
    pub wall_seconds: f64,
}

/// pass@1 of the run, and the lowest and highest of it and the rounds'.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PassAt1Range {
    /// The run's own.
    pub run: f64,
    /// The lowest of the run's and the rounds'.
    pub min: f64,
    /// The highest of the run's and the rounds'.
    pub max: f64,
}

/// A sample whose verdict changed in at least one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangedVerdict {
    /// The sample's index in the samples file.
    pub index: usize,
    /// Its task.
    pub task_id: String,
    /// Its status in the run.
    pub status: Status,
    /// The rounds that changed it, with the status each gave.
    pub rounds: Vec<ChangedIn>,
    /// Whether it also changed when run again under the run's own conditions: then what the
    /// rounds changed is not (alone) why (a race, entropy from the kernel).
    pub changes_anyway: bool,
}

/// A round that changed a sample's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangedIn {
    /// The round.
    pub round: u32,
    /// What it changed.
    pub change: Change,
    /// The status the sample got in it.
    pub status: Status,
    /// Why, as the record of that run says.
    pub reason: String,
}
