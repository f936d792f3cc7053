//! Files of a run directory written whole: derived files are written to a temporary name,
//! synced and renamed, so a reader sees them whole or not at all; a file the run replaces is
//! removed if it is there. Apart, as the directory and other crates (an export) write this way.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

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
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes)?;
    file.commit()
}

/// A file written whole or not at all, as it is produced: into a temporary name beside it,
/// synced and renamed on [`AtomicFile::commit`], removed if dropped before. What writes a
/// derived file too large to build in memory first (a run's records, `eval_results.json`).
pub struct AtomicFile {
    path: PathBuf,
    tmp: PathBuf,
    out: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Starts writing `path` (a temporary file until committed).
    pub fn create(path: &Path) -> Result<AtomicFile, RunDirError> {
        let tmp = path.with_extension("tmp-write");
        let file = File::create(&tmp).map_err(io(&tmp))?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            tmp,
            out: Some(BufWriter::new(file)),
        })
    }

    /// Appends `bytes`.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), RunDirError> {
        self.writer().write_all(bytes).map_err(io(&self.tmp))
    }

    /// Appends `value` as one JSON line.
    pub fn write_line(&mut self, value: &impl Serialize) -> Result<(), RunDirError> {
        let tmp = self.tmp.clone();
        let out = self.writer();
        // Records always serialize: what can fail is the disk.
        serde_json::to_writer(&mut *out, value).map_err(|e| io(&tmp)(e.into()))?;
        out.write_all(b"\n").map_err(io(&tmp))
    }

    /// Appends `value` as pretty JSON and a newline, as [`crate::RunDir::write_json`] writes
    /// it: a value that reads what it holds while it is written (the official
    /// `eval_results.json`) fails with what its reading said.
    pub fn write_pretty(&mut self, value: &impl Serialize) -> Result<(), RunDirError> {
        let (tmp, path) = (self.tmp.clone(), self.path.clone());
        let out = self.writer();
        serde_json::to_writer_pretty(&mut *out, value).map_err(|e| {
            if e.is_io() {
                io(&tmp)(e.into())
            } else {
                RunDirError::Unwritable {
                    path: path.clone(),
                    message: e.to_string(),
                }
            }
        })?;
        out.write_all(b"\n").map_err(io(&tmp))
    }

    fn writer(&mut self) -> &mut BufWriter<File> {
        self.out.as_mut().expect("only commit takes the writer")
    }

    /// Syncs the file and puts it in place, whole.
    pub fn commit(mut self) -> Result<(), RunDirError> {
        let out = self.out.take().expect("committed once");
        let file = out
            .into_inner()
            .map_err(|e| io(&self.tmp)(e.into_error()))?;
        file.sync_all().map_err(io(&self.tmp))?;
        std::fs::rename(&self.tmp, &self.path).map_err(io(&self.path))
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.out.is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
