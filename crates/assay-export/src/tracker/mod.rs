//! An assay run as an experiment tracker's run (MLflow, Weights & Biases): one tracker run per
//! assay run, with the settings as parameters, the figures as metrics and the run's files as
//! artifacts.
//!
//! Everything is computed here, in Rust, from the readers every report uses
//! (`assay_report::Run::load`, `figures`, `summary.json`), into one neutral document
//! ([`TrackedRun`]); a small uploader script of the tracker's own client, run in the tracker's
//! pinned environment (the `mlflow` or `wandb` profile), only logs it ([`upload`]). So both
//! trackers get the same names and the same values, and a tracker's client is the only Python.
//!
//! A run's tracker id derives from what makes the run this run (its kind, identity and start,
//! as the Inspect log's ids do): exporting it again finds the same tracker run and updates it
//! instead of adding another.

mod metrics;
mod params;
pub mod upload;
mod wandb_names;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assay_records::Kind;
use assay_report::{figures, read_manifest, Run, SourceError};
use serde::Serialize;
use serde_json::Value;

use crate::time::iso8601;

/// The tag (MLflow) and the id (W&B) a run is found by on a second export.
pub const RUN_KEY_TAG: &str = "assay.run_key";

/// One assay run as a tracker run: what the uploader logs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrackedRun {
    /// The run directory, as given: for assay's own messages (the uploader is told where the
    /// run is by the `assay.run_dir` tag).
    #[serde(skip)]
    pub dir: PathBuf,
    /// 16 hex digits from the run's kind, identity and start: MLflow's `assay.run_key` tag and
    /// W&B's run id.
    pub key: String,
    /// The name the tracker shows: `<benchmark>[-<split>] <model> <key's first 8>`.
    pub name: String,
    /// Unix milliseconds the run started.
    pub started_ms: u64,
    /// Unix milliseconds it finished, when it has (its `summary.json` is its last write).
    pub finished_ms: Option<u64>,
    /// What the metrics' values are as of: when it finished, else its last write, else its
    /// start. A value that changed while this stayed (`assay judge pybench` keeps
    /// `summary.json`'s time) is logged after the tracker's latest point by the uploader.
    pub measured_ms: u64,
    /// What decides the results, which never changes for a run (its identity, kind,
    /// benchmark, model): MLflow's parameters, which cannot change once logged.
    pub params: BTreeMap<String, String>,
    /// What describes the run but may change while it resumes (its directory, the assay
    /// version that last wrote it, how the model was reached): MLflow's tags.
    pub tags: BTreeMap<String, String>,
    /// The figures, by name (`pass_at_1`, `pass_at_1_low`, `samples.pass`...).
    pub metrics: BTreeMap<String, f64>,
    /// Files logged as they are (`manifest.json`, `summary.json`, `results.jsonl`), by name.
    pub files: Vec<PathBuf>,
    /// `report.html`: `assay report` of this run alone, written beside the document for the
    /// uploader.
    #[serde(skip)]
    pub report_html: String,
    /// What was left out of the document, and why (two figures or fields taking one name).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// What an upload made of the run: where it went.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct Uploaded {
    /// The tracker's run id.
    pub run_id: String,
    /// Whether the run was new (false: an earlier export's run, updated); unknown offline,
    /// where nothing asks the tracker.
    pub created: Option<bool>,
    /// Where to look at it: the run's page, or the offline directory to `wandb sync`.
    pub location: String,
    /// What the export should say of the run: a parameter that changed since it was logged,
    /// metrics the run no longer has, more than one tracker run with its key...
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// The tracker run of the run directory `dir`: a BigCodeBench evaluation or run, or a PyBench
/// run or evaluation. Other kinds hold no verdicts and are refused, naming the manifest.
pub fn document(dir: &Path) -> Result<TrackedRun, SourceError> {
    let manifest = read_manifest(dir)?;
    crate::judged(dir, &manifest)?;
    let run = Run::load(dir)?;
    let figures = figures(&run);
    let summary = read_summary(dir)?;
    let key = crate::run_digest(&manifest, "tracker")[..16].to_string();
    let task = match &run.split {
        Some(split) if run.benchmark != "pybench" => format!("{}-{split}", run.benchmark),
        _ => run.benchmark.clone(),
    };
    let model = params::model(&manifest);
    let started_ms = manifest
        .started_at
        .checked_mul(1000)
        .ok_or_else(|| SourceError::Invalid {
            path: dir.join("manifest.json"),
            line: 0,
            message: format!(
                "started_at {} is no time assay could have started at",
                manifest.started_at
            ),
        })?;
    let finished_ms = millis(assay_report::finished_at(dir));
    let measured_ms = finished_ms
        .or_else(|| millis(assay_report::last_write(dir)))
        .unwrap_or(started_ms);
    let mut tags = BTreeMap::from([
        (RUN_KEY_TAG.to_string(), key.clone()),
        ("assay.run_dir".into(), absolute(dir).display().to_string()),
        ("assay.version".into(), manifest.assay_version.clone()),
        ("assay.started_at".into(), iso8601(manifest.started_at)),
        (
            "assay.status".into(),
            if finished_ms.is_some() {
                "finished"
            } else {
                "started"
            }
            .into(),
        ),
    ]);
    if let Some(url) = manifest
        .model_access
        .as_ref()
        .and_then(|a| a.base_url.clone())
    {
        tags.insert("assay.base_url".into(), url);
    }
    let report = assay_report::report(std::slice::from_ref(&run), 0);
    let files = ["manifest.json", "summary.json", "results.jsonl"]
        .into_iter()
        .map(|name| dir.join(name))
        .filter(|path| path.is_file())
        .collect();
    let mut warnings = Vec::new();
    let params = params::of(&manifest, &task, &model, &mut warnings);
    let (metrics, mut named_twice) = metrics::of(&figures, &summary, manifest.kind);
    warnings.append(&mut named_twice);
    Ok(TrackedRun {
        dir: dir.to_path_buf(),
        name: format!("{task} {model} {}", &key[..8]),
        key,
        started_ms,
        finished_ms,
        measured_ms,
        params,
        tags,
        metrics,
        files,
        report_html: assay_report::html(&report, std::slice::from_ref(&run)),
        warnings,
    })
}

/// The run's `summary.json`; `Null` for a run that has not written it yet (its figures are
/// then what its records hold so far). One that does not read is an error naming it.
fn read_summary(dir: &Path) -> Result<Value, SourceError> {
    let path = dir.join("summary.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| SourceError::Invalid {
            path,
            line: e.line(),
            message: format!("not a summary: {e}"),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Value::Null),
        Err(source) => Err(SourceError::Io { path, source }),
    }
}

fn millis(at: Option<std::time::SystemTime>) -> Option<u64> {
    let since = at?.duration_since(std::time::UNIX_EPOCH).ok()?;
    u64::try_from(since.as_millis()).ok()
}

/// `dir` from the root, so that the tag says where the run is wherever it was exported from.
fn absolute(dir: &Path) -> PathBuf {
    std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// Whether `kind` is PyBench's (its groups are paper categories, not library domains).
fn is_pybench(kind: Kind) -> bool {
    matches!(kind, Kind::PybenchRun | Kind::PybenchEval)
}

/// `text` as a part of a parameter's or metric's name: what MLflow accepts in a name
/// (letters, digits, `_ - . / :` and spaces), anything else made `_`.
fn name_part(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_-./: ".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}
