//! The table's rows: one per sample of a run directory's records (BigCodeBench samples,
//! PyBench episodes), each with what the error search looks through. Built apart from the run
//! that caches them, as the rows of an official results file are ([`super::official`]).

use std::collections::BTreeMap;

use assay_records::{EpisodeRecord, SampleRecord, Status};
use serde::Serialize;

use super::tasks::{task_number, task_of};

/// How much of a failure's text the error search looks through, per sample.
pub(super) const SEARCHABLE_BYTES: usize = 8 << 10;

/// A sample as a row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Its key: the sample's index (BigCodeBench), the task's number (PyBench), its position
    /// (an official file).
    pub index: usize,
    /// Its task.
    pub task_id: String,
    /// `pass`, `fail`, `error`, `timeout`, `oom`, `infra`.
    pub status: String,
    /// The first test that did not pass.
    pub test: Option<String>,
    /// Why, in a sentence.
    pub reason: String,
    /// Wall time.
    pub seconds: Option<f64>,
    /// Peak memory.
    pub memory_bytes: Option<u64>,
    /// The model's replies (PyBench).
    pub turns: Option<u32>,
    /// The task's libraries (BigCodeBench) or category (PyBench).
    pub groups: Vec<String>,
    /// BigCodeBench: the kinds of what the sample did to its tests instead of passing them
    /// (its record's `integrity`), each once; empty for a sample that did not game them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gamed: Vec<String>,
    /// Lower-cased reason, failing tests and tracebacks, and standard error: what the error
    /// search looks through.
    #[serde(skip)]
    pub(super) haystack: String,
}

pub(super) fn sample_rows(records: &[SampleRecord], version: Option<&str>) -> Vec<Row> {
    // The last record of a sample wins (a resumed run may have judged it again).
    let mut by_index: BTreeMap<usize, &SampleRecord> = BTreeMap::new();
    for record in records {
        by_index.insert(record.index, record);
    }
    by_index
        .into_values()
        .map(|r| {
            let mut haystack = r.reason.clone();
            for test in r.tests.iter().filter(|t| !t.result.counts_as_passing()) {
                haystack.push('\n');
                haystack.push_str(&test.name);
                haystack.push('\n');
                haystack.push_str(head(&test.detail, SEARCHABLE_BYTES));
            }
            for finding in &r.integrity {
                haystack.push('\n');
                haystack.push_str(&finding.to_string());
            }
            haystack.push('\n');
            haystack.push_str(head(&r.stderr.text, SEARCHABLE_BYTES));
            let mut gamed: Vec<String> = r
                .integrity
                .iter()
                .map(|f| f.kind.as_str().to_string())
                .collect();
            gamed.sort();
            gamed.dedup();
            Row {
                index: r.index,
                task_id: r.task_id.clone(),
                status: r.status.as_str().into(),
                test: r.first_failure().map(|t| t.name.clone()),
                reason: r.reason.clone(),
                seconds: Some(r.wall_seconds),
                memory_bytes: r.memory_peak_bytes,
                turns: None,
                groups: task_of(version, &r.task_id)
                    .map(|t| t.libs.clone())
                    .unwrap_or_default(),
                gamed,
                haystack: haystack.to_lowercase(),
            }
        })
        .collect()
}

pub(super) fn episode_rows(records: &[EpisodeRecord]) -> Vec<Row> {
    let mut by_task: BTreeMap<u64, &EpisodeRecord> = BTreeMap::new();
    for record in records {
        by_task.insert(task_number(&record.task_id), record);
    }
    by_task
        .into_iter()
        .map(|(number, r)| {
            let mut haystack = r.reason.clone();
            for cell in r.cells.iter().filter(|c| c.status != Status::Pass) {
                haystack.push('\n');
                haystack.push_str(&cell.reason);
            }
            Row {
                index: usize::try_from(number).unwrap_or(usize::MAX),
                task_id: r.task_id.clone(),
                status: r.status.as_str().into(),
                test: None,
                reason: r.reason.clone(),
                seconds: Some(r.seconds),
                memory_bytes: None,
                turns: Some(r.turns),
                groups: r.category.iter().cloned().collect(),
                gamed: Vec::new(),
                haystack: haystack.to_lowercase(),
            }
        })
        .collect()
}

/// At most `max` bytes of `text`, cut at a character boundary.
pub(super) fn head(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A traceback's last line: the exception and its message.
pub(super) fn last_line(traceback: &str) -> Option<String> {
    traceback
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string())
}

#[cfg(test)]
mod tests {
    use assay_records::Kind;

    use crate::run::testing::{run_dir, sample_record};
    use crate::run::{Filter, RunSource};

    #[test]
    fn a_row_names_the_first_test_that_did_not_pass_and_searches_every_one() {
        let tests = [
            ("test_skipped", "skip"),
            ("test_expected", "xfail"),
            ("test_wrong", "fail"),
            ("test_raised", "error"),
        ];
        let dir = run_dir(
            Kind::BigcodebenchEval,
            &[(
                "results.jsonl",
                sample_record(0, "BigCodeBench/1", "fail", &tests)
                    + &sample_record(1, "BigCodeBench/2", "pass", &[("test_a", "pass")]),
            )],
        );
        let run = RunSource::open(0, dir.path()).unwrap();
        let page = run.page(&Filter::default()).unwrap();
        assert_eq!(page.rows[0].test.as_deref(), Some("test_wrong"));
        assert_eq!(page.rows[1].test, None);
        let matching = |q: &str| {
            let filter = Filter {
                q: Some(q.into()),
                ..Filter::default()
            };
            run.page(&filter).unwrap().matched
        };
        assert_eq!(matching("test_raised"), 1);
        assert_eq!(matching("test_skipped"), 0, "a skip is not a failure");
    }
}
