//! Files of a run read as they change: a journal (`results.jsonl`...) is read on from where the
//! last read stopped while it grows, and again from the start when it was replaced (a run
//! rewrites `results.jsonl` whole at its end); a whole document (`manifest.json`...) is read
//! again when its size, time or inode change. A viewer that asks on every request thus
//! follows a run in progress for the cost of a `stat`.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::de::DeserializeOwned;

use crate::{io_error, ViewError};

/// A JSON-lines file and the records read from it so far, in file order.
pub struct Journal<T> {
    path: PathBuf,
    inode: Option<u64>,
    /// Bytes read: up to the end of the last whole line.
    consumed: u64,
    lines: usize,
    records: Vec<T>,
    changes: u64,
}

impl<T: DeserializeOwned> Journal<T> {
    /// `path`, not read yet.
    pub fn new(path: PathBuf) -> Journal<T> {
        Journal {
            path,
            inode: None,
            consumed: 0,
            lines: 0,
            records: Vec::new(),
            changes: 0,
        }
    }

    /// Reads what was added since the last call (everything, when the file was replaced or
    /// cut). A last line without its newline is still being written: it is left for later.
    /// Returns whether the records changed.
    pub fn refresh(&mut self) -> Result<bool, ViewError> {
        let changed = self.read_on()?;
        self.changes += u64::from(changed);
        Ok(changed)
    }

    /// How many times the records changed: what was built from them is stale when this moved.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    fn read_on(&mut self) -> Result<bool, ViewError> {
        let meta = match std::fs::metadata(&self.path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let had = self.inode.is_some();
                self.reset(None);
                return Ok(had);
            }
            Err(e) => return Err(io_error(&self.path, e)),
        };
        let mut changed = false;
        if self.inode != Some(meta.ino()) || meta.len() < self.consumed {
            changed = self.inode.is_some();
            self.reset(Some(meta.ino()));
        }
        if meta.len() == self.consumed {
            return Ok(changed);
        }
        let mut file = std::fs::File::open(&self.path).map_err(|e| io_error(&self.path, e))?;
        file.seek(SeekFrom::Start(self.consumed))
            .map_err(|e| io_error(&self.path, e))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| io_error(&self.path, e))?;
        let Some(end) = bytes.iter().rposition(|&b| b == b'\n') else {
            return Ok(changed);
        };
        let mut fresh = Vec::new();
        let mut lines = self.lines;
        for line in bytes[..end].split(|&b| b == b'\n') {
            lines += 1;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice(line) {
                Ok(record) => fresh.push(record),
                Err(e) => {
                    // Read again from the start next time: the file may be fixed or replaced.
                    self.reset(None);
                    return Err(ViewError::Invalid {
                        path: self.path.clone(),
                        line: lines,
                        message: format!("not a valid record: {e}"),
                    });
                }
            }
        }
        self.records.extend(fresh);
        self.lines = lines;
        self.consumed += end as u64 + 1;
        Ok(true)
    }

    fn reset(&mut self, inode: Option<u64>) {
        self.inode = inode;
        self.consumed = 0;
        self.lines = 0;
        self.records.clear();
    }

    /// The records read, in file order.
    pub fn records(&self) -> &[T] {
        &self.records
    }
}

/// What tells a whole file's versions apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    inode: u64,
    len: u64,
    modified: Option<SystemTime>,
}

/// The stamp of `path`, none when it does not exist.
pub fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Stamp {
        inode: meta.ino(),
        len: meta.len(),
        modified: meta.modified().ok(),
    })
}

/// A whole JSON document, read again when it changes.
pub struct Document<T> {
    path: PathBuf,
    stamp: Option<Stamp>,
    value: Option<T>,
    reads: u64,
}

impl<T: DeserializeOwned> Document<T> {
    /// `path`, not read yet.
    pub fn new(path: PathBuf) -> Document<T> {
        Document {
            path,
            stamp: None,
            value: None,
            reads: 0,
        }
    }

    /// How many times the file was read: a change of it means the document may have changed.
    pub fn reads(&self) -> u64 {
        self.reads
    }

    /// The document as it is now; none when the file does not exist.
    pub fn get(&mut self) -> Result<Option<&T>, ViewError> {
        let now = stamp(&self.path);
        if now != self.stamp || (now.is_some() && self.value.is_none()) {
            self.value = match now {
                None => None,
                Some(_) => {
                    let text =
                        std::fs::read_to_string(&self.path).map_err(|e| io_error(&self.path, e))?;
                    Some(serde_json::from_str(&text).map_err(|e| ViewError::Invalid {
                        path: self.path.clone(),
                        line: e.line(),
                        message: format!("not what it should be: {e}"),
                    })?)
                }
            };
            self.stamp = now;
            self.reads += 1;
        }
        Ok(self.value.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_growing_journal_is_read_on_and_a_replaced_one_from_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let mut journal: Journal<serde_json::Value> = Journal::new(path.clone());
        assert!(!journal.refresh().unwrap());
        std::fs::write(&path, "{\"a\": 1}\n{\"a\": 2").unwrap();
        assert!(journal.refresh().unwrap());
        assert_eq!(journal.records().len(), 1, "a torn last line waits");
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(b"}\n").unwrap();
        assert!(journal.refresh().unwrap());
        assert_eq!(journal.records()[1]["a"], 2);
        assert!(!journal.refresh().unwrap(), "nothing new");

        let fresh = dir.path().join("new.jsonl");
        std::fs::write(&fresh, "{\"a\": 3}\n").unwrap();
        std::fs::rename(&fresh, &path).unwrap();
        assert!(journal.refresh().unwrap());
        assert_eq!(journal.records().len(), 1);
        assert_eq!(journal.records()[0]["a"], 3);
    }

    #[test]
    fn a_bad_line_is_named_by_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        std::fs::write(&path, "{}\n\nnot json\n").unwrap();
        let mut journal: Journal<serde_json::Value> = Journal::new(path);
        let err = journal.refresh().unwrap_err().to_string();
        assert!(
            err.ends_with("results.jsonl:3: not a valid record: expected ident at line 1 column 2"),
            "{err}"
        );
    }
}
