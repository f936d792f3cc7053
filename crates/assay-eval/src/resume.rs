//! Resuming a judging run: which verdicts of an earlier session still hold.

use std::collections::{BTreeMap, HashMap};

use assay_records::SampleRecord;

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

/// An earlier session's records by task and program: each counts once, for an answer of the
/// same task that runs the same program.
pub struct Earlier(HashMap<(String, String), Vec<SampleRecord>>);

impl Earlier {
    /// `records`, by task and program digest.
    pub fn new(records: Vec<SampleRecord>) -> Earlier {
        let mut earlier: HashMap<(String, String), Vec<SampleRecord>> = HashMap::new();
        for record in records {
            earlier
                .entry((record.task_id.clone(), record.program_digest.clone()))
                .or_default()
                .push(record);
        }
        Earlier(earlier)
    }

    /// A record of `task_id` running the program of `digest`, once: the one made at `index`
    /// if there is one (two samples running one program keep their own records).
    pub fn take(&mut self, task_id: &str, digest: &str, index: usize) -> Option<SampleRecord> {
        let records = self.0.get_mut(&(task_id.to_string(), digest.to_string()))?;
        match records.iter().position(|r| r.index == index) {
            Some(at) => Some(records.swap_remove(at)),
            None => records.pop(),
        }
    }
}

/// The verdicts `records` (an earlier session's, or a run's made as its answers arrived)
/// give, by sample index. A record
/// counts for a sample of the same task that executes the same program, wherever that sample
/// now is in the file (a resumed run may have added answers since); records that fit no
/// sample are dropped.
pub fn reuse<'a>(
    records: Vec<SampleRecord>,
    wanted: impl IntoIterator<Item = Wanted<'a>>,
) -> BTreeMap<usize, SampleRecord> {
    let mut earlier = Earlier::new(records);
    let mut results = BTreeMap::new();
    for sample in wanted {
        if let Some(mut record) = earlier.take(sample.task_id, sample.digest, sample.index) {
            record.index = sample.index;
            results.insert(sample.index, record);
        }
    }
    results
}
