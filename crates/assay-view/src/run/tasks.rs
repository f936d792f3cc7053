//! What the viewer knows of a task beyond its run's records: its number, for task order, and
//! from the BigCodeBench dataset embedded in the binary its libraries, prompt and tests. Apart,
//! as rows, details and official files all ask it, and the datasets are loaded once.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use assay_records::Split;
use assay_tasks::bigcodebench::{Dataset, Subset, VERSIONS};

pub(crate) use assay_records::task_number;

/// The embedded dataset of `version` (the newest when it is not one), loaded once.
fn dataset(version: Option<&str>) -> Option<&'static Dataset> {
    static DATASETS: OnceLock<Mutex<HashMap<&'static str, Option<&'static Dataset>>>> =
        OnceLock::new();
    let version = VERSIONS
        .iter()
        .copied()
        .find(|v| Some(*v) == version)
        .unwrap_or(VERSIONS[0]);
    let mut cache = DATASETS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    *cache.entry(version).or_insert_with(|| {
        Dataset::embedded(version, Subset::Full)
            .ok()
            .map(|d| &*Box::leak(Box::new(d)))
    })
}

pub(super) fn task_of(
    version: Option<&str>,
    task_id: &str,
) -> Option<&'static assay_tasks::bigcodebench::Task> {
    dataset(version)?.get(task_id)
}

/// The task's prompt in the split its run's identity names.
pub(super) fn prompt(task: &assay_tasks::bigcodebench::Task, split: Option<&str>) -> String {
    match Split::named(split) {
        Split::Complete => task.complete_prompt.clone(),
        Split::Instruct => task.instruct_prompt.clone(),
    }
}
