//! How long the slowest tasks' reference solutions took when assay was built
//! (`data/reference_seconds.json`, written by `bench/reference_seconds.py`): the order of a
//! first run, before anything is measured here. Starting those tasks first lets the longest of
//! them run while everything else does, instead of ending the run alone. Only the order: no
//! limit or verdict depends on these times, and a time measured here always wins.

use std::collections::HashMap;
use std::sync::LazyLock;

static SECONDS: LazyLock<HashMap<String, f64>> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../../data/reference_seconds.json"))
        .expect("the built-in reference times parse")
});

/// The reference time of `task_id` when assay was built, if it took a second or more.
pub fn reference_seconds(task_id: &str) -> Option<f64> {
    SECONDS.get(task_id).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slowest_tasks_are_known_and_quick_ones_are_not() {
        // BigCodeBench/461 waits on a child process until its tests' own timeouts.
        assert!(reference_seconds("BigCodeBench/461").is_some_and(|s| s > 100.0));
        assert_eq!(reference_seconds("BigCodeBench/97"), None);
    }
}
