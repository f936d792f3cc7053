//! How long the slowest sample of each task took in the evaluations here: with the
//! reference's time, the order in which an evaluation starts its samples.
//!
//! The reference's time predicts most samples' well, but not all: a task whose reference
//! generates a small RSA key in 0.3 s has samples that generate large ones for 10 to 40 s,
//! whichever model wrote them. Started where its reference puts it, near the end, such a
//! sample runs on alone while the other CPUs idle. Evaluations of other models on the same
//! dataset and environment know better, so they are kept next to the reference results
//! (hidden from jobs like them) and the slower of the two times decides the order. Only the
//! order: no limit or verdict depends on them.
//!
//! The slowest sample ever seen, not the latest: how long a task's sample takes depends on the
//! model (one model's RSA samples take 20 s where another's take 0.2 s), and the order only
//! needs to start early whatever may be long. Starting a sample that turns out quick early
//! costs nothing, since quick samples fill the gaps wherever they run; starting a long one
//! late costs its whole length at the end of the run.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::slow_tasks;

/// The file, in the reference results' directory.
pub const FILE: &str = "sample_times.json";

/// Task id → wall seconds of its slowest sample (timeouts included: a sample that hangs
/// costs its budget) in any evaluation that judged it.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleTimes {
    tasks: BTreeMap<String, f64>,
}

impl SampleTimes {
    /// Reads `dir`'s file. None yet, or one that does not read (another version's, a torn
    /// copy): nothing known, said in the log; only the order of samples suffers.
    pub fn load(dir: &Path) -> SampleTimes {
        let path = dir.join(FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).unwrap_or_else(|e| {
                tracing::warn!("{}: ignored ({e})", path.display());
                SampleTimes::default()
            }),
            Err(_) => SampleTimes::default(),
        }
    }

    /// How long a sample of `task_id` is expected to take, given its reference's time (none:
    /// not measured here yet, so the time it took when assay was built, if it is a slow one).
    pub fn expected(&self, task_id: &str, reference_seconds: Option<f64>) -> f64 {
        let seen = self.tasks.get(task_id).copied().unwrap_or(0.0);
        let reference = reference_seconds.or_else(|| slow_tasks::reference_seconds(task_id));
        seen.max(reference.unwrap_or(0.0))
    }

    /// Takes an evaluation's times: per task, its slowest sample run to a verdict (`infra`
    /// says nothing; see [`super::summary::Tally::walls`]). A task's sample slower than any
    /// seen before raises its time.
    pub fn learn(&mut self, walls: &BTreeMap<String, f64>) {
        for (task_id, &wall) in walls {
            let seconds = self.tasks.entry(task_id.clone()).or_insert(0.0);
            *seconds = seconds.max(wall);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bigcodebench::summary::Tally;
    use assay_records::{SampleRecord, Status};

    /// What a tally of `records` gives to learn.
    fn walls(records: &[SampleRecord]) -> BTreeMap<String, f64> {
        let mut tally = Tally::default();
        for record in records {
            tally.add(record);
        }
        tally.walls().clone()
    }

    fn record(task_id: &str, status: Status, wall_seconds: f64) -> SampleRecord {
        let line = serde_json::json!({
            "index": 0, "task_id": task_id, "program_digest": "0", "status": status,
            "reason": "", "official": null, "infra": null, "tests": [],
            "wall_seconds": wall_seconds, "cpu_seconds": null, "memory_peak_bytes": null,
            "processes_peak": null, "isolation": "full",
        });
        serde_json::from_value(line).unwrap()
    }

    #[test]
    fn the_slowest_judged_sample_ever_seen_sets_the_order() {
        let mut times = SampleTimes::default();
        times.learn(&walls(&[
            record("T/1", Status::Pass, 30.0),
            record("T/1", Status::Fail, 2.0),
            record("T/2", Status::Timeout, 20.0),
            record("T/3", Status::Infra, 99.0),
        ]));
        // A slow sample beats a quick reference; a slow reference beats a quick sample.
        assert_eq!(times.expected("T/1", Some(0.3)), 30.0);
        assert_eq!(times.expected("T/2", Some(60.0)), 60.0);
        // `infra` says nothing; an unknown task has its reference's time, or the one it had
        // when assay was built, or nothing.
        assert_eq!(times.expected("T/3", Some(1.0)), 1.0);
        assert_eq!(times.expected("T/4", None), 0.0);
        assert_eq!(times.expected("BigCodeBench/461", Some(0.5)), 0.5);
        assert!(times.expected("BigCodeBench/461", None) > 100.0);
        // A later run's quicker sample changes nothing; a slower one raises the time.
        times.learn(&walls(&[
            record("T/1", Status::Pass, 1.0),
            record("T/2", Status::Pass, 25.0),
        ]));
        assert_eq!(times.expected("T/1", Some(0.3)), 30.0);
        assert_eq!(times.expected("T/2", None), 25.0);
    }

    #[test]
    fn a_file_that_does_not_read_is_nothing_known() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(SampleTimes::load(dir.path()), SampleTimes::default());
        std::fs::write(dir.path().join(FILE), "{\"tasks\": {\"T/1\": ").unwrap();
        assert_eq!(SampleTimes::load(dir.path()), SampleTimes::default());
        let mut times = SampleTimes::default();
        times.learn(&walls(&[record("T/1", Status::Pass, 3.0)]));
        std::fs::write(
            dir.path().join(FILE),
            serde_json::to_string(&times).unwrap(),
        )
        .unwrap();
        assert_eq!(SampleTimes::load(dir.path()), times);
    }
}
