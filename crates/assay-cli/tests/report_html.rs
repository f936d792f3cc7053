//! `assay report --html` opened in a real headless browser (Debian's chromium, installed by the
//! test when it is missing and it may): the page loads without console errors, shows the key
//! numbers, and renders hostile sample code and tracebacks as text. Screenshots are written
//! where `common::browser::screenshots` says (the documentation shows `report.png`).

#![allow(clippy::disallowed_methods)] // the browser is started as a user would start it

mod common;

use std::path::Path;
use std::process::Command;

use common::browser::{chromium, screenshots, HEADLESS};
use common::{assay_command, official_results, text};
use serde_json::json;

/// Loads `page` headless; returns the DOM after load and the browser's log, and writes a
/// screenshot to `shot`.
fn open_in_browser(page: &Path, shot: &Path) -> (String, String) {
    let browser = chromium();
    let url = format!("file://{}", page.display());
    let common = [&HEADLESS[..], &["--enable-logging=stderr", "--v=0"]].concat();
    let dom = Command::new(&browser)
        .args(&common)
        .args(["--dump-dom", &url])
        .output()
        .expect("run chromium");
    assert!(dom.status.success(), "chromium: {}", text(&dom.stderr));
    std::fs::create_dir_all(shot.parent().unwrap()).unwrap();
    let picture = Command::new(&browser)
        .args(&common)
        .arg(format!("--screenshot={}", shot.display()))
        .args(["--window-size=1280,2400", "--hide-scrollbars", &url])
        .output()
        .expect("run chromium");
    assert!(
        picture.status.success(),
        "chromium: {}",
        text(&picture.stderr)
    );
    let png = std::fs::read(shot).expect("the screenshot was written");
    assert!(png.starts_with(b"\x89PNG"), "{}", shot.display());
    (
        text(&dom.stdout),
        text(&dom.stderr) + &text(&picture.stderr),
    )
}

#[test]
fn the_html_report_loads_shows_the_numbers_and_keeps_hostile_text_as_text() {
    let dir = tempfile::tempdir().unwrap();
    // A results file whose sample code and traceback try to run script in the page.
    let hostile = dir
        .path()
        .join("hostile--bigcodebench-hard-complete--x_eval_results.json");
    let attack = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\"></textarea><b>bold</b>";
    std::fs::write(
        &hostile,
        json!({"date": "2024-01-01", "eval": {
            "BigCodeBench/13": [{"task_id": "BigCodeBench/13", "solution": attack, "status": "fail",
                                 "details": {"test_<script>": attack}}],
            "BigCodeBench/15": [{"task_id": "BigCodeBench/15", "solution": "pass", "status": "pass",
                                 "details": {}}],
        }})
        .to_string(),
    )
    .unwrap();
    let page = dir.path().join("report.html");
    let out = assay_command(dir.path())
        .args(["report", "--html"])
        .arg(&page)
        .arg(official_results("checkpoint-200"))
        .arg(official_results("checkpoint-400"))
        .arg(&hostile)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing the page would fetch (sample code may mention URLs as text).
    for fetch in ["src=\"http", "href=\"http", "url(http", "<link", "<script"] {
        assert!(!html.contains(fetch), "the page refers to {fetch}");
    }

    let shots = screenshots();
    let (dom, log) = open_in_browser(&page, &shots.join("report.png"));
    assert!(
        dom.contains("<title>assay report</title>"),
        "the title was changed"
    );
    for number in [
        "0.1824",
        "0.1081",
        "McNemar exact p = 0.0433",
        "pass@1 by library",
    ] {
        assert!(dom.contains(number), "{number} is not on the page");
    }
    assert!(dom.contains("&lt;script&gt;document.title='pwned'&lt;/script&gt;"));
    assert!(!dom.contains("<img"), "an element was injected");
    assert!(!dom.contains("<b>bold</b>"), "markup was injected");
    for line in log.lines() {
        assert!(!line.contains(":CONSOLE"), "console: {line}");
    }
    // The check above sees console output: a page that logs an error is caught.
    let noisy = dir.path().join("noisy.html");
    std::fs::write(
        &noisy,
        "<!DOCTYPE html><title>n</title><script>console.error('x')</script>",
    )
    .unwrap();
    let (_, log) = open_in_browser(&noisy, &shots.join("noisy.png"));
    assert!(
        log.contains(":CONSOLE"),
        "chromium's log shows no console line: {log}"
    );
}
