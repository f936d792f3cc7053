//! `summary.json`: what a judging run, or a check of the reference solutions, came to.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::generation::TokenUsage;
use crate::ground_truth::GroundTruthSummary;
use crate::isolation::IsolationReport;
use crate::sample::{task_number, SampleRecord};
use crate::time_policy::TimePolicy;

/// pass@k two ways, and what each counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scores {
    /// The headline: over the tasks judged, `infra` samples left out (the environment, not the
    /// model, decided them).
    pub pass_at_k: BTreeMap<String, f64>,
    /// Tasks with at least one sample that got a verdict.
    pub tasks_judged: usize,
    /// Tasks with samples of which none got a verdict: every one was `infra`.
    pub tasks_set_apart: Vec<String>,
    /// Samples left out as `infra`, in all tasks.
    pub samples_set_apart: usize,
    /// Every sample counted, `infra` as a failure, over every task with samples: what the
    /// official harness, which knows no `infra`, would print on this machine.
    pub pass_at_k_infra_as_fail: BTreeMap<String, f64>,
}

/// One of the slowest samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slow(pub String, pub f64, pub String);

/// Samples a time budget ended before the official limit, and the waiting that saved.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetsSaved {
    /// Samples that timed out before the official 240 s.
    pub samples: usize,
    /// Sum over them of 240 s minus the time they ran.
    pub seconds: f64,
}

/// Samples that gamed their tests: a verdict decided by integrity (each sample's `integrity`).
/// `summary.json`, the report and the viewer all count them with [`Gamed::add`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Gamed {
    /// Samples with any finding.
    pub samples: usize,
    /// Samples per kind of finding (`skipped`, `tampered`...; a sample counts once per kind).
    pub by_kind: BTreeMap<String, usize>,
    /// The tasks of those samples, each once, by task number; absent from summaries of older
    /// versions.
    #[serde(default)]
    pub tasks: Vec<String>,
}

impl Gamed {
    /// Counts one more sample's record (each sample once: the last record of a resumed sample
    /// is the caller's to pick), as a reader of a run's records reads them.
    pub fn add(&mut self, record: &SampleRecord) {
        if record.integrity.is_empty() {
            return;
        }
        self.samples += 1;
        let kinds: BTreeSet<&str> = record.integrity.iter().map(|f| f.kind.as_str()).collect();
        for kind in kinds {
            *self.by_kind.entry(kind.to_string()).or_insert(0) += 1;
        }
        let key = |id: &str| (task_number(id), id.to_string());
        let task = key(&record.task_id);
        if let Err(at) = self.tasks.binary_search_by(|t| key(t).cmp(&task)) {
            self.tasks.insert(at, record.task_id.clone());
        }
    }

    /// What the kinds came to, in words: `skipped 2, tampered 1`.
    pub fn kinds(&self) -> String {
        let kinds: Vec<String> = self
            .by_kind
            .iter()
            .map(|(kind, n)| format!("{kind} {n}"))
            .collect();
        kinds.join(", ")
    }
}

/// What an evaluation came to (`summary.json` of `eval` and `run`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalSummary {
    /// The figures.
    #[serde(flatten)]
    pub scores: Scores,
    /// Tasks in the dataset (or the selection).
    pub tasks_in_dataset: usize,
    /// Tasks without any sample in the file.
    pub tasks_missing: Vec<String>,
    /// Samples judged, unanswered ones included.
    pub samples: usize,
    /// Samples per assay status.
    pub statuses: BTreeMap<String, usize>,
    /// Samples per official status.
    pub official: BTreeMap<String, usize>,
    /// Samples the environment decided, by task, with the cause.
    pub infra: BTreeMap<String, String>,
    /// Samples that gamed their tests instead of passing them; absent from summaries of
    /// older versions.
    #[serde(default)]
    pub gamed: Gamed,
    /// The slowest samples: (task, seconds, status).
    pub slowest: Vec<Slow>,
    /// The reference solutions here.
    pub ground_truth: GroundTruthSummary,
    /// How long samples could run.
    pub time_policy: TimePolicy,
    /// What budgets saved: the samples they ended before the official 240 s, and the seconds
    /// of waiting the official policy would have spent on them beyond what assay did.
    #[serde(default)]
    pub budgets_saved: BudgetsSaved,
    /// Tokens the model was billed for its answers (`run`: every request, earlier sessions
    /// too; absent for `eval`, whose samples came from elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenUsage>,
    /// What those tokens cost in US dollars, at the prices given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Answers the model's context window decided (`run`): asked again with a lower token
    /// limit, or empty because their prompt did not fit (judged `fail`). Absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<crate::ContextCounts>,
    /// What `--stability N` found: verdicts that changed under conditions that ought not to
    /// matter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stability: Option<crate::StabilitySummary>,
    /// Seconds this session took.
    pub wall_seconds: f64,
}

/// What a check of the reference solutions came to (`assay check`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckSummary {
    /// `bigcodebench` or `bigcodebench-hard`.
    pub benchmark: String,
    /// The dataset version or file.
    pub dataset: String,
    /// The Python environment's key.
    pub environment: String,
    /// The isolation the sandbox reached.
    pub isolation: IsolationReport,
    /// Tasks checked.
    pub tasks: usize,
    /// The official figures and the cache.
    pub ground_truth: GroundTruthSummary,
    /// Seconds it took.
    pub wall_seconds: f64,
}
