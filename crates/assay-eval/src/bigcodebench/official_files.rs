//! The official result files, written from the records: `eval_results.json` and
//! `pass_at_k.json`, in the official harness's shapes. `eval_results.json` holds every sample's
//! program and details, so it is written as it is read, one sample at a time from the records
//! and the samples on disk.

use std::collections::{BTreeMap, HashMap};

use assay_records::{GroundTruthSummary, SampleRecord, Scores, Split, Utc};
use assay_rundir::{RunDir, RunDirError};
use assay_tasks::bigcodebench::{Dataset, Task};
use serde::ser::{Error as _, SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{json, Value};

use super::ground_truth::failed_ids;
use super::samples::{program, Reader, Samples};
use crate::records::{RecordFile, Span};
use assay_records::verdict::Details;

/// The samples with an official verdict, by task id (in the order `eval_results.json` has
/// always listed them: as strings sort): their indexes, in file order.
pub(crate) type ByTask = BTreeMap<String, Vec<usize>>;

/// What the official files are written from.
pub(crate) struct Written<'a> {
    pub dataset: &'a Dataset,
    pub samples: &'a Samples,
    pub split: Split,
    pub calibrated: bool,
    /// The model's name in `pass_at_k.json`.
    pub model: &'a str,
    /// `results.jsonl`, one record per sample in sample order, and where each lies.
    pub records: &'a RecordFile,
    pub spans: &'a [Span],
    /// The samples `eval_results.json` lists.
    pub judged: &'a ByTask,
    pub scores: &'a Scores,
    pub ground_truth: &'a GroundTruthSummary,
}

impl Written<'_> {
    /// `eval_results.json` (official shape: the executed program, status and details of every
    /// sample with a verdict, by task, samples in file order) and `pass_at_k.json`.
    pub fn write(&self, run: &RunDir) -> Result<(), RunDirError> {
        let entries = Entries {
            written: self,
            tasks: self.dataset.by_id(),
            samples: self.samples.reader().map_err(|e| RunDirError::Unwritable {
                path: run.path().join("eval_results.json"),
                message: e.to_string(),
            })?,
        };
        let date = format_minute(run.manifest()?.started_at);
        let mut file = run.create("eval_results.json")?;
        file.write_pretty(&EvalResults {
            date,
            eval: &entries,
        })?;
        file.commit()?;
        let scores = self.scores;
        let mut pass_at_k = serde_json::Map::new();
        for (k, value) in &scores.pass_at_k {
            pass_at_k.insert(k.clone(), json!(value));
        }
        pass_at_k.insert("model".into(), json!(self.model));
        pass_at_k.insert("split".into(), json!(self.split.as_str()));
        pass_at_k.insert("subset".into(), json!(self.dataset.subset.as_str()));
        pass_at_k.insert("calibrated".into(), json!(self.calibrated));
        pass_at_k.insert("gt_pass_rate".into(), json!(self.ground_truth.pass_rate));
        pass_at_k.insert("failed_tasks".into(), json!(failed_ids(self.ground_truth)));
        // Not in the official file: what the figures above leave out, and the figure the
        // official harness would give here.
        pass_at_k.insert("tasks_judged".into(), json!(scores.tasks_judged));
        pass_at_k.insert(
            "tasks_set_apart".into(),
            json!(scores.tasks_set_apart.len()),
        );
        pass_at_k.insert("samples_set_apart".into(), json!(scores.samples_set_apart));
        pass_at_k.insert(
            "infra_as_fail".into(),
            json!(scores.pass_at_k_infra_as_fail),
        );
        run.write_json("pass_at_k.json", &Value::Object(pass_at_k))
    }
}

/// `eval_results.json`: `{"date": ..., "eval": {task: [entry...]}}`.
#[derive(Serialize)]
struct EvalResults<'a> {
    date: String,
    eval: &'a Entries<'a>,
}

/// The `eval` object, each entry read from disk as it is written.
struct Entries<'a> {
    written: &'a Written<'a>,
    tasks: HashMap<&'a str, &'a Task>,
    samples: Reader<'a>,
}

impl Entries<'_> {
    /// The official entry of sample `index`: its task, the program it executed, its status
    /// and details.
    fn entry(&self, index: usize) -> Result<Value, String> {
        let written = self.written;
        let sample = &written.samples.samples[index];
        let task = self.tasks[sample.task_id.as_str()];
        let code = self.samples.code(sample).map_err(|e| e.to_string())?;
        let record: SampleRecord = written
            .records
            .read(written.spans[index])
            .map_err(|e| e.to_string())?;
        let verdict = record
            .official
            .ok_or_else(|| format!("sample {index}'s record has no verdict"))?;
        Ok(json!({
            "task_id": sample.task_id,
            "solution": program(&code.solution(task), task, written.calibrated),
            "status": verdict.status,
            "details": serde_json::to_value(Details(&verdict.details)).expect("details serialize"),
        }))
    }
}

impl Serialize for Entries<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.written.judged.len()))?;
        for (task_id, indexes) in self.written.judged {
            map.serialize_entry(task_id, &TaskEntries(self, indexes))?;
        }
        map.end()
    }
}

/// One task's entries.
struct TaskEntries<'a>(&'a Entries<'a>, &'a [usize]);

impl Serialize for TaskEntries<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.1.len()))?;
        for &index in self.1 {
            seq.serialize_element(&self.0.entry(index).map_err(S::Error::custom)?)?;
        }
        seq.end()
    }
}

/// `pass_at_k.json` of a check of the reference solutions: the official `gt_pass_rate` and
/// `failed_tasks`.
pub fn write_ground_truth(
    run: &RunDir,
    dataset: &Dataset,
    ground_truth: &GroundTruthSummary,
) -> Result<(), RunDirError> {
    run.write_json(
        "pass_at_k.json",
        &json!({
            "subset": dataset.subset.as_str(),
            "gt_pass_rate": ground_truth.pass_rate,
            "failed_tasks": failed_ids(ground_truth),
        }),
    )
}

/// `YYYY-MM-DD HH:MM` (UTC), the official results' date format.
fn format_minute(unix: u64) -> String {
    let t = Utc::of(unix);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        t.year, t.month, t.day, t.hour, t.minute
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn official_dates() {
        assert_eq!(format_minute(0), "1970-01-01 00:00");
        assert_eq!(format_minute(1_735_095_060), "2024-12-25 02:51");
        assert_eq!(format_minute(951_782_400), "2000-02-29 00:00");
    }
}
