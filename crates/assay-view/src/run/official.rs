//! An official `*_eval_results.json`: its shape, its samples in task order, and its rows. Apart
//! from the run directory's rows ([`super::rows`]), as the file is another format: samples by
//! task, each failing test with its traceback.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::rows::{head, last_line, Row, SEARCHABLE_BYTES};
use super::tasks::{task_number, task_of};

/// An official `*_eval_results.json`.
#[derive(Deserialize)]
pub(super) struct OfficialFile {
    eval: BTreeMap<String, Vec<Value>>,
}

/// The official file's samples in task order (by number), each with its task.
pub(super) fn official_samples(file: &OfficialFile) -> impl Iterator<Item = (&String, &Value)> {
    let mut tasks: Vec<(&String, &Vec<Value>)> = file.eval.iter().collect();
    tasks.sort_by_key(|(id, _)| task_number(id));
    tasks
        .into_iter()
        .flat_map(|(id, samples)| samples.iter().map(move |s| (id, s)))
}

pub(super) fn official_rows(file: &OfficialFile) -> Vec<Row> {
    official_samples(file)
        .enumerate()
        .map(|(index, (task_id, sample))| {
            let status = sample["status"].as_str().unwrap_or("fail").to_string();
            let details = sample["details"].as_object();
            let first = details.and_then(|d| d.iter().next());
            let mut haystack = String::new();
            for (name, detail) in details.into_iter().flatten() {
                haystack.push_str(name);
                haystack.push('\n');
                haystack.push_str(head(detail.as_str().unwrap_or_default(), SEARCHABLE_BYTES));
            }
            Row {
                index,
                task_id: task_id.clone(),
                reason: first
                    .and_then(|(_, d)| last_line(d.as_str().unwrap_or_default()))
                    .or_else(|| first.map(|(name, _)| format!("{name} did not pass")))
                    .unwrap_or_else(|| status.clone()),
                status,
                test: first.map(|(name, _)| name.clone()),
                seconds: None,
                memory_bytes: None,
                turns: None,
                groups: task_of(None, task_id)
                    .map(|t| t.libs.clone())
                    .unwrap_or_default(),
                gamed: Vec::new(),
                haystack: haystack.to_lowercase(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::task_of;
    use crate::run::{Filter, RunSource};

    #[test]
    fn official_rows_say_the_exception_and_filter_by_task_number_and_failing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir
            .path()
            .join("m--bigcodebench-complete--x_eval_results.json");
        let sample = |status: &str, detail: &str| json!({"status": status, "details": if detail.is_empty() { json!({}) } else { json!({"test_a": detail}) }});
        std::fs::write(
            &file,
            json!({"date": "d", "eval": {
                "BigCodeBench/10": [sample("fail", "Traceback...\n  line 3\nValueError: bad\n\n")],
                "BigCodeBench/1": [sample("pass", ""), sample("timeout", "")],
                "BigCodeBench/2": [sample("fail", "AssertionError: 1 != 2")],
            }})
            .to_string(),
        )
        .unwrap();
        let run = RunSource::open(0, &file).unwrap();
        let page = run.page(&Filter::default()).unwrap();
        let ids: Vec<&str> = page.rows.iter().map(|r| r.task_id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "BigCodeBench/1",
                "BigCodeBench/1",
                "BigCodeBench/2",
                "BigCodeBench/10"
            ],
            "task order, by number"
        );
        let statuses: Vec<(&str, usize)> = page
            .statuses
            .iter()
            .map(|(s, n)| (s.as_str(), *n))
            .collect();
        assert_eq!(statuses, [("fail", 2), ("pass", 1), ("timeout", 1)]);
        let mut groups: Vec<String> = ["BigCodeBench/1", "BigCodeBench/2", "BigCodeBench/10"]
            .iter()
            .flat_map(|id| task_of(None, id).unwrap().libs.clone())
            .collect();
        groups.sort();
        groups.dedup();
        assert_eq!(page.groups, groups);
        assert_eq!(page.rows[3].reason, "ValueError: bad");
        assert_eq!(page.rows[3].test.as_deref(), Some("test_a"));
        let only = |filter: Filter| -> Vec<usize> {
            run.page(&filter)
                .unwrap()
                .rows
                .iter()
                .map(|r| r.index)
                .collect()
        };
        let filter = |f: fn(&mut Filter)| {
            let mut filter = Filter::default();
            f(&mut filter);
            filter
        };
        assert_eq!(only(filter(|f| f.task = Some("1".into()))), [0, 1]);
        assert_eq!(
            only(filter(|f| f.task = Some("bigcodebench/1".into()))),
            [0, 1, 3]
        );
        assert_eq!(
            only(filter(|f| f.status = Some("failing".into()))),
            [1, 2, 3]
        );
        assert_eq!(only(filter(|f| f.q = Some("VALUEERROR".into()))), [3]);
        assert_eq!(
            only(filter(|f| {
                f.offset = Some(1);
                f.limit = Some(2)
            })),
            [1, 2]
        );
        assert_eq!(run.summary().statuses["fail"], 2);
    }
}
