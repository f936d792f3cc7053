//! The append-only JSON-lines logs of a run: appending (flushed at once, synced about every
//! second), and reading back the complete records, cutting a line torn by a kill. Apart from
//! the directory ([`crate::RunDir`]), which keeps `results.jsonl` as one and opens others.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{io, RunDirError};

const SYNC_EVERY: Duration = Duration::from_secs(1);

/// An append-only JSON-lines log (`results.jsonl`, a generation log...): every record is
/// flushed as it is appended (a killed process loses nothing), synced to the disk with the
/// first record a second after the last sync and on [`Journal::sync`] (a power loss loses
/// about a second), and a record torn by a kill is dropped when the log is opened again.
pub struct Journal {
    path: PathBuf,
    file: File,
    last_sync: Instant,
}

impl Journal {
    /// Opens the log at `path` (created if absent) with the complete records already in it.
    pub fn open<R: DeserializeOwned>(path: &Path) -> Result<(Journal, Vec<R>), RunDirError> {
        let records = read_records(path)?;
        Ok((Journal::append_to(path)?, records))
    }

    /// Opens the log at `path` to append to, reading nothing: for a log just written whole.
    pub(crate) fn append_to(path: &Path) -> Result<Journal, RunDirError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)
            .map_err(io(path))?;
        Ok(Journal {
            path: path.to_path_buf(),
            file,
            last_sync: Instant::now(),
        })
    }

    /// Appends one record.
    pub fn append(&mut self, record: &impl Serialize) -> Result<(), RunDirError> {
        self.write(record, false)
    }

    /// Appends one record, first cutting a torn line another process may have left.
    pub(crate) fn write(
        &mut self,
        record: &impl Serialize,
        cut_first: bool,
    ) -> Result<(), RunDirError> {
        let mut line = serde_json::to_vec(record).expect("records serialize");
        line.push(b'\n');
        let written = (|| {
            if cut_first {
                cut_torn_tail(&self.file)?;
            }
            self.file.write_all(&line)?;
            self.file.flush()
        })();
        written.map_err(io(&self.path))?;
        if self.last_sync.elapsed() >= SYNC_EVERY {
            self.sync()?;
        }
        Ok(())
    }

    /// Forces every appended record to disk.
    pub fn sync(&mut self) -> Result<(), RunDirError> {
        self.file.sync_data().map_err(io(&self.path))?;
        self.last_sync = Instant::now();
        Ok(())
    }
}

/// The complete records of `results.jsonl`. A torn last line (the writer was killed mid-line)
/// is cut off so that appending continues cleanly; a bad line anywhere else is corruption.
fn read_records<R: DeserializeOwned>(path: &Path) -> Result<Vec<R>, RunDirError> {
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(path)(e)),
    };
    let mut records = Vec::new();
    let mut good_len = 0u64;
    let mut reader = BufReader::new(&mut file);
    let mut line = String::new();
    let mut number = 0;
    loop {
        line.clear();
        let read = reader.read_line(&mut line).map_err(io(path))?;
        if read == 0 {
            break;
        }
        number += 1;
        if !line.ends_with('\n') {
            break; // torn by a kill: every record this process writes ends with a newline
        }
        match serde_json::from_str::<R>(line.trim_end()) {
            Ok(value) => {
                records.push(value);
                good_len += read as u64;
            }
            Err(e) => {
                let what = if e.is_data() {
                    "not a valid record"
                } else {
                    "not a JSON record"
                };
                return Err(RunDirError::Corrupt {
                    path: path.to_path_buf(),
                    line: number,
                    message: format!("{what}: {e}"),
                });
            }
        }
    }
    drop(reader);
    let len = file.seek(SeekFrom::End(0)).map_err(io(path))?;
    if len != good_len {
        file.set_len(good_len).map_err(io(path))?;
    }
    Ok(records)
}

/// Truncates `file` after its last newline.
fn cut_torn_tail(mut file: &File) -> std::io::Result<()> {
    let len = file.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok(());
    }
    let mut keep = len;
    let mut chunk = [0u8; 4096];
    while keep > 0 {
        let start = keep.saturating_sub(chunk.len() as u64);
        let part = &mut chunk[..(keep - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        std::io::Read::read_exact(&mut file, part)?;
        if let Some(at) = part.iter().rposition(|&b| b == b'\n') {
            keep = start + at as u64 + 1;
            break;
        }
        keep = start;
    }
    if keep != len {
        file.set_len(keep)?;
    }
    Ok(())
}
