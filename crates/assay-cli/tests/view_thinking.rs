//! A reasoning model's runs in the viewer, rendered by a real headless chromium: a BigCodeBench
//! sample's thinking and a PyBench reply's, each in a block of its own, closed until asked for,
//! saying where it came from, that the answer was cut off inside it, and how many blocks came
//! encrypted; the tokens spent thinking apart. Thinking is model text: markup in it shows as
//! the characters it is, and never becomes an element of the page.
//!
//! The page is read as chromium leaves it (`--dump-dom`, after the app's requests are answered
//! in virtual time): text the app put in as text is serialized escaped (`&lt;script&gt;`),
//! whereas markup that had been parsed would come back as elements (`<script>`).

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::viewer::in_process;
use common::{browser, run_bounded};

use assay_records::{Identity, Kind, Manifest};
use serde_json::{json, Value};

/// Markup a model might think: it must read as these characters on the page.
const THOUGHT: &str = "<script>alert(1)</script><b>bold</b> then 2 > 1 & done";
/// How that text reads in a serialized page when it went in as text.
const ESCAPED: &str =
    "&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt; then 2 &gt; 1 &amp; done";

fn write_run(dir: &Path, kind: Kind, benchmark: &str, files: &[(&str, Vec<Value>)]) {
    std::fs::create_dir_all(dir).unwrap();
    let identity = Identity {
        benchmark: Some(benchmark.into()),
        dataset: (benchmark == "bigcodebench").then(|| "v0.1.4".into()),
        split: (benchmark == "bigcodebench").then(|| "complete".into()),
        model: Some("openai:qwen3".into()),
        ..Identity::default()
    };
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string(&Manifest::new(kind, identity)).unwrap(),
    )
    .unwrap();
    for (name, lines) in files {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(dir.join(name), text).unwrap();
    }
}

/// One BigCodeBench answer that ended inside its thinking (written into its text, with two
/// blocks the provider encrypted): no code, judged `fail`.
fn bigcodebench(dir: &Path) {
    write_run(
        dir,
        Kind::BigcodebenchRun,
        "bigcodebench",
        &[
            (
                "samples.jsonl",
                vec![json!({"task_id": "BigCodeBench/1", "solution": "",
                            "raw_solution": format!("<think>{THOUGHT}")})],
            ),
            (
                "results.jsonl",
                vec![json!({
                    "index": 0, "task_id": "BigCodeBench/1", "program_digest": "d",
                    "status": "fail", "reason": assay_records::CUT_WHILE_THINKING,
                    "official": null, "infra": null, "tests": [], "wall_seconds": 1.0,
                    "cpu_seconds": null, "memory_peak_bytes": null, "isolation": "full",
                })],
            ),
            (
                "generation.jsonl",
                vec![json!({
                    "task_id": "BigCodeBench/1", "raw": [format!("<think>{THOUGHT}")],
                    "solutions": [""], "finish_reasons": ["length"],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 900, "reasoning_tokens": 700},
                    "latency_seconds": 1.0, "attempts": 1, "wanted": 1,
                    "thinking": [{"source": "text", "text": THOUGHT, "cut": true, "redacted": 2}],
                })],
            ),
        ],
    );
}

/// A PyBench episode of two replies that thought, the second cut off inside its thinking.
fn pybench(dir: &Path) {
    write_run(
        dir,
        Kind::PybenchRun,
        "pybench",
        &[
            (
                "results.jsonl",
                vec![json!({
                    "task_id": "PyBench/3", "status": "fail", "reason": "no answer",
                    "verdicts": {"faithful": {"status": "fail", "reason": "f"},
                                 "fixed": {"status": "fail", "reason": "x"}},
                    "turns": 2, "end": "cut_while_thinking",
                    "end_reason": "the reply ended inside its thinking, before any code or answer",
                    "seconds": 1.0,
                    "cells": [{"turn": 1, "status": "pass", "reason": "ran", "seconds": 0.1,
                               "output_bytes": 2, "observation_chars": 2}],
                    "tokens": {"prompt_tokens": 30, "completion_tokens": 20, "reasoning_tokens": 15},
                })],
            ),
            (
                "trajectory.jsonl",
                vec![json!({"index": "3", "messages": [
                    {"role": "system", "content": "s"},
                    {"role": "user", "content": "the query"},
                    {"role": "assistant", "content": "```python\nprint(1)\n```", "thinking": "print it first"},
                    {"role": "user", "content": "1"},
                    {"role": "assistant", "content": "", "thinking": THOUGHT},
                ]})],
            ),
        ],
    );
}

/// The page at `url` as chromium leaves it once the app has drawn it (bounded: a browser that
/// hangs fails the test).
fn rendered(url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    #[allow(clippy::disallowed_methods)] // the browser is started as a user would start it
    let mut command = Command::new(browser::chromium());
    command
        .args(browser::HEADLESS)
        .arg("--virtual-time-budget=10000")
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(url);
    let out = run_bounded(&mut command, Duration::from_secs(120)).expect("chromium within 120 s");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The element of `page` that starts with `start` (up to the end of its first `</details>`).
fn block<'a>(page: &'a str, start: &str) -> &'a str {
    let at = page
        .find(start)
        .unwrap_or_else(|| panic!("no {start} on the page:\n{page}"));
    let rest = &page[at..];
    &rest[..rest.find("</details>").map_or(rest.len(), |end| end + 10)]
}

#[test]
fn thinking_shows_apart_closed_and_as_the_text_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let (bcb, py) = (dir.path().join("bcb"), dir.path().join("py"));
    bigcodebench(&bcb);
    pybench(&py);
    let addr = in_process(&[bcb, py]);

    let sample = rendered(&format!("http://{addr}/#/run/0/sample/0"));
    let thinking = block(&sample, "<details class=\"thinking cut\">");
    assert!(
        thinking.contains(
            "<summary>Thinking (set apart from the answer's text)<span class=\"muted\"> · cut off \
             inside its thinking · 2 blocks returned encrypted</span></summary>"
        ),
        "{thinking}"
    );
    assert!(
        thinking.contains(&format!("<pre>{ESCAPED}</pre>")),
        "{thinking}"
    );
    assert!(
        sample.contains("(none: the answer ended inside its thinking)"),
        "{sample}"
    );
    // The raw answer holds the same text, escaped the same way.
    assert!(
        sample.contains(&format!("&lt;think&gt;{ESCAPED}")),
        "{sample}"
    );
    for markup in ["<script>alert", "<b>bold"] {
        assert!(
            !sample.contains(markup),
            "{markup} became markup:\n{sample}"
        );
    }

    let run = rendered(&format!("http://{addr}/#/run/0"));
    assert!(
        run.contains("100 in, 900 out (of which 700 reasoning)"),
        "{run}"
    );
    assert!(
        run.contains("thinking <b>1 answer came with it, 1 answer cut off inside it</b>"),
        "{run}"
    );

    let episode = rendered(&format!("http://{addr}/#/run/1/sample/3"));
    let first = block(&episode, "<details class=\"thinking\">");
    assert!(
        first.contains("<summary>Thinking</summary><pre>print it first</pre>"),
        "{first}"
    );
    let cut = block(&episode, "<details class=\"thinking cut\">");
    assert!(cut.contains(&format!("<pre>{ESCAPED}</pre>")), "{cut}");
    assert!(cut.contains("cut off inside its thinking"), "{cut}");
    // Each reply's thinking comes before what it said.
    assert!(episode.find(first).unwrap() < episode.find("print(1)").unwrap());
    assert!(
        episode.contains("no code: cut off inside its thinking"),
        "{episode}"
    );
    assert!(episode.contains("<p class=\"ended full\">"), "{episode}");
    let run = rendered(&format!("http://{addr}/#/run/1"));
    assert!(
        run.contains("thinking <b>1 episode cut off inside it</b>"),
        "{run}"
    );
    assert!(
        episode.contains("30 in, 20 out (of which 15 reasoning)"),
        "{episode}"
    );
    for markup in ["<script>alert", "<b>bold"] {
        assert!(
            !episode.contains(markup),
            "{markup} became markup:\n{episode}"
        );
    }
}
