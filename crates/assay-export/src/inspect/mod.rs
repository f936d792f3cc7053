//! An assay run directory as an Inspect AI eval log (`.json`, log format version 2), which
//! `inspect view` lists and opens and `inspect_ai.log.read_eval_log` reads.
//!
//! What maps to what is in `docs/export.md`. In short: the task is the benchmark and split,
//! each sample of the run a sample of the log (a task's several samples its epochs), assay's
//! verdict its score (`C` or `I`, with the code judged and the first failing test), and a
//! sample that could not be judged (`infra`, or never answered) a sample with an `error` and
//! no score, so that the figures, like assay's, leave it out. The figures are computed as
//! Inspect computes them from those scores; with one sample reducer, `mean`, accuracy is
//! assay's pass@1.

mod bigcodebench;
pub mod log;
mod metadata;
mod pybench;
mod scoring;
mod spec;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::UNIX_EPOCH;

use assay_records::{Kind, TokenUsage};
use assay_report::{read_manifest, SourceError};
use serde_json::Value;

use crate::time::iso8601;
use log::{
    EvalConfig, EvalDataset, EvalLog, EvalPlan, EvalPlanStep, EvalSample, EvalScorer, EvalSpec,
    EvalStats, EvalStatus, GenerateConfig, MetricDefinition, ModelUsage, LOG_VERSION, SCORER,
};

/// A run directory exported.
#[derive(Debug, Clone, PartialEq)]
pub struct Export {
    /// The log.
    pub log: EvalLog,
    /// The name Inspect would give it: `<created>_<task>_<id>.json`.
    pub file_name: String,
    /// What could not be filled in, and why (a dataset that is no longer where the run read
    /// it, say); the log is whole otherwise.
    pub warnings: Vec<String>,
}

/// What a benchmark's reader makes of a run directory: the samples and what names them.
struct Benchmark {
    task: String,
    task_args: BTreeMap<String, Value>,
    dataset: EvalDataset,
    steps: Vec<EvalPlanStep>,
    generate_config: GenerateConfig,
    /// The most samples a task has.
    epochs: u32,
    samples: Vec<EvalSample>,
    /// Tokens billed over the run.
    usage: TokenUsage,
    warnings: Vec<String>,
}

/// The eval log of the run directory `dir`: a BigCodeBench evaluation or run, or a PyBench run
/// or evaluation. Every error names the file, and the line where there is one.
pub fn export(dir: &Path) -> Result<Export, SourceError> {
    let manifest = read_manifest(dir)?;
    let model = match (&manifest.identity.model, &manifest.samples) {
        // `assay eval`: the model is the one the official harness names after the file.
        (None, Some(samples)) => spec::model_name(Some(
            &assay_eval::bigcodebench::samples::model_name(samples),
        )),
        (model, _) => spec::model_name(model.as_deref()),
    };
    crate::judged(dir, &manifest)?;
    let benchmark = match manifest.kind {
        Kind::PybenchRun | Kind::PybenchEval => pybench::read(dir, &manifest, &model.name)?,
        _ => bigcodebench::read(dir, &manifest, &model.name)?,
    };
    let ids = spec::run_ids(&manifest);
    let created = iso8601(manifest.started_at);
    let finished = finished_at(dir);
    let figures = scoring::figures(&benchmark.samples, benchmark.epochs);
    let mut model_usage = BTreeMap::new();
    if benchmark.usage != TokenUsage::default() {
        model_usage.insert(model.name.clone(), ModelUsage::from(&benchmark.usage));
    }
    let log = EvalLog {
        version: LOG_VERSION,
        status: if finished.is_some() {
            EvalStatus::Success
        } else {
            EvalStatus::Started
        },
        eval: EvalSpec {
            eval_id: ids.eval,
            run_id: ids.run,
            created: created.clone(),
            task: benchmark.task.clone(),
            task_id: ids.task.clone(),
            task_version: 0,
            task_args: benchmark.task_args,
            dataset: benchmark.dataset,
            model: model.name,
            model_generate_config: benchmark.generate_config.clone(),
            model_base_url: manifest
                .model_access
                .as_ref()
                .and_then(|a| a.base_url.clone()),
            model_args: model.args,
            config: EvalConfig {
                epochs: benchmark.epochs,
                epochs_reducer: figures.reducers,
                fail_on_error: false,
            },
            packages: BTreeMap::from([("assay".to_string(), manifest.assay_version.clone())]),
            metadata: spec::Provenance::of(&manifest, dir),
            scorers: vec![EvalScorer {
                name: SCORER.into(),
                metrics: ["inspect_ai/accuracy", "inspect_ai/stderr"]
                    .into_iter()
                    .map(|name| MetricDefinition { name: name.into() })
                    .collect(),
            }],
        },
        plan: EvalPlan {
            name: "plan".into(),
            steps: benchmark.steps,
            config: benchmark.generate_config,
        },
        results: figures.results,
        stats: EvalStats {
            started_at: created.clone(),
            completed_at: finished.map(iso8601).unwrap_or_default(),
            model_usage,
        },
        samples: benchmark.samples,
        reductions: figures.reductions,
    };
    Ok(Export {
        file_name: spec::file_name(&created, &benchmark.task, &ids.task),
        log,
        warnings: benchmark.warnings,
    })
}

/// When the run finished, in Unix seconds (`assay_report::finished_at`).
fn finished_at(dir: &Path) -> Option<u64> {
    let at = assay_report::finished_at(dir)?;
    at.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs())
}

#[cfg(test)]
mod tests;
