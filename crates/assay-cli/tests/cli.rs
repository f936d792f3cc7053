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

/// `assay`'s error for `args` in `dir`: it fails, and says it on one line.
fn refusal(args: &[&str], dir: &Path) -> String {
    let out = assay(args, dir);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{args:?}: {}",
        text(&out.stderr)
    );
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    err
}

#[test]
fn bad_paths_are_said_once_with_what_to_do_before_any_setup() {
    let dir = tempfile::tempdir().unwrap();
    let eval = ["eval", "bigcodebench-hard", "--profile", "test"];
    assert_eq!(
        refusal(
            &[&eval[..], &["--samples", "missing.jsonl"]].concat(),
            dir.path()
        ),
        "error: --samples missing.jsonl: No such file or directory (os error 2)\n"
    );
    std::fs::write(dir.path().join("s.jsonl"), "").unwrap();
    std::fs::write(dir.path().join("afile"), "").unwrap();
    let out_is_a_file = "error: afile is a file, not a run directory: give --out a directory \
                         (a new one, or a run to resume)\n";
    assert_eq!(
        refusal(
            &[&eval[..], &["--samples", "s.jsonl", "--out", "afile"]].concat(),
            dir.path()
        ),
        out_is_a_file
    );
    assert_eq!(
        refusal(
            &[
                "run",
                "bigcodebench-hard",
                "--profile",
                "test",
                "--out",
                "afile"
            ],
            dir.path()
        ),
        out_is_a_file
    );
    // A directory that holds no run, to every command that reads one.
    std::fs::create_dir(dir.path().join("notrun")).unwrap();
    let not_a_run = "notrun is not a run directory (it has no manifest.json)\n";
    for args in [
        &["report", "notrun"][..],
        &["view", "notrun", "--port", "0"],
        &["merge", "--out", "merged", "notrun"],
        &["judge", "pybench", "notrun", "--judge", "openai:x"],
    ] {
        assert_eq!(refusal(args, dir.path()), format!("error: {not_a_run}"));
    }
    assert_eq!(
        refusal(&["export", "--to", "inspect", "notrun"], dir.path()),
        format!("assay: {not_a_run}")
    );
    // PyBench data that is not there: the way to upstream's data at the commit assay expects.
    let err = refusal(
        &[
            "eval",
            "pybench",
            "--trajectories",
            "s.jsonl",
            "--data",
            "/nonexistent",
        ],
        dir.path(),
    );
    assert!(
        err.starts_with("error: --data /nonexistent holds no PyBench data (no data/meta/task.json")
            && err.contains("`assay data pybench` fetches upstream's data at commit ")
            && err.contains(assay_tasks::pybench::UPSTREAM_COMMIT),
        "{err}"
    );
}

#[test]
fn unknown_tasks_and_missing_keys_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.jsonl"), "").unwrap();
    let eval = [
        "eval",
        "bigcodebench-hard",
        "--profile",
        "test",
        "--samples",
        "s.jsonl",
    ];
    assert_eq!(
        refusal(&[&eval[..], &["--tasks", "13"]].concat(), dir.path()),
        "error: v0.1.4: no task `13` among its 148 Hard tasks; task ids look like \
         BigCodeBench/13\n"
    );
    assert_eq!(
        refusal(
            &[&eval[..], &["--tasks", "BigCodeBench/0"]].concat(),
            dir.path()
        ),
        "error: v0.1.4: no task `BigCodeBench/0` among its 148 Hard tasks (the full set may \
         have it: `bigcodebench` rather than `bigcodebench-hard`)\n"
    );
    let out = common::assay_command(dir.path())
        .args([
            "run",
            "bigcodebench-hard",
            "--profile",
            "test",
            "--model",
            "openai:gpt-x",
        ])
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert_eq!(
        text(&out.stderr),
        "error: OPENAI_API_KEY is not set: the OpenAI API (api.openai.com) needs an API key; \
         export OPENAI_API_KEY=<your key> first\n"
    );
}
