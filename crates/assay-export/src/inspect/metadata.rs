//! assay's own records inside an Inspect log, in the places Inspect leaves for metadata: what
//! the figures are over (`results.metadata`), and per benchmark what a sample's judging
//! recorded (the sample's `metadata`) and assay's verdict in full (its score's `metadata`).
//! Its own module because the log's types hold them while the modules that fill them in
//! (`scoring`, `bigcodebench`, `pybench`) use the log's types: with each kept by the module
//! that fills it in, as they were, `log` and those modules imported each other.

use assay_records::{
    CellRecord, CheckVerdict, EpisodeEnd, IsolationLevel, OfficialStatus, Status, TestResult,
};
use serde::Serialize;

/// `results.metadata`: what the figures are over.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Counts {
    /// Tasks with a sample.
    pub tasks: usize,
    /// Tasks with a judged sample: what the figures average over.
    pub tasks_judged: usize,
    /// Tasks none of whose samples could be judged.
    pub tasks_set_apart: Vec<String>,
    /// Samples that could not be judged, in all tasks.
    pub samples_set_apart: usize,
}

/// What a BigCodeBench sample's judging recorded besides its verdict (the sample's metadata).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampleFacts {
    /// assay's status: `pass`, `fail`, `error`, `timeout`, `oom`, `infra`; none for a sample
    /// the model never answered.
    pub status: Option<Status>,
    /// Why, in a sentence.
    pub reason: String,
    /// What in the environment decided an `infra` verdict (`network`, `missing-module`...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub infra: Option<&'static str>,
    /// Seconds from sending the job to its verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_seconds: Option<f64>,
    /// CPU seconds of the job's tree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<f64>,
    /// Peak memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_peak_bytes: Option<u64>,
    /// Most processes and threads at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes_peak: Option<u64>,
    /// How well the job was isolated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isolation: Option<IsolationLevel>,
    /// Digest of the program executed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program_digest: Option<String>,
    /// The libraries the task uses.
    pub libs: Vec<String>,
}

/// assay's verdict on a BigCodeBench sample (the score's metadata).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampleVerdict {
    /// assay's status.
    pub status: Status,
    /// Why, in a sentence.
    pub reason: String,
    /// The official harness's status.
    pub official: Option<OfficialStatus>,
    /// Every test of the class, in the order they ran.
    pub tests: Vec<TestSummary>,
}

/// One test method's result, without its traceback (the explanation has the first failure's).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestSummary {
    /// The method.
    pub name: String,
    /// How it ended.
    pub result: TestResult,
    /// How long it ran.
    pub seconds: f64,
}

/// What a PyBench episode recorded besides its verdicts (the sample's metadata).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpisodeFacts {
    /// The paper's category.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// The headline status: `pass`, `fail` or `infra`.
    pub status: Status,
    /// Why, in a sentence.
    pub reason: String,
    /// Why the episode ended.
    pub end: EpisodeEnd,
    /// Why, in a sentence: the server's own words when it refused a request.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub end_reason: String,
    /// Replies the model gave.
    pub turns: u32,
    /// Each executed cell.
    pub cells: Vec<CellRecord>,
    /// The images cells displayed, under the run's `figures/`.
    pub figures: Vec<String>,
    /// The files the episode left, under the run's `tasks/<index>/output/`.
    pub outputs: Vec<String>,
    /// Wall time of the episode.
    pub seconds: f64,
}

/// assay's verdicts on an episode (the score's metadata).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpisodeVerdict {
    /// The headline status.
    pub status: Status,
    /// Why.
    pub reason: String,
    /// Which way of judging heads the run: `faithful` or `fixed`.
    pub checks: Option<String>,
    /// Upstream's test reproduced, bugs included.
    pub faithful: CheckVerdict,
    /// The same test with upstream's bugs corrected.
    pub fixed: CheckVerdict,
}
