//! Manifests read back and compared: one this assay can read (or an error naming the field),
//! and whether a directory's run is the one wanted now (the same identity, on a machine set up
//! alike) or one it continues. Apart from the directory's files, as merges compare identities
//! the same way ([`identity_difference`]).

use std::path::Path;

use assay_records::{Manifest, SCHEMA};
use serde_json::Value;

use crate::error::RunDirError;

/// A manifest read back: one this assay can read, or an error naming the file, the line and
/// the field.
pub(crate) fn parse_manifest(path: &Path, text: &str) -> Result<Manifest, RunDirError> {
    Ok(read_manifest(path, text)?.0)
}

/// [`parse_manifest`], also giving the manifest as written: fields a newer assay of the same
/// schema added are kept when it is rewritten.
pub(crate) fn read_manifest(path: &Path, text: &str) -> Result<(Manifest, Value), RunDirError> {
    let value: Value = serde_json::from_str(text).map_err(|e| RunDirError::Corrupt {
        path: path.to_path_buf(),
        line: e.line(),
        message: e.to_string(),
    })?;
    let schema = value["schema"].as_u64().unwrap_or(1);
    if schema > u64::from(SCHEMA) {
        return Err(RunDirError::Newer {
            path: path.to_path_buf(),
            schema: u32::try_from(schema).unwrap_or(u32::MAX),
        });
    }
    let manifest = serde_json::from_str(text).map_err(|e| RunDirError::Corrupt {
        path: path.to_path_buf(),
        line: e.line(),
        message: format!("not a manifest: {e}"),
    })?;
    Ok((manifest, value))
}

/// Whether `wanted` continues the run `existing` describes: its manifest names the existing
/// kind in `extends` (an evaluation continuing a generation, say) and its identity keeps every
/// setting of the existing one.
pub(crate) fn extends(existing: &Value, wanted: &Value) -> bool {
    let named = wanted["extends"]
        .as_array()
        .is_some_and(|kinds| kinds.contains(&existing["kind"]));
    let kept = match (
        existing["identity"].as_object(),
        wanted["identity"].as_object(),
    ) {
        (Some(old), Some(new)) => old.iter().all(|(k, v)| new.get(k) == Some(v)),
        _ => false,
    };
    named && kept
}

pub(crate) fn compare_identity(
    path: &Path,
    existing: &Value,
    wanted: &Value,
) -> Result<(), RunDirError> {
    match identity_difference(existing, wanted) {
        None => Ok(()),
        Some((key, existing, wanted)) => Err(RunDirError::Different {
            path: path.to_path_buf(),
            key,
            existing,
            wanted,
        }),
    }
}

/// A run resumes only on a machine set up as the one that started it (when both say).
pub(crate) fn compare_fingerprint(
    path: &Path,
    existing: &Value,
    here: &Value,
) -> Result<(), RunDirError> {
    if existing.is_null() || here.is_null() {
        return Ok(());
    }
    match identity_difference(existing, here) {
        None => Ok(()),
        Some((key, existing, wanted)) => Err(RunDirError::OtherMachine {
            path: path.to_path_buf(),
            key,
            existing,
            wanted,
        }),
    }
}

/// The first field where two identities (as JSON) differ, with its value in each; none when
/// they are equal. Resuming a directory and merging shards both name what differs this way.
pub fn identity_difference(a: &Value, b: &Value) -> Option<(String, String, String)> {
    if a == b {
        return None;
    }
    if let (Some(x), Some(y)) = (a.as_object(), b.as_object()) {
        for key in x.keys().chain(y.keys()) {
            let (u, v) = (
                x.get(key).unwrap_or(&Value::Null),
                y.get(key).unwrap_or(&Value::Null),
            );
            if u != v {
                return Some((key.clone(), u.to_string(), v.to_string()));
            }
        }
    }
    Some(("identity".into(), a.to_string(), b.to_string()))
}
