//! The reference solutions' results: which tasks an environment can pass at all, how long
//! each takes, and the official ground-truth figures.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::outcome::{Status, TestResult};
use crate::sample::SampleRecord;

/// How one task's reference solution fared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceResult {
    /// assay's status of the reference run.
    pub status: Status,
    /// Its wall-clock time: what time budgets scale.
    pub seconds: f64,
    /// Why it did not pass, with the first failing test's last traceback line.
    pub reason: String,
    /// Most processes and threads the reference had at once, where measured.
    pub processes_peak: Option<u64>,
    /// Seconds each test method took, by name: what a test's budget scales.
    #[serde(default)]
    pub tests: BTreeMap<String, f64>,
}

impl ReferenceResult {
    /// The summary of a reference run's record.
    pub fn of(record: &SampleRecord) -> Self {
        // The first failing test's last traceback line says more than a count of failures.
        let cause = record
            .tests
            .iter()
            .find(|t| matches!(t.result, TestResult::Fail | TestResult::Error))
            .and_then(|t| t.detail.lines().rev().find(|l| !l.trim().is_empty()));
        let reason = match cause {
            Some(line) if record.status == Status::Fail => {
                format!("{} ({})", record.reason, line.trim())
            }
            _ => record.reason.clone(),
        };
        ReferenceResult {
            status: record.status,
            seconds: record.wall_seconds,
            reason,
            processes_peak: record.processes_peak,
            tests: record
                .tests
                .iter()
                .map(|t| (t.name.clone(), t.seconds))
                .collect(),
        }
    }

    /// Whether the reference passes here.
    pub fn passed(&self) -> bool {
        self.status == Status::Pass
    }
}

/// The process peaks of reference runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessPeaks {
    /// References whose peak is known (it needs a cgroup and a kernel that keeps it).
    pub measured: usize,
    /// The highest peaks, highest first: (task, processes and threads at once).
    pub highest: Vec<(String, u64)>,
}

/// The official ground-truth figures over a dataset's tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroundTruthSummary {
    /// The official `gt_pass_rate`: the share of tasks whose reference passes here.
    pub pass_rate: f64,
    /// Task → why its reference does not pass here.
    pub failed_tasks: BTreeMap<String, String>,
    /// Where the reference results are kept.
    pub cache: PathBuf,
    /// How many processes the references needed at once.
    pub processes: ProcessPeaks,
}
