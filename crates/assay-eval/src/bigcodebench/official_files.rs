//! The official result files, written from the records: `eval_results.json` and
//! `pass_at_k.json`, in the official harness's shapes.

use std::collections::{BTreeMap, HashMap};

use assay_records::{GroundTruthSummary, SampleRecord, Scores, Split, Utc};
use assay_rundir::{RunDir, RunDirError};
use assay_tasks::bigcodebench::{Dataset, Task};
use serde_json::{json, Value};

use super::ground_truth::failed_ids;
use super::samples::Samples;
use assay_records::verdict::Details;

/// What the official files are written from.
pub(crate) struct Written<'a> {
    pub dataset: &'a Dataset,
    pub samples: &'a Samples,
    pub split: Split,
    pub calibrated: bool,
    /// The model's name in `pass_at_k.json`.
    pub model: &'a str,
    /// The program each sample ran, by sample index.
    pub programs: &'a [(String, String)],
    pub results: &'a BTreeMap<usize, SampleRecord>,
    pub scores: &'a Scores,
    pub ground_truth: &'a GroundTruthSummary,
}

impl Written<'_> {
    /// `eval_results.json` (official shape: the executed program, status and details of every
    /// sample with a verdict, by task in task order, samples in file order) and `pass_at_k.json`.
    pub fn write(&self, run: &RunDir) -> Result<(), RunDirError> {
        let tasks: HashMap<&str, &Task> = self.dataset.by_id();
        let mut eval: BTreeMap<u32, (String, Vec<Value>)> = BTreeMap::new();
        for sample in &self.samples.samples {
            let Some(result) = self.results.get(&sample.index) else {
                continue;
            };
            let Some(verdict) = &result.official else {
                continue;
            };
            let entry = json!({
                "task_id": sample.task_id,
                "solution": self.programs[sample.index].0,
                "status": verdict.status,
                "details": serde_json::to_value(Details(&verdict.details)).expect("details serialize"),
            });
            eval.entry(tasks[sample.task_id.as_str()].number())
                .or_insert_with(|| (sample.task_id.clone(), Vec::new()))
                .1
                .push(entry);
        }
        let mut by_task = serde_json::Map::new();
        for (_, (task_id, entries)) in eval {
            by_task.insert(task_id, Value::Array(entries));
        }
        let date = format_minute(run.manifest()?.started_at);
        run.write_json("eval_results.json", &json!({"date": date, "eval": by_task}))?;
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
