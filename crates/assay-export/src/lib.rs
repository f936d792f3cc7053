//! Run directories in other tools' formats, so that what assay measured can be read where
//! people already look at evaluations: Inspect AI's eval log ([`inspect`]), and the experiment
//! trackers teams keep their results in, MLflow and Weights & Biases ([`tracker`]).
//!
//! An export only reads the run directory (`docs/run-directory.md`) and the datasets the run
//! names; it writes nothing there.

pub mod inspect;
mod time;
pub mod tracker;

use std::path::Path;

use assay_records::{Kind, Manifest};
use assay_report::SourceError;

/// Refuses the kinds of run that hold no judged samples (a generation not judged yet, a check
/// or a cache of the reference solutions), naming the manifest: what every export reads is
/// verdicts.
fn judged(dir: &Path, manifest: &Manifest) -> Result<(), SourceError> {
    match manifest.kind {
        Kind::BigcodebenchEval | Kind::BigcodebenchRun | Kind::PybenchRun | Kind::PybenchEval => {
            Ok(())
        }
        Kind::BigcodebenchGenerate | Kind::BigcodebenchCheck | Kind::BigcodebenchGroundTruth => {
            Err(SourceError::Invalid {
                path: dir.join("manifest.json"),
                line: 0,
                message: format!(
                    "a {} directory holds no judged samples to export (export reads the \
                     directories of `assay eval` and `assay run`)",
                    manifest.kind.as_str()
                ),
            })
        }
    }
}

/// A digest of what makes a run this run, its kind, identity and start, for `purpose`: the ids
/// an export derives from it are the same each time the run is exported (and differ between
/// two runs of the same settings started apart).
fn run_digest(manifest: &Manifest, purpose: &str) -> String {
    let identity = serde_json::to_string(&manifest.identity).unwrap_or_default();
    let seed = format!(
        "{purpose}\n{:?}\n{identity}\n{}",
        manifest.kind, manifest.started_at
    );
    blake3::hash(seed.as_bytes()).to_hex().to_string()
}
