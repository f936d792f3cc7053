//! Resuming a judging run: which verdicts of an earlier session still hold. Matched by what a
//! record says of itself (its sample's place, task and program), so that the records can stay
//! on disk: a run's memory does not grow with them.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use assay_records::{SampleRecord, Status};
use assay_rundir::RunDirError;
use serde::Deserialize;

use crate::records::{each_line, Span};

/// A sample to judge, as resume matches it: its position, its task and the digest of the
/// program it executes.
pub struct Wanted<'a> {
    /// Position in the samples file.
    pub index: usize,
    /// The task.
    pub task_id: &'a str,
    /// Digest of the program it runs.
    pub digest: &'a str,
}

/// What resume matches a record by: its sample's place when it was made, its task and the
/// digest of the program it ran.
pub trait Keyed {
    /// The place, task and program digest.
    fn key(&self) -> (usize, &str, &str);
    /// Moves it to the sample at `index`.
    fn moved_to(&mut self, index: usize);
}

impl Keyed for SampleRecord {
    fn key(&self) -> (usize, &str, &str) {
        (self.index, &self.task_id, &self.program_digest)
    }

    fn moved_to(&mut self, index: usize) {
        self.index = index;
    }
}

/// A record of `results.jsonl` as resume needs it, read without the rest (its tests, its
/// output), with its verdict's status.
#[derive(Debug, Clone, Deserialize)]
pub struct RecordKey {
    /// The sample's place when it was made.
    pub index: usize,
    /// The task.
    pub task_id: String,
    /// What it ran.
    pub program_digest: String,
    /// Its verdict.
    pub status: Status,
}

impl Keyed for RecordKey {
    fn key(&self) -> (usize, &str, &str) {
        (self.index, &self.task_id, &self.program_digest)
    }

    fn moved_to(&mut self, index: usize) {
        self.index = index;
    }
}

/// A record's key and where its line lies.
pub struct Located {
    /// The key.
    pub key: RecordKey,
    /// Its line.
    pub span: Span,
}

impl Keyed for Located {
    fn key(&self) -> (usize, &str, &str) {
        self.key.key()
    }

    fn moved_to(&mut self, index: usize) {
        self.key.moved_to(index);
    }
}

/// The keys of `path`'s complete records, with where each lies.
pub fn locate(path: &Path) -> Result<Vec<Located>, RunDirError> {
    let mut located = Vec::new();
    each_line(path, |key, span| {
        located.push(Located { key, span });
        Ok::<_, RunDirError>(())
    })?;
    Ok(located)
}

/// An earlier session's records by task and program: each counts once, for an answer of the
/// same task that runs the same program.
pub struct Earlier<T>(HashMap<(String, String), Vec<T>>);

impl<T: Keyed> Earlier<T> {
    /// `records`, by task and program digest.
    pub fn new(records: Vec<T>) -> Earlier<T> {
        let mut earlier: HashMap<(String, String), Vec<T>> = HashMap::new();
        for record in records {
            let (_, task_id, digest) = record.key();
            earlier
                .entry((task_id.to_string(), digest.to_string()))
                .or_default()
                .push(record);
        }
        Earlier(earlier)
    }

    /// A record of `task_id` running the program of `digest`, once, moved to `index`: the one
    /// made at `index` if there is one (two samples running one program keep their own
    /// records).
    pub fn take(&mut self, task_id: &str, digest: &str, index: usize) -> Option<T> {
        let records = self.0.get_mut(&(task_id.to_string(), digest.to_string()))?;
        let mut record = match records.iter().position(|r| r.key().0 == index) {
            Some(at) => records.swap_remove(at),
            None => records.pop()?,
        };
        record.moved_to(index);
        Some(record)
    }
}

/// The verdicts `records` (an earlier session's, or a run's made as its answers arrived)
/// give, by sample index. A record counts for a sample of the same task that executes the
/// same program, wherever that sample now is in the file (a resumed run may have added answers
/// since); records that fit no sample are dropped.
pub fn reuse<'a, T: Keyed>(
    records: Vec<T>,
    wanted: impl IntoIterator<Item = Wanted<'a>>,
) -> BTreeMap<usize, T> {
    let mut earlier = Earlier::new(records);
    let mut results = BTreeMap::new();
    for sample in wanted {
        if let Some(record) = earlier.take(sample.task_id, sample.digest, sample.index) {
            results.insert(sample.index, record);
        }
    }
    results
}
