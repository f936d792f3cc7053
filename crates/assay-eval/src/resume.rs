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

/// The verdicts `records` (an earlier session's) already give, by sample index. A record
/// counts for a sample of the same task that executes the same program, wherever that sample
/// now is in the file (a resumed run may have added answers since); records that fit no
/// sample are dropped.
pub fn reuse<'a>(
    records: Vec<SampleRecord>,
    wanted: impl IntoIterator<Item = Wanted<'a>>,
) -> BTreeMap<usize, SampleRecord> {
    let mut earlier: HashMap<(String, String), Vec<SampleRecord>> = HashMap::new();
    for record in records {
        earlier
            .entry((record.task_id.clone(), record.program_digest.clone()))
            .or_default()
            .push(record);
    }
    let mut results = BTreeMap::new();
    for sample in wanted {
        let key = (sample.task_id.to_string(), sample.digest.to_string());
        if let Some(mut record) = earlier.get_mut(&key).and_then(Vec::pop) {
            record.index = sample.index;
            results.insert(sample.index, record);
        }
    }
    results
}
