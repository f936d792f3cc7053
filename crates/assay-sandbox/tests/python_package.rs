//! The worker package's own Python tests (`python/tests`), run with the test environment's
//! interpreter so that they see the same libraries as the sandbox.

// A test starts its own processes as it needs (assay's own children are made by
// `assay_pyenv::child_env`, which the workspace's clippy rule enforces).
#![allow(clippy::disallowed_methods)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use assay_sandbox::declared_tests;

#[test]
fn the_worker_package_passes_its_own_tests() {
    let python = common::python();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("python");
    let defined = defined_tests(&root.join("tests"));
    let expected: usize = defined.iter().map(|(_, n)| n).sum();
    assert!(
        expected > 0,
        "no test methods found in python/tests/test_*.py"
    );
    let out = Command::new(&python)
        .args([
            "-B", "-m", "unittest", "discover", "-v", "-s", "tests", "-t", "tests",
        ])
        .current_dir(&root)
        .env(
            "PYTHONPATH",
            format!("{}:{}", root.display(), root.join("tests").display()),
        )
        .env("MPLBACKEND", "Agg")
        .output()
        .expect("run the Python tests");
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    // "Ran 1 test in 0.001s" / "Ran 41 tests in 3.885s": every test defined must have run
    // (discovery that finds nothing, or misses a file or a class, still ends in "OK").
    let ran: Option<usize> = report.lines().find_map(|line| {
        let rest = line.strip_prefix("Ran ")?;
        rest.split_whitespace().next()?.parse().ok()
    });
    assert_eq!(
        ran,
        Some(expected),
        "unittest ran {ran:?} tests, the files define {expected} {defined:?}:\n{report}"
    );
    // Exactly "OK": no test here has a reason to skip (none calls skipTest or is decorated to
    // skip) and none is an expected failure, so "OK (skipped=1)" or "OK (expected
    // failures=1)" means a test did not check what it claims. A test that must skip somewhere
    // should say so here, with its reason.
    let verdict = report.lines().rev().find(|l| !l.trim().is_empty());
    assert_eq!(verdict, Some("OK"), "{report}");
}

/// `(file name, test methods it defines)` for every `test_*.py` in `dir`.
fn defined_tests(dir: &Path) -> Vec<(String, usize)> {
    let mut files: Vec<(String, usize)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            name.starts_with("test_") && name.ends_with(".py")
        })
        .map(|path| {
            let source = std::fs::read_to_string(&path).unwrap();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, count_test_methods(&source))
        })
        .collect();
    files.sort();
    files
}

/// The test methods of the top-level classes of `source`, read as the supervisor reads a
/// task's tests (`assay_sandbox::declared_tests`, on the syntax tree: code in strings and
/// comments is not code). The candidates are the names after `class ` at the start of a line;
/// one that is no top-level class (a job's test class inside a string) declares nothing. A
/// class whose tests cannot be read counts none, and the run's count then differs: loudly.
fn count_test_methods(source: &str) -> usize {
    let classes: BTreeSet<&str> = source
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("class ")?;
            rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
        })
        .collect();
    classes
        .into_iter()
        .map(|class| declared_tests(source, class).map_or(0, |tests| tests.len()))
        .sum()
}

#[test]
fn test_methods_are_counted_outside_strings_and_comments() {
    let source = r#"
import unittest

JOB = """
class TestCases(unittest.TestCase):
    def test_in_a_string(self):
        pass
"""
ONE_LINE = "class T:\n    def test_escaped(self): pass\n"

def test_module_level():
    pass

class RealTest(unittest.TestCase):
    # def test_commented(self):
    @unittest.expectedFailure
    def test_one(self):
        s = 'don\'t "count" def test_quoted'
        def test_nested():
            pass

    async def test_two(self):
        pass

    def helper(self):
        pass

class Other(unittest.TestCase):

    def test_three(self):
        text = '''
    def test_in_a_method_string(self):
'''
"#;
    assert_eq!(count_test_methods(source), 3);
}
