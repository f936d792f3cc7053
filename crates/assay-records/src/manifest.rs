//! `manifest.json`: what a run directory holds and the settings that decide its results.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::fingerprint::Fingerprint;
use crate::generation::{GenerationOutcome, GenerationSettings, Prices};
use crate::isolation::IsolationReport;
use crate::time_policy::TimePolicy;

/// The run-directory layout this assay writes (`docs/run-directory.md`). A directory written
/// with a newer schema is refused rather than misread. 2: `identity.shard`.
pub const SCHEMA: u32 = 2;

/// What made a run directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// `assay generate`: answers only.
    BigcodebenchGenerate,
    /// `assay eval`: a samples file judged.
    BigcodebenchEval,
    /// `assay run`: answers, then judged.
    BigcodebenchRun,
    /// `assay check --out`: the reference solutions judged.
    BigcodebenchCheck,
    /// The reference-run cache shared by every evaluation of a dataset.
    BigcodebenchGroundTruth,
    /// `assay run pybench`: episodes run, then judged.
    PybenchRun,
    /// `assay eval pybench`: recorded trajectories judged.
    PybenchEval,
}

impl Kind {
    /// The name manifests spell it with (`bigcodebench-eval`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Kind::BigcodebenchGenerate => "bigcodebench-generate",
            Kind::BigcodebenchEval => "bigcodebench-eval",
            Kind::BigcodebenchRun => "bigcodebench-run",
            Kind::BigcodebenchCheck => "bigcodebench-check",
            Kind::BigcodebenchGroundTruth => "bigcodebench-ground-truth",
            Kind::PybenchRun => "pybench-run",
            Kind::PybenchEval => "pybench-eval",
        }
    }
}

/// The settings that decide a run's results: a rerun with the same identity resumes the
/// directory, a different one is refused naming the first difference. Each kind of run sets
/// the fields that matter to it; the others stay absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    /// `bigcodebench` or `bigcodebench-hard`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<String>,
    /// The dataset version, or the dataset file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    /// Digest of the tasks' content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_digest: Option<String>,
    /// The task ids chosen (empty: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Vec<String>>,
    /// The part of those tasks this directory runs, when the run is split over machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::shard::Shard>,
    /// The answering model: `reference` or `provider:model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Whether a base model continued the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct_completion: Option<bool>,
    /// How answers were sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<GenerationSettings>,
    /// How the model was asked to reason and its thinking told apart, where not the defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<crate::reasoning::ReasoningSettings>,
    /// Fields the user added to every request body (`--extra-body`), when any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_body: Option<serde_json::Map<String, serde_json::Value>>,
    /// The prompt templates' version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The prompt style judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
    /// Whether solutions got the official calibration prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibrated: Option<bool>,
    /// How long each sample may run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_policy: Option<TimePolicy>,
    /// Memory limit per sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Whether jobs had the network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<bool>,
    /// Whether jobs ran under the official process guards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guards: Option<bool>,
    /// Whether samples that gamed their tests were judged as the official harness does
    /// (`--gamed-as-official`); absent when not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gamed_as_official: Option<bool>,
    /// The listing order and seeds jobs ran under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<crate::Conditions>,
    /// The Python environment's key (profile and pins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// Digest of the samples file judged (PyBench: the trajectories file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples_digest: Option<String>,
    /// PyBench: how the agent's code reaches the interpreter (`markdown` or `tools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The coding agent that solved the tasks (`codex`, `claude-code`, ...) and its pinned
    /// packages, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// PyBench: the verdict that heads the results (`faithful` or `fixed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<String>,
    /// PyBench: replies an episode may have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// PyBench: a reply's token limit, where not upstream's 1000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_tokens: Option<u32>,
    /// PyBench: seconds a cell may run before it is interrupted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell_timeout_seconds: Option<u64>,
    /// PyBench: characters of a cell's observation sent back (0: no cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation_chars: Option<usize>,
    /// A reference run's time limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
    /// A reference run's memory limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// A reference run's process cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<u64>,
}

/// How the model was reached (not identity: the same model may move servers, limits and
/// prices change no answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelAccess {
    /// The server, without credentials; none for `reference`.
    pub base_url: Option<String>,
    /// Requests in flight at most.
    pub concurrency: usize,
    /// Seconds one HTTP attempt may take.
    pub request_timeout_seconds: f64,
    /// Attempts after the first.
    pub retries: u32,
    /// Requests a minute at most (`--rpm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_minute: Option<u32>,
    /// Tokens a minute at most (`--tpm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_minute: Option<u64>,
    /// What tokens cost (`--price-in`, `--price-out`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<Prices>,
    /// The server assay started for the run (`--serve`), the last time it started one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<StartedServer>,
}

/// A model server assay started for a run (`--serve`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartedServer {
    /// The command as given.
    pub command: String,
    /// The models it said it serves (`/models`).
    pub models: Vec<String>,
    /// Its output, in the run directory.
    pub log: String,
}

/// What a generation came to, as the manifest keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationDone {
    /// The outcome.
    #[serde(flatten)]
    pub outcome: GenerationOutcome,
    /// Unix seconds when it ended.
    pub finished_at: u64,
}

/// `manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The layout version ([`SCHEMA`]); manifests from before it was written are schema 1.
    #[serde(default = "first_schema")]
    pub schema: u32,
    /// The assay that made the directory.
    pub assay_version: String,
    /// What made it.
    pub kind: Kind,
    /// Kinds of run this one continues when their identity is part of this one's (a run
    /// continuing a generation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extends: Vec<Kind>,
    /// The settings that decide the results.
    pub identity: Identity,
    /// Unix seconds when the run started (the official results' `date`).
    pub started_at: u64,
    /// The samples file judged (`eval`), or the trajectories file (`eval pybench`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<PathBuf>,
    /// The dataset's source (the ground-truth cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    /// How the model was reached this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_access: Option<ModelAccess>,
    /// What the generation came to, once it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<GenerationDone>,
    /// The sandbox's Python version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// The isolation the sandbox reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<IsolationReport>,
    /// What verdicts depend on beyond the settings: shards merge, and a run resumes, only
    /// where it is the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<Fingerprint>,
    /// The command that made the directory, so that a missing or unfinished shard can be
    /// given the exact command that runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Invocation>,
}

/// A command line and the directory it ran in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Invocation {
    /// The arguments as given, the program first.
    pub args: Vec<String>,
    /// The working directory (relative paths in `args` are relative to it).
    pub dir: PathBuf,
}

impl Invocation {
    /// This process's command line.
    pub fn current() -> Invocation {
        Invocation {
            args: std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            dir: std::env::current_dir().unwrap_or_default(),
        }
    }
}

fn first_schema() -> u32 {
    1
}

impl Manifest {
    /// Where the run's command ran: the paths it named relatively (a dataset file, a data
    /// folder) are relative to it. A manifest from before commands were recorded: here.
    pub fn started_in(&self) -> PathBuf {
        self.command
            .as_ref()
            .map(|c| c.dir.clone())
            .unwrap_or_default()
    }

    /// A new run's manifest, started now.
    pub fn new(kind: Kind, identity: Identity) -> Manifest {
        Manifest {
            schema: SCHEMA,
            assay_version: env!("CARGO_PKG_VERSION").to_string(),
            kind,
            extends: Vec::new(),
            identity,
            started_at: now(),
            samples: None,
            dataset: None,
            model_access: None,
            generation: None,
            python: None,
            isolation: None,
            fingerprint: None,
            command: Some(Invocation::current()),
        }
    }
}

/// Unix seconds now.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_named_as_manifests_spell_them() {
        for kind in [
            Kind::BigcodebenchGenerate,
            Kind::BigcodebenchEval,
            Kind::BigcodebenchRun,
            Kind::BigcodebenchCheck,
            Kind::BigcodebenchGroundTruth,
            Kind::PybenchRun,
            Kind::PybenchEval,
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }

    #[test]
    fn manifests_from_before_limits_and_prices_still_load() {
        let written = r#"{
            "schema": 2, "assay_version": "0.1.0", "kind": "bigcodebench-generate",
            "identity": {"model": "openai:m"}, "started_at": 1,
            "model_access": {"base_url": "http://localhost:8000/v1", "concurrency": 8,
                             "request_timeout_seconds": 300.0, "retries": 6},
            "generation": {"samples": 1, "unanswered": [], "finished_at": 2,
                           "totals": {"requests": 1, "samples": 1,
                                      "usage": {"prompt_tokens": 10, "completion_tokens": 5},
                                      "retried_requests": 0, "retries": 0,
                                      "latency_mean_seconds": 1.0, "latency_max_seconds": 1.0,
                                      "cut_short": 0, "empty": 0}}
        }"#;
        let manifest: Manifest = serde_json::from_str(written).unwrap();
        let access = manifest.model_access.unwrap();
        assert_eq!(
            (
                access.requests_per_minute,
                access.tokens_per_minute,
                access.prices
            ),
            (None, None, None)
        );
        let totals = manifest.generation.unwrap().outcome.totals;
        assert_eq!(totals.cost_usd, None);
        // And written back as they were: nothing appears that was not given.
        let rewritten = serde_json::to_value(&access).unwrap();
        assert_eq!(rewritten.as_object().unwrap().len(), 4);
    }
}
