//! How samples are judged.

use assay_records::{Split, TimePolicy};
use assay_sandbox::Limits;

/// How samples are evaluated.
#[derive(Debug, Clone)]
pub struct Options {
    /// The prompt style the samples answer.
    pub split: Split,
    /// Prefix every solution with the task's imports and a stub (the official default).
    pub calibrated: bool,
    /// Limits of every job; the wall-clock and CPU limits come from `time`.
    pub limits: Limits,
    /// Each task's time limit.
    pub time: TimePolicy,
    /// Whether jobs have the network.
    pub network: bool,
    /// The official harness's process guards (see `UnittestJob::guards`): on by default, for
    /// the official verdicts.
    pub guards: bool,
    /// Judge samples that gamed their tests (an integrity finding) as the official harness
    /// does, from unittest's failures and errors alone: for exact parity studies. Off by
    /// default: such a sample is `fail`.
    pub gamed_as_official: bool,
}

/// The main-thread stack every job gets: the official harness sets 10 MiB.
pub const STACK_BYTES: u64 = 10 << 20;
