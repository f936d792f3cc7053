//! One line of a judging run's `results.jsonl`: a sample's verdict and what it cost.

use serde::{Deserialize, Serialize};

use crate::integrity::IntegrityFinding;
use crate::isolation::IsolationLevel;
use crate::outcome::{Captured, Status, TestOutcome};
use crate::verdict::{InfraCause, Official};

/// What a record keeps of each output stream: enough to see why a sample failed, small
/// enough that a run of thousands of samples stays a file one can open.
pub const RECORD_OUTPUT_BYTES: usize = 16 << 10;

/// A task's number, the last part of its id (`BigCodeBench/13`, `PyBench/13`: 13), for task
/// order; ids without one sort last.
pub fn task_number(task_id: &str) -> u64 {
    task_id
        .rsplit('/')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}

/// One sample's verdict, as `results.jsonl` stores it (reference runs in the ground-truth
/// cache use the same record).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleRecord {
    /// The sample's position in the samples file.
    pub index: usize,
    /// The task it answers.
    pub task_id: String,
    /// Digest of the program executed: a resumed run checks it against the samples.
    pub program_digest: String,
    /// assay's status (`infra` when the environment decided).
    pub status: Status,
    /// Why, in a sentence.
    pub reason: String,
    /// The official verdict; none for `infra`.
    pub official: Option<Official>,
    /// What in the environment decided an `infra` verdict.
    pub infra: Option<InfraCause>,
    /// Every test of the class, in the order they ran.
    pub tests: Vec<TestOutcome>,
    /// What the code did to its tests instead of passing them (a skip, a patch, a test that
    /// ended early...): a sample with any is `fail`, unless judged as officially
    /// (`--gamed-as-official`). Absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub integrity: Vec<IntegrityFinding>,
    /// Seconds from sending the job to its verdict.
    pub wall_seconds: f64,
    /// CPU seconds of the job's tree, where measured.
    pub cpu_seconds: Option<f64>,
    /// Peak memory, where measured.
    pub memory_peak_bytes: Option<u64>,
    /// Most processes and threads at once; absent from records of older versions.
    #[serde(default)]
    pub processes_peak: Option<u64>,
    /// How well the job was isolated.
    pub isolation: IsolationLevel,
    /// What the job wrote to stdout, capped at [`RECORD_OUTPUT_BYTES`]; absent from records
    /// of older versions.
    #[serde(default)]
    pub stdout: Captured,
    /// What the job wrote to stderr, capped likewise.
    #[serde(default)]
    pub stderr: Captured,
}

impl SampleRecord {
    /// Whether the official harness counts this sample as passing.
    pub fn passed(&self) -> bool {
        self.official.as_ref().is_some_and(Official::passed)
    }

    /// The first test that did not pass (a skip or an expected failure counts as passing, as
    /// officially): what a reader shows first of why a sample failed.
    pub fn first_failure(&self) -> Option<&TestOutcome> {
        self.tests.iter().find(|t| !t.result.counts_as_passing())
    }
}
