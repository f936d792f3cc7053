//! An LLM judge's figures and verdicts on a judged PyBench run, in a real headless chromium and
//! in `assay report`: the run's page shows each judging (Pass Rate (LLM), win/tie/lose, the
//! average turns both ways, the confusion table with Cohen's kappa, position bias, the paper's
//! row) and lists the tasks the judge and the checks disagree on, and those whose preference
//! changed with the order, as links that open their episodes; an episode's page shows each
//! judging's verdict in each order (read, unreadable, or failed) with the judge's reply and
//! thinking closed until asked for. The reply is the judge's text: markup in it shows as the
//! characters it is, and nothing of it runs. The report (terminal, JSON, HTML) shows the same
//! figures.
//!
//! The run directory is written here, as `assay run pybench` and `assay judge pybench` write
//! it (the records built from assay's own types), so that no model or network is needed.
//! Screenshots go to `$ASSAY_SCREENSHOTS` when it is set, else under
//! `<CARGO_TARGET_TMPDIR>/screenshots/`.

mod common;

use std::path::Path;

use assay_records::{Identity, JudgeFigures, JudgementRecord, Kind, Manifest};
use common::browser::{assert_contains, screenshots, Browser};
use common::viewer::in_process;
use common::{assay_command, text};
use serde_json::{json, Value};

/// What a hostile judge might answer: it must read as these characters on the page.
const REPLY: &str = "Agent2 <script>document.title='pwned'</script><img src=x \
     onerror=\"document.title='pwned'\"><b>bold</b> passes.\n```\n{\"Pass\": {\"Agent1\": \"Failed\", \
     \"Agent2\": \"Pass\"}, \"Decision\": {\"Agent1\": 0, \"Agent2\": 1}}\n```";
/// What that judge thought first, markup too.
const THOUGHT: &str = "<b>bold</b> thoughts & 2 > 1";

fn write_lines(path: &Path, lines: &[Value]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// An episode of `task` that the checks judged `status`.
fn episode(task: u32, status: &str) -> Value {
    json!({
        "task_id": format!("PyBench/{task}"), "category": "chart_analysis", "status": status,
        "reason": if status == "pass" { "the check holds" } else { "the answer lacks \"42\"" },
        "verdicts": {"faithful": {"status": status, "reason": "r"}, "fixed": {"status": status, "reason": "r"}},
        "turns": 2, "end": "answered", "seconds": 1.5,
        "cells": [{"turn": 1, "status": "pass", "reason": "the cell ran", "seconds": 0.1,
                   "output_bytes": 3, "observation_chars": 3}],
        "tokens": {"prompt_tokens": 300, "completion_tokens": 40},
    })
}

/// The key of a judge request: one per task, prompt and order (a request asked again keeps
/// its key).
fn key(task: u32, prompt: &str, order: &str) -> String {
    format!("{task}-{prompt}-{order}")
}

/// What a judging read for each task: its requests' keys (task 2's sides were the same
/// trajectory: one request for both orders).
fn answers(prompt: &str, both_orders: bool) -> Value {
    let answered = [2, 3, 7].map(|task| {
        let paper = key(task, prompt, "paper");
        let swapped = match (both_orders, task) {
            (false, _) => None,
            (true, 2) => Some(paper.clone()),
            (true, _) => Some(key(task, prompt, "swapped")),
        };
        (
            format!("PyBench/{task}"),
            json!({"paper": paper, "swapped": swapped}),
        )
    });
    Value::Object(answered.into_iter().collect())
}

/// A judge request's record, as `assay judge pybench` writes it.
fn judgement(task: u32, prompt: &str, order: &str, answer: Value) -> Value {
    let mut line = json!({
        "task_id": format!("PyBench/{task}"), "key": key(task, prompt, order),
        "judge": "openai:gpt-4o", "prompt": prompt, "order": order,
        "request": {"system": "You are a code reviewer", "user": "Agent 1's solution: ..."},
        "finish_reason": "stop", "usage": {"prompt_tokens": 5000, "completion_tokens": 60},
        "latency_seconds": 2.5, "attempts": 1,
    });
    for (key, value) in answer.as_object().unwrap() {
        line[key] = value.clone();
    }
    // Held to assay's own record, so that the file is one assay could have written.
    let record: JudgementRecord = serde_json::from_value(line).unwrap();
    serde_json::to_value(record).unwrap()
}

fn verdict(agent1: (&str, i64), agent2: (&str, i64)) -> Value {
    json!({"pass": {"agent1": agent1.0, "agent2": agent2.0},
           "decision": {"agent1": agent1.1, "agent2": agent2.1}})
}

/// One judging's figures, as `summary.json` keeps them.
fn figures(value: Value) -> Value {
    let figures: JudgeFigures = serde_json::from_value(value).unwrap();
    serde_json::to_value(figures).unwrap()
}

/// A run of three tasks the checks judged pass, fail, pass, judged twice by GPT-4o:
/// - winlose, both orders: it passes tasks 2 and 3 and fails 7 (so it disagrees with the checks
///   on 3 and 7: kappa -0.5); task 2's two trajectories are the same (one request), task 3's
///   swapped reply cannot be read, task 7's preference changes with the order;
/// - scores, the paper's order: task 2 passed, task 3 unreadable, task 7 not answered (a
///   single task judged by both: kappa undefined).
fn judged_run(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let identity = Identity {
        benchmark: Some("pybench".into()),
        model: Some("openai:Qwen/Qwen2-7B-Instruct".into()),
        checks: Some("faithful".into()),
        ..Identity::default()
    };
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string(&Manifest::new(Kind::PybenchRun, identity)).unwrap(),
    )
    .unwrap();
    write_lines(
        &dir.join("results.jsonl"),
        &[episode(2, "pass"), episode(3, "fail"), episode(7, "pass")],
    );
    let trajectory = |task: u32| {
        json!({"index": task.to_string(), "messages": [
            {"role": "system", "content": "You are an AI Agent"},
            {"role": "user", "content": format!("[INFO]The data is uploaded to ./data/{task}.csv")},
            {"role": "user", "content": "Plot the data"},
            {"role": "assistant", "content": "Analyse: load it\n```python\nprint(42)\n```"},
            {"role": "user", "content": "42"},
            {"role": "assistant", "content": "Finished: 42"},
        ]})
    };
    write_lines(
        &dir.join("trajectory.jsonl"),
        &[trajectory(2), trajectory(3), trajectory(7)],
    );
    let settings = |prompt: &str| {
        json!({"judge": "openai:gpt-4o", "prompt": prompt, "reference": "data:trajectory.jsonl",
               "reference_digest": "0f2aa0df4e8f2134", "temperature": 0.2, "top_p": 0.5,
               "max_tokens": 1000})
    };
    let published = json!({"model": "Qwen2-7B-Instruct", "pass_rate": 0.578,
                           "win_tie_lose": [85.0, 2.0, 56.0], "average_turns": 4.9});
    let winlose = figures(json!({
        "settings": settings("winlose"), "key": "94dbc972baff2f5e",
        "episodes_digest": "bce6e548387e7ccf", "both_orders": true, "tasks": 3, "read": 3,
        "unreadable": {}, "failed": {}, "passed": 2,
        "pass_rate": 2.0 / 3.0, "pass_rate_all": 2.0 / 3.0,
        "categories": {"chart_analysis": {"tasks": 3, "passed": 2, "pass_rate": 2.0 / 3.0}},
        "reference_pass_rate": 1.0 / 3.0,
        "win_tie_lose": {"win": 2, "tie": 0, "lose": 1, "by": "decision"},
        "average_turns": 4.666666666666667, "average_turns_checks": 4.666666666666667,
        "agreement": {"checks": "faithful", "tasks": 3, "both_pass": 1, "judge_only": 1,
                      "checks_only": 1, "both_fail": 0, "observed": 1.0 / 3.0, "kappa": -0.5,
                      "judge_only_tasks": ["PyBench/3"], "checks_only_tasks": ["PyBench/7"]},
        "position": {"pairs": 2, "consistent": 1, "follows_first": 0, "follows_second": 1,
                     "other": 0, "rate": 0.5, "changed_tasks": ["PyBench/7"], "pass_same": 2,
                     "pass_only_second": 0, "pass_only_first": 0, "pass_changed_tasks": []},
        "answers": answers("winlose", true),
        "requests": 5, "tokens": {"prompt_tokens": 25000, "completion_tokens": 300},
        "cost_usd": 0.0655, "published": published,
    }));
    let scores = figures(json!({
        "settings": settings("scores"), "key": "bb4460ea9a118307",
        "episodes_digest": "bce6e548387e7ccf", "both_orders": false, "tasks": 3, "read": 1,
        "unreadable": {"PyBench/3": "the reply's ``` block is not JSON (expected value at line 1 column 1)"},
        "failed": {"PyBench/7": "HTTP 500: the judge's server failed"}, "passed": 1,
        "pass_rate": 1.0, "pass_rate_all": 1.0 / 3.0,
        "categories": {"chart_analysis": {"tasks": 1, "passed": 1, "pass_rate": 1.0}},
        "reference_pass_rate": 1.0,
        "win_tie_lose": {"win": 0, "tie": 1, "lose": 0, "by": "score"},
        "average_turns": 2.0, "average_turns_checks": 4.666666666666667,
        "agreement": {"checks": "faithful", "tasks": 1, "both_pass": 1, "judge_only": 0,
                      "checks_only": 0, "both_fail": 0, "observed": 1.0,
                      "judge_only_tasks": [], "checks_only_tasks": []},
        "answers": answers("scores", false),
        "requests": 2, "tokens": {"prompt_tokens": 10000, "completion_tokens": 120},
    }));
    std::fs::write(
        dir.join("summary.json"),
        json!({"wall_seconds": 12.0, "judges": [winlose, scores]}).to_string(),
    )
    .unwrap();
    let plain = |v: Value| json!({"reply": "```\n{}\n```", "verdict": v});
    write_lines(
        &dir.join("judgements.jsonl"),
        &[
            judgement(
                2,
                "winlose",
                "paper",
                plain(verdict(("Pass", 0), ("Pass", 1))),
            ),
            judgement(
                3,
                "winlose",
                "paper",
                json!({"error": "HTTP 429: too many requests"}),
            ),
            // Asked again: this answer is the one read.
            judgement(
                3,
                "winlose",
                "paper",
                json!({"reply": REPLY, "thinking": THOUGHT,
                       "verdict": verdict(("Failed", 0), ("Pass", 1))}),
            ),
            judgement(
                3,
                "winlose",
                "swapped",
                json!({"reply": "I cannot decide.", "unreadable": "no ``` block in the reply"}),
            ),
            judgement(
                7,
                "winlose",
                "paper",
                plain(verdict(("Pass", 1), ("Failed", 0))),
            ),
            judgement(
                7,
                "winlose",
                "swapped",
                plain(verdict(("Failed", 0), ("Pass", 1))),
            ),
            judgement(
                2,
                "scores",
                "paper",
                plain(json!({"pass": {"agent1": "Pass", "agent2": "Pass"},
                             "reasoning_quality": {"agent1": 7, "agent2": 8},
                             "code_quality": {"agent1": 6, "agent2": 9}})),
            ),
            judgement(
                3,
                "scores",
                "paper",
                json!({"reply": "```\nnot json\n```",
                       "unreadable": "the reply's ``` block is not JSON (expected value at line 1 column 1)"}),
            ),
            judgement(
                7,
                "scores",
                "paper",
                json!({"error": "HTTP 500: the judge's server failed"}),
            ),
        ],
    );
}

/// The first link of the run page's list of tasks titled `title` (its text and address).
fn first_link(browser: &mut Browser, title: &str) -> (String, String) {
    let found = browser.eval(&format!(
        "(() => {{ const list = [...document.querySelectorAll('details.judge-tasks')]
              .find(d => d.querySelector('summary').textContent.startsWith({title}));
            const a = list.querySelector('a'); return [a.textContent, a.getAttribute('href')]; }})()",
        title = json!(title)
    ));
    (
        found[0].as_str().unwrap().to_string(),
        found[1].as_str().unwrap().to_string(),
    )
}

/// Clicks that link, as a user does, and waits for the episode it leads to.
fn follow(browser: &mut Browser, title: &str, task: &str) {
    browser.eval(&format!(
        "[...document.querySelectorAll('details.judge-tasks')]
           .find(d => d.querySelector('summary').textContent.startsWith({title}))
           .querySelector('a').click(), true",
        title = json!(title)
    ));
    browser.wait_for(&format!(
        "document.querySelector('h1') && document.querySelector('h1').textContent.startsWith({task}) \
         && document.querySelector('section.judgements')",
        task = json!(format!("{task} "))
    ));
}

#[test]
fn the_judges_figures_and_verdicts_show_linked_and_as_text_in_the_viewer_and_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("judged");
    judged_run(&run);
    let addr = in_process(std::slice::from_ref(&run));
    let mut browser = Browser::start(1400, 1000);

    // The run's page: both judgings, their figures and the tasks they single out.
    browser.goto(&format!("http://{addr}/#/run/0"));
    browser.wait_for("document.querySelectorAll('details.judging').length === 2");
    browser.wait_for("document.body.innerText.includes('3 of 3 samples')");
    let page = browser.text();
    assert_contains(
        &page,
        &[
            "LLM judges",
            "LLM judge openai:gpt-4o winlose prompt · reference data:trajectory.jsonl · both \
             orders · 3 tasks, 0 set apart, 3 verdicts read, 0 unreadable, 0 not answered",
            "66.7%\nPass Rate (LLM): 2 of 3 verdicts read (66.7% of all 3); the reference 33.3%",
            "2 / 0 / 1\nwin / tie / lose against the reference (by decision)",
            "4.7\naverage turns as the paper counts them; 4.7 by the faithful checks",
            "-0.50\nCohen's kappa against the faithful checks; agree 33.3% over 3 tasks",
            "50.0%\nfollowed the position, over 2 pairs judged both ways",
            "The paper (Qwen2-7B-Instruct): Pass Rate (LLM) 57.8%, win/tie/lose 85/2/56 against \
             GPT-3.5, average turns 4.9.",
            "judge pass\t1\t1",
            "judge fail\t1\t0",
            "passed by the judge only (1)\nPyBench/3",
            "passed by the checks only (1)\nPyBench/7",
            "preference changed with the order (1)\nPyBench/7",
            "The judge: 5 requests, tokens 25000 in, 300 out, $0.0655",
            // The second judging: a kappa chance alone makes, and what was not read.
            "scores prompt · reference data:trajectory.jsonl · the paper's order · 3 tasks, 0 set \
             apart, 1 verdicts read, 1 unreadable, 1 not answered",
            "undefined\nCohen's kappa against the faithful checks; agree 100.0% over 1 tasks",
            "unreadable, counted in no rate (1)",
            "not answered, a rerun asks again (1)",
        ],
    );
    browser.assert_silent();
    browser.screenshot(&screenshots().join("view-judge-run.png"));

    // Each list's tasks link to their episodes.
    assert_eq!(
        first_link(&mut browser, "passed by the judge only"),
        ("PyBench/3".to_string(), "#/run/0/sample/3".to_string())
    );
    follow(
        &mut browser,
        "preference changed with the order",
        "PyBench/7",
    );
    assert_eq!(browser.eval("location.hash"), json!("#/run/0/sample/7"));
    assert_contains(
        &browser.text(),
        &[
            "The faithful checks passed this task and the judge failed it.",
            "The judge's preference changed with the order.",
            "The request failed (a rerun asks again): HTTP 500: the judge's server failed",
        ],
    );
    browser.eval("history.back(), true");
    browser.wait_for("document.querySelectorAll('details.judging').length === 2");
    follow(&mut browser, "passed by the judge only", "PyBench/3");
    assert_eq!(browser.eval("location.hash"), json!("#/run/0/sample/3"));

    // The episode: each judging's verdict in each order, the reply closed and as text.
    let page = browser.text();
    assert_contains(
        &page,
        &[
            "The LLM judge",
            "The judge passed this task and the faithful checks failed it.",
            "The paper's order (Agent1 the reference, Agent2 this run)",
            "Agent1 (the reference)\tAgent2 (this run)",
            "Pass\tFailed\tPass",
            "Decision\t0\t1",
            "Swapped (Agent1 this run, Agent2 the reference)",
            "Unreadable (counted in no rate): no ``` block in the reply",
            "Unreadable (counted in no rate): the reply's ``` block is not JSON",
            "tokens 5000 in, 60 out",
        ],
    );
    assert!(
        !page.contains("HTTP 429"),
        "the failed request asked again is not what was read:\n{page}"
    );
    let replies = "[...document.querySelectorAll('details.judge-reply')]";
    assert_eq!(
        browser.eval(&format!("{replies}.every(d => !d.open)")),
        json!(true),
        "the judge's replies start closed"
    );
    assert_eq!(
        browser.eval("[...document.querySelectorAll('section.judgements details.thinking')].map(d => [d.open, d.querySelector('pre').textContent])"),
        json!([[false, THOUGHT]])
    );
    browser.eval(&format!(
        "{replies}.forEach(d => d.open = true), document.querySelectorAll('section.judgements details.thinking').forEach(d => d.open = true), true"
    ));
    assert_eq!(
        browser.eval(&format!("{replies}[0].querySelector('pre').textContent")),
        json!(REPLY)
    );
    // Shown as the characters it is: no element of it, nothing of it ran.
    assert_eq!(browser.eval("document.title"), json!("assay view"));
    assert_eq!(
        browser.eval(
            "document.querySelectorAll('main script, main img[src=\"x\"]').length + \
             [...document.querySelectorAll('main b')].filter(b => b.textContent === 'bold').length"
        ),
        json!(0),
        "markup from the judge became elements"
    );
    assert!(browser
        .text()
        .contains("<script>document.title='pwned'</script>"));
    browser.assert_silent();
    browser.screenshot(&screenshots().join("view-judge-episode.png"));

    // A task whose two trajectories are the same was asked once.
    browser.goto(&format!("http://{addr}/#/run/0/sample/2"));
    browser.wait_for(
        "document.querySelector('h1').textContent.startsWith('PyBench/2 ') && \
         document.querySelector('section.judgements')",
    );
    assert_contains(
        &browser.text(),
        &[
            "The same request as the paper's order",
            "ReasoningQuality\t7\t8",
            "CodeQuality\t6\t9",
        ],
    );

    // The report: the same figures in the terminal, the JSON and the page.
    let html = dir.path().join("report.html");
    let out = assay_command(dir.path())
        .args(["report", "--html"])
        .arg(&html)
        .arg(&run)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_contains(
        &text(&out.stdout),
        &[
            "judged: judge openai:gpt-4o (winlose prompt, reference data:trajectory.jsonl, both \
             orders): 3 tasks, 0 set apart, 3 verdicts read, 0 unreadable, 0 not answered",
            "  Pass Rate (LLM) 66.7% (2/3; 66.7% of all 3); the reference 33.3%",
            "the judge against the faithful checks over 3 tasks: agree 33.3%, Cohen's kappa -0.50",
            "    passed by the judge only: PyBench/3",
            "Cohen's kappa undefined",
            "  not answered (1, a rerun asks again): PyBench/7",
        ],
    );
    let json = assay_command(dir.path())
        .args(["report", "--json"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(json.status.success(), "{}", text(&json.stderr));
    let report: Value = serde_json::from_slice(&json.stdout).unwrap();
    let judges = report["runs"][0]["judges"].as_array().unwrap();
    assert_eq!(judges.len(), 2);
    assert_eq!(judges[0]["agreement"]["kappa"], -0.5);
    assert!(judges[1]["agreement"].get("kappa").is_none());

    browser.goto(&format!("file://{}", html.display()));
    browser.wait_for("document.querySelectorAll('section.judge').length === 2");
    assert_contains(
        &browser.text(),
        &[
            "LLM judges",
            "judged: judge openai:gpt-4o (winlose prompt, reference data:trajectory.jsonl, both orders)",
            "Pass Rate (LLM), of the verdicts read\t66.7% (2/3)\t57.8%",
            "win/tie/lose against the reference (by decision)\t2/0/1\t85/2/56 against GPT-3.5",
            "Cohen's kappa -0.50",
            "Cohen's kappa undefined",
            "judge pass\t1\t1",
            "passed by the judge only (1): PyBench/3",
            "preference changed (1): PyBench/7",
        ],
    );
    browser.assert_silent();
    browser.screenshot(&screenshots().join("report-judge.png"));
}
