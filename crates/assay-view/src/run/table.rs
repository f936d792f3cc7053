//! A page of the table: the rows that pass the filters, in the order asked for. Apart from the
//! rows themselves ([`super::rows`]), which are built once per change of the records; this
//! runs on every request.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::rows::Row;
use super::tasks::task_number;
use super::RunSource;
use crate::ViewError;

/// What the table shows: the filters, the order and the page.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Filter {
    /// Only this status (`failing`: every judged one that did not pass; `gamed`: every one
    /// that gamed its tests, whatever its verdict).
    pub status: Option<String>,
    /// Tasks whose id contains this (a bare number: that task).
    pub task: Option<String>,
    /// Only samples of tasks with this library (or PyBench category).
    pub group: Option<String>,
    /// Only samples whose reason, failing tests, tracebacks or standard error contain this
    /// (case ignored).
    pub q: Option<String>,
    /// `index` (default), `slowest`, `task`.
    pub sort: Option<String>,
    /// Rows to skip.
    pub offset: Option<usize>,
    /// Rows to return (at most 500; default 100).
    pub limit: Option<usize>,
}

/// A page of the table.
#[derive(Debug, Serialize)]
pub struct Page {
    /// Samples in the run.
    pub total: usize,
    /// Of them, matching the filters.
    pub matched: usize,
    /// Where the page starts.
    pub offset: usize,
    /// The page.
    pub rows: Vec<Row>,
    /// Samples per status over the whole run (for the filter's choices).
    pub statuses: BTreeMap<String, usize>,
    /// Every library or category in the run (for the filter's choices).
    pub groups: Vec<String>,
    /// Samples of the whole run that gamed their tests (for the filter's choices).
    pub gamed: usize,
}

impl RunSource {
    /// A page of the table.
    pub fn page(&self, filter: &Filter) -> Result<Page, ViewError> {
        let mut state = self.lock();
        state.refresh()?;
        let rows = &state.rows;
        let q = filter
            .q
            .as_deref()
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .map(str::to_lowercase);
        let task = filter
            .task
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty());
        let mut matched: Vec<&Row> = rows
            .iter()
            .filter(|r| match filter.status.as_deref() {
                None | Some("") => true,
                Some("failing") => r.status != "pass" && r.status != "infra",
                Some("gamed") => !r.gamed.is_empty(),
                Some(s) => r.status == s,
            })
            .filter(|r| task.is_none_or(|t| task_matches(&r.task_id, t)))
            .filter(|r| {
                filter
                    .group
                    .as_deref()
                    .filter(|g| !g.is_empty())
                    .is_none_or(|g| r.groups.iter().any(|x| x == g))
            })
            .filter(|r| q.as_deref().is_none_or(|q| r.haystack.contains(q)))
            .collect();
        match filter.sort.as_deref() {
            Some("slowest") => matched.sort_by(|a, b| {
                b.seconds
                    .unwrap_or(0.0)
                    .total_cmp(&a.seconds.unwrap_or(0.0))
                    .then(a.index.cmp(&b.index))
            }),
            Some("task") => matched.sort_by_key(|r| (task_number(&r.task_id), r.index)),
            _ => {}
        }
        let offset = filter.offset.unwrap_or(0);
        let limit = filter.limit.unwrap_or(100).min(500);
        Ok(Page {
            total: rows.len(),
            matched: matched.len(),
            offset,
            rows: matched
                .into_iter()
                .skip(offset)
                .take(limit)
                .cloned()
                .collect(),
            statuses: state.statuses.clone(),
            groups: state.groups.clone(),
            gamed: state.gamed,
        })
    }
}

/// A bare number names one task; anything else is looked for in the id, case ignored.
fn task_matches(task_id: &str, wanted: &str) -> bool {
    if wanted.chars().all(|c| c.is_ascii_digit()) {
        return task_id.rsplit('/').next() == Some(wanted);
    }
    task_id.to_lowercase().contains(&wanted.to_lowercase())
}
