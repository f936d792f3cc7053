//! What an eval log says of the run as a whole, from its manifest: the model in Inspect's
//! `provider/model` form, the run's ids and the log's file name, and assay's provenance.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assay_records::{Fingerprint, IsolationReport, Kind, Manifest, ModelAccess};
use serde::Serialize;
use serde_json::Value;

/// The model as Inspect names models, and what that name leaves out.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelName {
    /// `provider/model`.
    pub name: String,
    /// What the name leaves out (the file a replay read).
    pub args: BTreeMap<String, Value>,
}

/// `openai:gpt-4o` → `openai/gpt-4o`; a replay (`replay:PATH`) → `replay/<file stem>` with the
/// path in the args; a name without a provider (`reference`, `recorded-…`, none at all) →
/// `none/<name>`, `none` being Inspect's provider for evaluations without a model.
pub fn model_name(model: Option<&str>) -> ModelName {
    let mut args = BTreeMap::new();
    let name = match model {
        Some(spec) => match spec.split_once(':') {
            Some(("replay", file)) => {
                args.insert("recording".to_string(), Value::from(file));
                let stem = Path::new(file)
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                format!("replay/{stem}")
            }
            Some((provider, name)) => format!("{provider}/{name}"),
            None => format!("none/{spec}"),
        },
        None => "none/none".to_string(),
    };
    ModelName { name, args }
}

/// The ids of a run's eval: derived from what makes the run this run (its kind, identity and
/// start), so that exporting it again names the same eval and writes the same file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunIds {
    /// `eval_id`.
    pub eval: String,
    /// `run_id`.
    pub run: String,
    /// `task_id`, the last part of the file name.
    pub task: String,
}

/// The ids of `manifest`'s run: 22 hex digits each (the length of Inspect's own ids; hex has
/// neither `_` nor `-`, which its file names use as separators).
pub fn run_ids(manifest: &Manifest) -> RunIds {
    let id = |purpose: &str| crate::run_digest(manifest, purpose)[..22].to_string();
    RunIds {
        eval: id("eval"),
        run: id("run"),
        task: id("task"),
    }
}

/// The name Inspect gives a log, `<created>_<task>_<id>.json` with `:`, `+`, `/` and `_` made
/// `-` inside each part: `inspect view` lists only `.json` files named so.
pub fn file_name(created: &str, task: &str, task_id: &str) -> String {
    let clean = |part: &str| part.replace(['_', '/', ':', '+'], "-");
    format!("{}_{}_{}.json", clean(created), clean(task), clean(task_id))
}

/// `eval.metadata`: where the log comes from, as the manifest says it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Provenance {
    /// The assay that made the run.
    pub assay_version: String,
    /// What made it.
    pub kind: Kind,
    /// Kinds it continues.
    pub extends: Vec<Kind>,
    /// The settings that decide its results.
    pub identity: assay_records::Identity,
    /// Unix seconds when it started.
    pub started_at: u64,
    /// The run directory exported.
    pub run_dir: PathBuf,
    /// The samples file judged (`assay eval`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<PathBuf>,
    /// The sandbox's Python version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// The isolation the sandbox reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isolation: Option<IsolationReport>,
    /// What verdicts depend on beyond the settings (packages, NLTK data, isolation...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<Fingerprint>,
    /// How the model was reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_access: Option<ModelAccess>,
}

impl Provenance {
    /// The provenance of the run in `dir` (made absolute where it can be).
    pub fn of(manifest: &Manifest, dir: &Path) -> Provenance {
        Provenance {
            assay_version: manifest.assay_version.clone(),
            kind: manifest.kind,
            extends: manifest.extends.clone(),
            identity: manifest.identity.clone(),
            started_at: manifest.started_at,
            run_dir: std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()),
            samples: manifest.samples.clone(),
            python: manifest.python.clone(),
            isolation: manifest.isolation.clone(),
            fingerprint: manifest.fingerprint.clone(),
            model_access: manifest.model_access.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_get_inspects_provider_slash_model_names() {
        let name = |spec: Option<&str>| model_name(spec).name;
        assert_eq!(name(Some("openai:gpt-4o")), "openai/gpt-4o");
        assert_eq!(
            name(Some("openai:qwen2.5-coder:7b")),
            "openai/qwen2.5-coder:7b"
        );
        assert_eq!(name(Some("anthropic:claude-x")), "anthropic/claude-x");
        assert_eq!(name(Some("reference")), "none/reference");
        assert_eq!(name(None), "none/none");
        let replay = model_name(Some("replay:/data/pybench/trajectory.jsonl"));
        assert_eq!(replay.name, "replay/trajectory");
        assert_eq!(
            replay.args["recording"],
            Value::from("/data/pybench/trajectory.jsonl")
        );
    }

    #[test]
    fn file_names_follow_inspects_pattern() {
        assert_eq!(
            file_name(
                "2026-12-02T01:26:41+00:00",
                "bigcodebench-hard-complete",
                "0a1b"
            ),
            "2026-12-02T01-26-41-00-00_bigcodebench-hard-complete_0a1b.json"
        );
    }
}
