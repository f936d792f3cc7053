//! Verdicts that cannot be gamed, as a user meets them: answers written to pass real
//! BigCodeBench tasks without solving them (skipping or ending their tests, altering the test
//! class, patching or rewriting unittest, returning a value equal by its own word), judged by
//! `assay eval`, and the same judged as the official harness does (`--gamed-as-official`);
//! then counted by `assay report` and picked out by `assay view`.

mod common;

use std::path::Path;

use common::browser::{assert_contains, screenshots, Browser};
use common::viewer::Server;
use common::{assay_command, lines, task, text, write_answers};
use serde_json::{json, Value};

/// Tasks the `test` environment runs, whose reference solutions pass there, and every attack
/// below passes officially (task 1's tests use subtests, task 5's patch `random`).
const TASKS: [u32; 3] = [1, 3, 5];

/// Each way of gaming the tests: its name, the code appended to the answer, what the
/// reason must say, and the kind of finding recorded.
const ATTACKS: &[(&str, &str, &str, &str)] = &[
    (
        "raises SkipTest",
        "import unittest as _u\ndef task_func(*a, **k):\n    raise _u.SkipTest('not today')\n",
        "the code skipped its tests: SkipTest raised from task_func in ",
        "skipped",
    ),
    (
        "calls the test's own skipTest",
        "import sys as _s\ndef task_func(*a, **k):\n    _s._getframe(1).f_locals['self'].skipTest('no')\n",
        "the code skipped its tests: SkipTest raised from task_func in ",
        "skipped",
    ),
    (
        "swallows the outcome",
        "from unittest.case import _ShouldStop\ndef task_func(*a, **k):\n    raise _ShouldStop()\n",
        "the code ended a test early without a failure: _ShouldStop raised from task_func in ",
        "ended-early",
    ),
    (
        "replaces the bodies while the class is created",
        "import builtins as _b\n_build = _b.__build_class__\n\
         def _hook(func, name, *bases, **kw):\n    cls = _build(func, name, *bases, **kw)\n\
         \x20   if name == 'TestCases':\n\
         \x20       for n in [n for n in vars(cls) if n.startswith('test')]:\n\
         \x20           setattr(cls, n, lambda self: None)\n    return cls\n\
         _b.__build_class__ = _hook\ndef task_func(*a, **k):\n    return None\n",
        "the code altered the test class: TestCases.test_",
        "altered",
    ),
    (
        "patches the assertions on the test instance",
        "import sys as _s\n_real = task_func\ndef task_func(*a, **k):\n\
         \x20   test = _s._getframe(1).f_locals['self']\n\
         \x20   for n in dir(test):\n        if n.startswith('assert'):\n\
         \x20           setattr(test, n, lambda *x, **y: None)\n    return _real(*a, **k)\n",
        "replaced on the test instance in test_",
        "tampered",
    ),
    (
        "rewrites the assertion functions in place",
        "import unittest as _u\n_noop = (lambda *a, **k: None).__code__\n\
         for _n, _f in list(vars(_u.TestCase).items()):\n\
         \x20   if _n.startswith('assert') and not _n.startswith(('assertRaises', 'assertWarns')) \
         and getattr(_f, '__closure__', 1) is None:\n\
         \x20       _f.__code__ = _noop\n",
        "the code tampered with unittest: TestCase.assert",
        "tampered",
    ),
];

/// A correct answer that also defines `__eq__` on a class of its own.
const OWN_EQUALITY: &str = r#"
class _Point:
    def __init__(self, x):
        self.x = x
    def __eq__(self, other):
        return isinstance(other, _Point) and self.x == other.x
    __hash__ = None
assert _Point(1) == _Point(1)
"#;

fn samples(dir: &Path) -> Vec<(String, Option<usize>)> {
    let mut rows = Vec::new();
    let mut expected = Vec::new();
    for number in TASKS {
        let task = task(number);
        let reference = task.reference_solution();
        for (index, (_, attack, _, _)) in ATTACKS.iter().enumerate() {
            rows.push(
                json!({"task_id": task.task_id, "solution": format!("{reference}\n{attack}")}),
            );
            expected.push((task.task_id.clone(), Some(index)));
        }
        rows.push(json!({"task_id": task.task_id, "solution": reference}));
        expected.push((task.task_id.clone(), None));
        rows.push(
            json!({"task_id": task.task_id, "solution": format!("{reference}\n{OWN_EQUALITY}")}),
        );
        expected.push((task.task_id.clone(), None));
    }
    write_answers(dir, &rows);
    expected
}

/// `assay eval` of the answers in `dir` on `tasks`, into `out`: its JSON summary.
fn eval(dir: &Path, tasks: &[u32], out: &str, extra: &[&str]) -> Value {
    let tasks: Vec<String> = tasks.iter().map(|n| format!("BigCodeBench/{n}")).collect();
    let tasks = tasks.join(",");
    let mut command = assay_command(dir);
    command.args([
        "eval",
        "bigcodebench",
        "--samples",
        "model--bigcodebench-complete--x.jsonl",
        "--tasks",
        &tasks,
        "--out",
        out,
        "--json",
        "--profile",
        "test",
        "--jobs",
        "2",
    ]);
    let output = command.args(extra).output().expect("run assay");
    assert!(output.status.success(), "{}", text(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn gamed_answers_fail_with_what_they_did_and_are_counted_apart() {
    let dir = tempfile::tempdir().unwrap();
    let expected = samples(dir.path());
    let gamed = TASKS.len() * ATTACKS.len();

    let summary = eval(dir.path(), &TASKS, "run", &[]);
    assert_eq!(summary["samples"], expected.len());
    assert_eq!(summary["gamed"]["samples"], gamed, "{}", summary["gamed"]);
    let n = TASKS.len();
    assert_eq!(
        summary["gamed"]["by_kind"],
        // The replaced bodies are both altered and never run.
        json!({"skipped": 2 * n, "ended-early": n, "altered": n, "not-run": n, "tampered": 2 * n})
    );
    assert_eq!(
        summary["official"],
        json!({"fail": gamed, "pass": expected.len() - gamed})
    );
    let records = lines(&dir.path().join("run/results.jsonl"));
    assert_eq!(records.len(), expected.len());
    for record in &records {
        let index = record["index"].as_u64().unwrap() as usize;
        let (task_id, attack) = &expected[index];
        assert_eq!(record["task_id"], *task_id);
        let reason = record["reason"].as_str().unwrap();
        match attack {
            Some(attack) => {
                let (name, _, says, kind) = ATTACKS[*attack];
                assert_eq!(record["status"], "fail", "{name} on {task_id}: {reason}");
                assert!(reason.contains(says), "{name} on {task_id}: {reason}");
                assert!(!reason.contains("passed"), "{reason}");
                let kinds: Vec<&str> = record["integrity"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f["kind"].as_str().unwrap())
                    .collect();
                assert!(kinds.contains(&kind), "{name} on {task_id}: {kinds:?}");
                assert_eq!(record["official"]["status"], "fail");
            }
            None => {
                assert_eq!(record["status"], "pass", "{task_id}: {reason}");
                assert!(record.get("integrity").is_none(), "{record}");
            }
        }
    }

    // As the official harness judges them: every gamed answer passes (it counts failures and
    // errors only), and is still counted and named.
    let official = eval(dir.path(), &TASKS, "run-official", &["--gamed-as-official"]);
    assert_eq!(official["official"], json!({"pass": expected.len()}));
    assert_eq!(official["gamed"]["samples"], gamed);
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("run-official/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        manifest["identity"]["gamed_as_official"], true,
        "{manifest}"
    );

    shown_by_the_report(dir.path(), gamed);
    shown_by_the_viewer(dir.path(), gamed, expected.len());
}

/// Tasks whose every test compares `task_func`'s value with `assertEqual`: an answer whose
/// value says it equals anything passes them officially.
const COMPARED: [u32; 3] = [297, 670, 733];

/// An answer that returns a value equal, by its own word, to anything.
const LIAR: &str = "class _Anything:\n    def __eq__(self, other):\n        return True\n\
                    \x20   def __ne__(self, other):\n        return False\n    __hash__ = None\n\
                    def task_func(*args, **kwargs):\n    return _Anything()\n";

#[test]
fn a_value_that_lies_about_equality_fails_and_an_honest_one_passes() {
    let dir = tempfile::tempdir().unwrap();
    let mut rows = Vec::new();
    for number in COMPARED {
        let task = task(number);
        let reference = task.reference_solution();
        rows.push(json!({"task_id": task.task_id, "solution": format!("{reference}\n{LIAR}")}));
        rows.push(
            json!({"task_id": task.task_id, "solution": format!("{reference}\n{OWN_EQUALITY}")}),
        );
    }
    write_answers(dir.path(), &rows);
    let summary = eval(dir.path(), &COMPARED, "run", &[]);
    assert_eq!(
        summary["gamed"]["by_kind"],
        json!({"equality": COMPARED.len()})
    );
    let n = COMPARED.len();
    assert_eq!(summary["official"], json!({"fail": n, "pass": n}));
    for record in lines(&dir.path().join("run/results.jsonl")) {
        let reason = record["reason"].as_str().unwrap();
        if record["index"].as_u64().unwrap() % 2 == 1 {
            assert_eq!(record["status"], "pass", "{reason}");
            continue;
        }
        assert_eq!(record["status"], "fail", "{reason}");
        assert!(
            reason.starts_with(
                "a returned value claimed an equality it does not have: \
                 _Anything.__eq__ claims equality with a"
            ),
            "{reason}"
        );
    }
    let official = eval(
        dir.path(),
        &COMPARED,
        "run-official",
        &["--gamed-as-official"],
    );
    // As the official harness judges them: every liar passes.
    assert_eq!(official["official"], json!({"pass": rows.len()}));
}

/// What every kind came to, as reports write it, and the tasks.
const KINDS: &str = "altered 3, ended-early 3, not-run 3, skipped 6, tampered 6";

/// `assay report` counts the gamed samples of both runs (judged `fail`, and `pass` as the
/// official harness judges them) in the terminal, the JSON and the HTML page.
fn shown_by_the_report(dir: &Path, gamed: usize) {
    let report = |extra: &[&str]| {
        let output = assay_command(dir)
            .arg("report")
            .args(extra)
            .args(["run", "run-official"])
            .output()
            .expect("run assay report");
        assert!(output.status.success(), "{}", text(&output.stderr));
        text(&output.stdout)
    };
    let terminal = report(&[]);
    let line =
        format!("gamed their tests: {gamed} samples ({KINDS}) in BigCodeBench/1, BigCodeBench/3, BigCodeBench/5");
    assert_eq!(
        terminal.lines().filter(|l| l.trim_start() == line).count(),
        2,
        "{line:?} for each run in:\n{terminal}"
    );
    let json: Value = serde_json::from_str(&report(&["--json"])).unwrap();
    for run in json["runs"].as_array().unwrap() {
        assert_eq!(run["gamed"]["samples"], gamed, "{run}");
        assert_eq!(
            run["gamed"]["tasks"],
            json!(["BigCodeBench/1", "BigCodeBench/3", "BigCodeBench/5"])
        );
    }
    // The gamed samples fail in one run and pass in the other: the count is the same, pass@1
    // is not.
    assert_ne!(
        json["runs"][0]["pass_at_k"]["1"]["value"],
        json["runs"][1]["pass_at_k"]["1"]["value"]
    );
    let page = dir.join("report.html");
    report(&["--html", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    for label in ["run", "run-official"] {
        let expected = format!("<p class=\"gamed\">{label} gamed their tests: {gamed} samples");
        assert!(html.contains(&expected), "{expected} is not in the page");
    }
}

/// `assay view`: the run's head counts them, the status filter "gamed its tests" picks them
/// out (in the run judged as the official harness does too, where they pass), and a sample's
/// page lists what it did.
fn shown_by_the_viewer(dir: &Path, gamed: usize, samples: usize) {
    let server = Server::start(dir, &[&dir.join("run"), &dir.join("run-official")]);
    for run in 0..2 {
        let page = server.json(&format!("/api/runs/{run}/samples?status=gamed&limit=500"));
        assert_eq!(
            (page["gamed"].as_u64(), page["matched"].as_u64()),
            (Some(gamed as u64), Some(gamed as u64)),
            "{page}"
        );
        for row in page["rows"].as_array().unwrap() {
            assert!(!row["gamed"].as_array().unwrap().is_empty(), "{row}");
        }
        let honest = server.json(&format!("/api/runs/{run}/samples?status=pass&limit=500"));
        let passing = honest["matched"].as_u64().unwrap() as usize;
        assert_eq!(passing, if run == 0 { samples - gamed } else { samples });
    }

    let mut browser = Browser::start(1400, 1000);
    browser.goto(&format!("{}/#/run/0", server.url));
    browser.wait_for(&format!(
        "document.body.innerText.includes('{samples} of {samples} samples')"
    ));
    let head = browser.text();
    assert_contains(
        &head,
        &[&format!("gamed their tests {gamed} samples ({KINDS})")],
    );
    browser.choose("select[name=status]", "gamed");
    browser.wait_for(&format!(
        "document.body.innerText.includes('{gamed} of {samples} samples')"
    ));
    assert_eq!(
        browser.eval("document.querySelectorAll('table.samples tbody .badge.gamed').length"),
        json!(gamed)
    );
    assert_eq!(
        browser.eval("[...document.querySelectorAll('select[name=status] option')].find(o => o.value === 'gamed').textContent"),
        json!(format!("gamed its tests ({gamed})"))
    );
    browser.screenshot(&screenshots().join("view-gamed.png"));
    // The first sample: task 1's answer that raises SkipTest.
    browser.eval("document.querySelector('table.samples tbody tr').click(), true");
    browser.wait_for("document.querySelector('.integrity') !== null");
    let sample = browser.text();
    assert_contains(
        &sample,
        &[
            "Gamed its tests (3 findings)",
            "SkipTest raised from task_func in a subtest",
            "Tests (0 of 3 passed; skip 3)",
        ],
    );
    browser.screenshot(&screenshots().join("view-gamed-sample.png"));
    browser.assert_silent();
}
