//! Every BigCodeBench task's tests can be read off its test source before a sample runs, so
//! that no task falls back to trusting the class the sample's interpreter built.

use assay_sandbox::declared_tests;
use assay_tasks::bigcodebench::{Dataset, Subset, VERSIONS};

/// Distinct `test…` methods of each version's `TestCases` classes, counted independently with
/// Python's `ast` module over the dataset files (a few tasks define a test name twice: one
/// test, as at run time).
const DISTINCT_TESTS: [(&str, usize); 3] =
    [("v0.1.4", 6419), ("v0.1.2", 6419), ("v0.1.0_hf", 6420)];

#[test]
fn every_task_declares_its_tests_readably() {
    for version in VERSIONS {
        let dataset = Dataset::embedded(version, Subset::Full).unwrap();
        assert_eq!(dataset.tasks.len(), 1140);
        let mut total = 0;
        for task in &dataset.tasks {
            let tests = declared_tests(&task.test, "TestCases")
                .unwrap_or_else(|| panic!("{version} {}: tests not readable", task.task_id));
            assert!(!tests.is_empty(), "{version} {}: no tests", task.task_id);
            total += tests.len();
        }
        let expected = DISTINCT_TESTS.iter().find(|(v, _)| v == version).unwrap().1;
        assert_eq!(total, expected, "{version}");
    }
}
