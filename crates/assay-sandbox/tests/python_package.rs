//! The worker package's own Python tests (`python/tests`), run with the test environment's
//! interpreter so that they see the same libraries as the sandbox.

// A test starts its own processes as it needs (assay's own children are made by
// `assay_pyenv::child_env`, which the workspace's clippy rule enforces).
#![allow(clippy::disallowed_methods)]

mod common;

use std::path::Path;
use std::process::Command;

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

/// `(file name, test methods it defines)` for every `test_*.py` in `dir`: `def test_...`
/// (or `async def`) at the body level of a top-level class, outside string literals and
/// comments (the tests hold test classes of their own in strings, as jobs to run). Each class
/// with test methods is taken to be a `TestCase` that unittest runs once.
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
            (name, count_test_methods(&code_only(&source)))
        })
        .collect();
    files.sort();
    files
}

/// `source` with the contents of string literals and comments removed, lines kept. Works on
/// bytes: quotes, backslashes, `#` and newlines are ASCII, never part of a UTF-8 sequence.
fn code_only(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    // The quote that closes the string being skipped: `"`, `'`, `"""` or `'''`.
    let mut closing: Option<&[u8]> = None;
    let mut i = 0;
    while i < bytes.len() {
        let here = &bytes[i..];
        match closing {
            Some(quote) if here.starts_with(quote) => {
                i += quote.len();
                closing = None;
            }
            Some(quote) => {
                // A backslash escapes the next byte, a newline included (a continued line).
                let step = if here[0] == b'\\' { 2 } else { 1 };
                if here[..step.min(here.len())].contains(&b'\n') {
                    out.push(b'\n');
                    if quote.len() == 1 && here[0] == b'\n' {
                        closing = None; // an unterminated one-line string: a syntax error
                    }
                }
                i += step;
            }
            None if here[0] == b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            None if here[0] == b'"' || here[0] == b'\'' => {
                let quote = if here.starts_with(b"\"\"\"") || here.starts_with(b"'''") {
                    &here[..3]
                } else {
                    &here[..1]
                };
                i += quote.len();
                closing = Some(quote);
                out.extend_from_slice(b"''");
            }
            None => {
                out.push(here[0]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).expect("only whole UTF-8 sequences are kept")
}

/// Test methods at the body level of top-level classes in `code` (no strings or comments).
fn count_test_methods(code: &str) -> usize {
    let mut count = 0;
    let mut in_class = false;
    // The indentation of the current class's body, once its first statement is seen.
    let mut body: Option<usize> = None;
    for line in code.lines() {
        let text = line.trim_start();
        if text.is_empty() {
            continue;
        }
        let indent = line.len() - text.len();
        if indent == 0 {
            in_class = text.starts_with("class ");
            body = None;
            continue;
        }
        if !in_class {
            continue;
        }
        let body = *body.get_or_insert(indent);
        let def = text.strip_prefix("async ").unwrap_or(text);
        if indent == body && def.starts_with("def test") {
            count += 1;
        }
    }
    count
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
    assert_eq!(count_test_methods(&code_only(source)), 3);
}
