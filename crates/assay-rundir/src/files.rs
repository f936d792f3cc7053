//! Files of a run directory written whole: derived files are written to a temporary name,
//! synced and renamed, so a reader sees them whole or not at all; a file the run replaces is
//! removed if it is there. Apart, as the directory and other crates (an export) write this way.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::error::{io, RunDirError};

pub(crate) fn to_pretty(value: &impl Serialize) -> Vec<u8> {
    let mut text = serde_json::to_vec_pretty(value).expect("JSON values serialize");
    text.push(b'\n');
    text
}

pub(crate) fn remove_if_present(path: &Path) -> Result<(), RunDirError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(path)(e)),
        _ => Ok(()),
    }
}

/// Writes `bytes` to `path` whole or not at all (a temporary file, synced, then renamed), so
/// that a reader never sees half a file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), RunDirError> {
    let tmp = path.with_extension("tmp-write");
    let mut file = File::create(&tmp).map_err(io(&tmp))?;
    file.write_all(bytes).map_err(io(&tmp))?;
    file.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}
