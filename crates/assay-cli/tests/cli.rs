//! The `assay` binary, run as a user would: real processes, real files, the `test` profile.

mod common;

use common::text;

use std::path::Path;
use std::process::Output;

fn assay(args: &[&str], dir: &Path) -> Output {
    common::assay_command(dir)
        .args(args)
        .output()
        .expect("run assay")
}

#[test]
fn version_and_help() {
    let dir = tempfile::tempdir().unwrap();
    let out = assay(&["--version"], dir.path());
    assert!(out.status.success());
    // The commit the binary was built from: this checkout's HEAD (the tests run from one).
    #[allow(clippy::disallowed_methods)] // git, not a child of assay
    let head = std::process::Command::new("git")
        .args(["log", "-1", "--format=%H %cs"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("git, to read this checkout's HEAD");
    assert!(head.status.success(), "git log: {}", text(&head.stderr));
    let head = text(&head.stdout);
    let (hash, date) = head.trim().split_once(' ').expect("hash and date");
    assert_eq!(
        text(&out.stdout).trim(),
        format!(
            "assay {} ({} {date})",
            env!("CARGO_PKG_VERSION"),
            &hash[..9]
        )
    );
    let help = text(&assay(&["--help"], dir.path()).stdout);
    assert!(help.contains("env") && help.contains("sandbox"), "{help}");
}

#[test]
fn sandbox_test_reports_the_verdict_and_exits_accordingly() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("good.py"),
        "def task_func(x):\n    return x * 2\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("bad.py"),
        "def task_func(x):\n    return x\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("tests.py"),
        "import unittest\nclass TestCases(unittest.TestCase):\n    def test_double(self):\n        self.assertEqual(task_func(3), 6)\n",
    )
    .unwrap();
    let common = ["--profile", "test", "--isolation", "strict"];
    let good = assay(
        &[
            &["sandbox", "test", "good.py", "tests.py", "--json"][..],
            &common,
        ]
        .concat(),
        dir.path(),
    );
    assert!(good.status.success(), "{}", text(&good.stderr));
    let outcome: serde_json::Value = serde_json::from_slice(&good.stdout).unwrap();
    assert_eq!(outcome["status"], "pass");
    assert_eq!(outcome["isolation"], "full");
    let bad = assay(
        &[&["sandbox", "test", "bad.py", "tests.py"][..], &common].concat(),
        dir.path(),
    );
    assert_eq!(bad.status.code(), Some(1));
    let report = text(&bad.stdout);
    assert!(
        report.starts_with("fail: 1 of 1 tests failed: test_double"),
        "{report}"
    );
    assert!(report.contains("AssertionError: 3 != 6"), "{report}");
}

#[test]
fn sandbox_run_passes_arguments_files_and_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tool.py"),
        "import sys\nprint(open('in.txt').read().strip(), sys.argv[1:])\nopen('made.txt', 'w').write('x')\nsys.exit(4)\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("in.txt"), "hello\n").unwrap();
    let out = assay(
        &[
            "sandbox",
            "run",
            "tool.py",
            "--file",
            "in.txt",
            "--out",
            "results",
            "--profile",
            "test",
            "--",
            "-n",
            "2",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hello ['-n', '2']\n");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("results/made.txt")).unwrap(),
        "x"
    );
}

#[test]
fn bad_input_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = assay(
        &[
            "sandbox",
            "test",
            "missing.py",
            "tests.py",
            "--profile",
            "test",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("missing.py") && err.contains("No such file"),
        "{err}"
    );
    let out = assay(&["env", "setup", "--profile", "nope"], dir.path());
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("unknown profile `nope`"),
        "{}",
        text(&out.stderr)
    );
    let out = assay(
        &[
            "sandbox",
            "run",
            "x.py",
            "--timeout",
            "-1",
            "--profile",
            "test",
        ],
        dir.path(),
    );
    assert!(!out.status.success());
}

#[test]
fn env_status_lists_every_profile() {
    let dir = tempfile::tempdir().unwrap();
    let out = assay(&["env", "status", "--json"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<_> = doc["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["profile"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "bigcodebench",
            "test",
            "pybench",
            "inspect",
            "mlflow",
            "mlflow-server",
            "wandb",
            "llama-server",
            "agent-node"
        ]
    );
}
