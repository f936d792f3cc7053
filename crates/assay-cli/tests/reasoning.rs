//! Reasoning models through both benchmarks, against a real HTTP server on loopback answering
//! the way thinking models answer: thinking written into the text (with and without its opening
//! tag, cut inside it), returned in vLLM's, DeepSeek's and OpenRouter's fields, and Anthropic's
//! signed thinking blocks in a PyBench tool-use conversation. What is judged never holds the
//! thinking; the knobs reach the requests; reasoning tokens reach the figures.

mod common;
#[path = "../../assay-models/tests/mock/mod.rs"]
mod mock;

use std::path::Path;
use std::process::Output;

use common::PYBENCH_DEDUP as DEDUP;
use common::{asked_about, assay_command, fenced, hard_task, lines, read_json, run_pybench, text};
use mock::{MockServer, Reply, Route};
use serde_json::{json, Value};

/// Hard tasks whose reference solutions pass in the small `test` environment.
const IN_TEXT: &str = "BigCodeBench/19";
const OPENED: &str = "BigCodeBench/120";
const CUT: &str = "BigCodeBench/15";
const REASONING_CONTENT: &str = "BigCodeBench/100";
const REASONING: &str = "BigCodeBench/123";

/// A draft with code of its own, which would be judged (and fail) if taken for the answer.
const DRAFT: &str = "First a draft:\n```python\ndef task_func(*args, **kwargs):\n    raise NotImplementedError('draft')\n```\nNo, better:";

/// The reference solution as a model writes it: in a fenced block.
fn answer(task: &str) -> String {
    fenced(&hard_task(task).reference_solution())
}

/// A chat completion of `message`, `finish`, with usage counting 40 reasoning tokens.
fn completion(message: Value, finish: &str) -> Reply {
    Reply::ok(json!({
        "id": "c", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 200, "total_tokens": 300,
                  "completion_tokens_details": {"reasoning_tokens": 40}},
    }))
}

/// How a thinking model answers each task; `plain`: the same answers without any thinking.
fn thinking_model(body: &Value, plain: bool) -> Reply {
    let task = asked_about(body);
    let answer = answer(&task);
    let (message, finish) = match task.as_str() {
        _ if plain => (json!({"role": "assistant", "content": answer}), "stop"),
        IN_TEXT => (
            json!({"role": "assistant", "content": format!("<think>\n{DRAFT}\n</think>\n\n{answer}")}),
            "stop",
        ),
        OPENED => (
            json!({"role": "assistant", "content": format!("{DRAFT}\n</think>\n{answer}")}),
            "stop",
        ),
        CUT => (
            json!({"role": "assistant", "content": format!("<think>\n{DRAFT}\n```python\nimport os")}),
            "length",
        ),
        REASONING_CONTENT => (
            json!({"role": "assistant", "content": answer, "reasoning_content": DRAFT}),
            "stop",
        ),
        _ => (
            json!({"role": "assistant", "content": answer, "reasoning": DRAFT}),
            "stop",
        ),
    };
    completion(message, finish)
}

fn assay(args: &[&str], dir: &Path) -> Output {
    assay_command(dir).args(args).output().expect("run assay")
}

fn tasks() -> String {
    [IN_TEXT, OPENED, CUT, REASONING_CONTENT, REASONING].join(",")
}

#[test]
fn bigcodebench_judges_the_answer_never_the_thinking() {
    let dir = tempfile::tempdir().unwrap();
    let thinking = MockServer::start_on_thread();
    thinking.respond_with(Route::Chat, |body| thinking_model(body, false));
    let plain = MockServer::start_on_thread();
    plain.respond_with(Route::Chat, |body| thinking_model(body, true));
    let tasks = tasks();
    let run = |server: &MockServer, out: &str, rest: &[&str]| {
        let base = server.openai_base();
        let mut args = vec![
            "run",
            "bigcodebench-hard",
            "--model",
            "openai:qwen3-mock",
            "--base-url",
            &base,
            "--tasks",
            &tasks,
            "--out",
            out,
            "--profile",
            "test",
            "--jobs",
            "2",
        ];
        args.extend_from_slice(rest);
        assay(&args, dir.path())
    };
    let thought = run(
        &thinking,
        "thinking",
        &[
            "--reasoning-effort",
            "medium",
            "--price-in",
            "1",
            "--price-out",
            "10",
        ],
    );
    let stdout = text(&thought.stdout);
    assert!(
        thought.status.success(),
        "{stdout}\n{}",
        text(&thought.stderr)
    );
    let asked = thinking.requests_to(Route::Chat);
    assert_eq!(asked.len(), 5);
    assert!(asked.iter().all(|r| r.body["reasoning_effort"] == "medium"));
    let without = run(&plain, "plain", &[]);
    assert!(without.status.success(), "{}", text(&without.stderr));
    assert!(plain.requests_to(Route::Chat)[0]
        .body
        .get("reasoning_effort")
        .is_none());

    let out = dir.path().join("thinking");
    let samples = lines(&out.join("samples.jsonl"));
    let plain_samples = lines(&dir.path().join("plain/samples.jsonl"));
    for (ours, theirs) in samples.iter().zip(&plain_samples) {
        let task = ours["task_id"].as_str().unwrap();
        assert_eq!(task, theirs["task_id"]);
        if task == CUT {
            assert_eq!(ours["solution"], "", "a cut answer has no solution");
            continue;
        }
        assert_eq!(
            ours["solution"], theirs["solution"],
            "{task}: the thinking set apart, the same solution as without it"
        );
        assert!(!ours["solution"].as_str().unwrap().contains("draft"));
    }
    // The raw answer is kept whole.
    let raw = |id: &str| {
        samples.iter().find(|s| s["task_id"] == id).unwrap()["raw_solution"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(raw(IN_TEXT).starts_with("<think>\n") && raw(IN_TEXT).contains("NotImplementedError"));
    assert!(raw(OPENED).contains("</think>"));

    let records = lines(&out.join("generation.jsonl"));
    let record = |id: &str| records.iter().find(|r| r["task_id"] == id).unwrap().clone();
    assert_eq!(record(IN_TEXT)["thinking"][0]["source"], "text");
    assert_eq!(record(IN_TEXT)["thinking"][0]["text"], DRAFT);
    assert_eq!(record(OPENED)["thinking"][0]["text"], DRAFT);
    assert_eq!(record(CUT)["thinking"][0]["cut"], true);
    for id in [REASONING_CONTENT, REASONING] {
        assert_eq!(record(id)["thinking"][0]["source"], "field", "{id}");
        assert_eq!(record(id)["thinking"][0]["text"], DRAFT, "{id}");
    }
    assert_eq!(record(IN_TEXT)["usage"]["reasoning_tokens"], 40);

    let results = lines(&out.join("results.jsonl"));
    let plain_results = lines(&dir.path().join("plain/results.jsonl"));
    let status = |rows: &[Value], id: &str| {
        rows.iter().find(|r| r["task_id"] == id).unwrap()["status"].clone()
    };
    for id in [IN_TEXT, OPENED, REASONING_CONTENT, REASONING] {
        assert_eq!(status(&results, id), status(&plain_results, id), "{id}");
    }
    assert_eq!(status(&plain_results, CUT), "pass");
    let cut = results.iter().find(|r| r["task_id"] == CUT).unwrap();
    assert_eq!(cut["status"], "fail");
    assert!(
        cut["reason"]
            .as_str()
            .unwrap()
            .starts_with("no answer: it ended inside its thinking, before any answer"),
        "{cut}"
    );

    let manifest = read_json(&out.join("manifest.json"));
    assert_eq!(
        manifest["identity"]["reasoning"],
        json!({"effort": "medium"})
    );
    let totals = &manifest["generation"]["totals"];
    assert_eq!(totals["thinking"], 5);
    assert_eq!(totals["cut_while_thinking"], 1);
    assert_eq!(totals["cut_short"], 1);
    assert_eq!(totals["usage"]["reasoning_tokens"], 200);
    let reasoning_cost = totals["reasoning_cost_usd"].as_f64().unwrap();
    assert!(
        (reasoning_cost - 200.0 * 10.0 / 1e6).abs() < 1e-12,
        "{totals}"
    );
    assert_eq!(
        read_json(&out.join("summary.json"))["tokens"]["reasoning_tokens"],
        200
    );
    assert!(stdout.contains("(of which 200 reasoning, $"), "{stdout}");
    assert!(
        stdout.contains(
            "5 answers came with thinking, set apart from what is judged; 1 ended inside it"
        ),
        "{stdout}"
    );
    // The plain run has no reasoning in its identity or figures.
    let plain_manifest = read_json(&dir.path().join("plain/manifest.json"));
    assert!(plain_manifest["identity"].get("reasoning").is_none());

    // Another effort is another run: refused, naming the difference, nothing asked.
    let again = run(&thinking, "thinking", &["--reasoning-effort", "high"]);
    assert!(!again.status.success());
    assert!(
        text(&again.stderr).contains("reasoning"),
        "{}",
        text(&again.stderr)
    );
    assert_eq!(thinking.requests_to(Route::Chat).len(), 5);
}

#[test]
fn bad_reasoning_settings_are_named_before_anything_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    let base = server.openai_base();
    let url = server.url();
    for (args, says) in [
        (
            vec![
                "--model",
                "openai:m",
                "--base-url",
                &base,
                "--reasoning-effort",
                "extreme",
            ],
            "unknown reasoning effort `extreme` (one of: none, minimal, low, medium, high, xhigh)",
        ),
        (
            vec![
                "--model",
                "openai:m",
                "--base-url",
                &base,
                "--thinking-budget",
                "2048",
            ],
            "--thinking-budget is Anthropic's extended thinking",
        ),
        (
            vec![
                "--model",
                "anthropic:c",
                "--base-url",
                &url,
                "--thinking-budget",
                "100",
            ],
            "needs at least 1024 tokens",
        ),
        (
            vec![
                "--model",
                "anthropic:c",
                "--base-url",
                &url,
                "--thinking-budget",
                "2048",
                "--top-p",
                "0.5",
                "-n",
                "5",
            ],
            "--top-p 0.5: with extended thinking",
        ),
        (
            vec![
                "--model",
                "openai:m",
                "--base-url",
                &base,
                "--think-tags",
                "<think>",
            ],
            "thinking tags `<think>`: write OPEN,CLOSE",
        ),
        (
            vec!["--model", "reference", "--reasoning-model", "yes"],
            "are for model APIs, not `reference`",
        ),
    ] {
        let mut command = assay_command(dir.path());
        command
            .args([
                "generate",
                "bigcodebench-hard",
                "--tasks",
                IN_TEXT,
                "--out",
                "bad",
            ])
            .args(&args)
            .env("ANTHROPIC_API_KEY", "sk-test");
        let out = command.output().unwrap();
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{args:?} accepted");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    assert!(server.requests().is_empty());
}

/// `assay run pybench --model MODEL --base-url BASE` on the shared data for `tasks`, into
/// `out`, with `rest`.
fn pybench(model: &str, base: &str, tasks: &str, out: &Path, rest: &[&str], dir: &Path) -> Output {
    let key = ("ANTHROPIC_API_KEY", "sk-pybench-test");
    run_pybench(model, base, tasks, out, rest, key, dir)
}
/// Code a draft holds: run, it would leave nothing behind.
const DRAFT_CELL: &str = "```python\nraise SystemExit('the draft ran')\n```";

#[test]
fn pybench_runs_the_answer_not_the_draft_and_never_sends_thinking_back() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, |body| {
        let messages = body["messages"].as_array().unwrap();
        let query = messages[2]["content"].as_str().unwrap_or_default();
        let message = if query.contains("./output/3.csv") {
            if messages.len() == 3 {
                json!({"role": "assistant", "content": format!(
                    "<think>\nMaybe:\n{DRAFT_CELL}\n</think>\nLet me dedup.\n```python\n{DEDUP}\n```")})
            } else {
                json!({"role": "assistant", "content": "Finished: done",
                       "reasoning_content": "It printed the rows; done."})
            }
        } else {
            // Cut inside its thinking: no code, no answer.
            return completion(
                json!({"role": "assistant", "content": format!("<think>\n{DRAFT_CELL}\nhmm")}),
                "length",
            );
        };
        completion(message, "stop")
    });
    let out = dir.path().join("run");
    let done = pybench(
        "openai:qwen3-mock",
        &server.openai_base(),
        "3,2",
        &out,
        &["--max-tokens", "4000"],
        dir.path(),
    );
    let stdout = text(&done.stdout);
    assert!(done.status.success(), "{stdout}\n{}", text(&done.stderr));

    let requests = server.requests_to(Route::Chat);
    assert!(requests.iter().all(|r| r.body["max_tokens"] == 4000));
    let follow_up = requests
        .iter()
        .find(|r| r.body["messages"].as_array().unwrap().len() > 3)
        .expect("a second turn");
    let sent_back = &follow_up.body["messages"][3];
    assert_eq!(sent_back["role"], "assistant");
    let sent = sent_back["content"].as_str().unwrap();
    assert!(
        sent.starts_with("Let me dedup.") && !sent.contains("think"),
        "{sent}"
    );
    assert!(follow_up.body["messages"][4]["content"]
        .as_str()
        .unwrap()
        .contains("rows "));

    let results = lines(&out.join("results.jsonl"));
    let result = |id: &str| results.iter().find(|r| r["task_id"] == id).unwrap().clone();
    let dedup = result("PyBench/3");
    assert_eq!(dedup["status"], "pass", "{dedup}");
    assert_eq!(
        dedup["cells"].as_array().unwrap().len(),
        1,
        "the draft never ran"
    );
    assert_eq!(dedup["tokens"]["reasoning_tokens"], 80);
    let cut = result("PyBench/2");
    assert_eq!(cut["end"], "cut_while_thinking");
    assert_eq!(cut["status"], "fail");
    assert!(cut["cells"].as_array().unwrap().is_empty());

    let trajectories = lines(&out.join("trajectory.jsonl"));
    let three = trajectories.iter().find(|t| t["index"] == "3").unwrap();
    let reply = &three["messages"][3];
    assert_eq!(reply["thinking"], format!("Maybe:\n{DRAFT_CELL}"));
    assert!(reply["content"]
        .as_str()
        .unwrap()
        .starts_with("Let me dedup."));
    assert_eq!(
        three["messages"][5]["thinking"],
        "It printed the rows; done."
    );
    let records = lines(&out.join("generation.jsonl"));
    assert!(records
        .iter()
        .any(|r| r["raw"][0].as_str().unwrap().starts_with("<think>\nMaybe:")));

    let manifest = read_json(&out.join("manifest.json"));
    assert_eq!(manifest["identity"]["reply_tokens"], 4000);
    assert!(manifest["identity"].get("reasoning").is_none());
    let summary = read_json(&out.join("summary.json"));
    assert_eq!(summary["cut_while_thinking"], json!(["PyBench/2"]));
    assert_eq!(summary["tokens"]["reasoning_tokens"], 120);
    assert!(
        stdout.contains("ended at a reply cut off inside its thinking (1"),
        "{stdout}"
    );
}

#[test]
fn pybench_tool_use_sends_anthropics_signed_thinking_back_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    let signed =
        json!({"type": "thinking", "thinking": "Dedup with pandas.", "signature": "sig-abc"});
    let redacted = json!({"type": "redacted_thinking", "data": "ENCRYPTED"});
    let blocks = [signed.clone(), redacted.clone()];
    server.respond_with(Route::Messages, move |body| {
        let turns = body["messages"].as_array().unwrap().len();
        let content = if turns <= 2 {
            json!([blocks[0], blocks[1], {"type": "text", "text": "Running it."},
                   {"type": "tool_use", "id": "toolu_1", "name": "python", "input": {"code": DEDUP}}])
        } else {
            json!([{"type": "thinking", "thinking": "It worked.", "signature": "sig-def"},
                   {"type": "text", "text": "Finished: done"}])
        };
        Reply::ok(json!({"id": "msg", "type": "message", "role": "assistant", "model": "claude",
                         "content": content, "stop_reason": if turns <= 2 {"tool_use"} else {"end_turn"},
                         "usage": {"input_tokens": 50, "output_tokens": 70}}))
    });
    let out = dir.path().join("claude");
    let done = pybench(
        "anthropic:claude-mock",
        &server.url(),
        "3",
        &out,
        &["--protocol", "tools", "--thinking-budget", "1024"],
        dir.path(),
    );
    assert!(done.status.success(), "{}", text(&done.stderr));
    let requests = server.requests_to(Route::Messages);
    assert_eq!(requests.len(), 2);
    let first = &requests[0].body;
    assert_eq!(
        first["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
    assert_eq!(first["max_tokens"], 1024 + 1000);
    assert!(first.get("temperature").is_none(), "{first}");
    let replied = &requests[1].body["messages"];
    let assistant = replied
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert_eq!(assistant["content"][0], signed);
    assert_eq!(assistant["content"][1], redacted);
    assert_eq!(
        assistant["content"][2],
        json!({"type": "text", "text": "Running it."})
    );
    assert_eq!(assistant["content"][3]["type"], "tool_use");

    let results = lines(&out.join("results.jsonl"));
    assert_eq!(results[0]["status"], "pass", "{}", results[0]);
    let trajectory = &lines(&out.join("trajectory.jsonl"))[0];
    assert_eq!(trajectory["messages"][3]["thinking"], "Dedup with pandas.");
    let manifest = read_json(&out.join("manifest.json"));
    assert_eq!(
        manifest["identity"]["reasoning"],
        json!({"thinking_budget": 1024})
    );
}
