//! `assay run` and `assay generate` as a user runs them, against a real HTTP server on
//! loopback that speaks the OpenAI and Anthropic APIs: the official request bodies, answers
//! sanitized into the official samples format, failures turned into `infra`, resume without
//! asking twice, and the API key kept away from disk and from evaluated code.

mod common;
#[path = "../../assay-models/tests/mock/mod.rs"]
mod mock;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use assay_generate::prompt;
use assay_tasks::bigcodebench::Task;
use common::{asked_about, assay_command, hard, lines, read_json, text, TEST_ENGINE};
use mock::{MockServer, Reply, Route};
use serde_json::{json, Value};

const KEY: &str = "sk-canary-4242";
/// Hard tasks whose reference solutions pass in the small `test` environment.
const PASSES: &str = "BigCodeBench/19";
/// Fails to answer at first; between the others in task order, so that its answer, when it
/// comes, moves the samples after it.
const FAILS_TO_ANSWER: &str = "BigCodeBench/120";
const LEAKS: &str = "BigCodeBench/161";

fn task(id: &str) -> Task {
    hard().get(id).unwrap().clone()
}

fn assay(args: &[&str], dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut command = assay_command(dir);
    command.args(args);
    if args[0] == "run" {
        command.args(TEST_ENGINE);
    }
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("run assay")
}

/// `assay generate bigcodebench-hard --model MODEL --base-url BASE` and `rest`.
fn generate(model: &str, base: &str, rest: &[&str], dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut args = vec![
        "generate",
        "bigcodebench-hard",
        "--model",
        model,
        "--base-url",
        base,
    ];
    args.extend_from_slice(rest);
    assay(&args, dir, env)
}

/// Every file under `dir`, with its text.
fn files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push((path.clone(), text(&std::fs::read(&path).unwrap())));
        }
    }
    out
}

/// A chat reply as models write them: prose, a fenced program, more prose.
fn fenced(code: &str) -> String {
    format!("Here is the solution:\n\n```python\n{code}\n```\n\nIt zips the files.\n")
}

#[test]
fn a_model_is_asked_judged_and_resumed_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    let healthy = Arc::new(AtomicBool::new(false));
    let flag = healthy.clone();
    server.respond_with(Route::Chat, move |body| match asked_about(body).as_str() {
        PASSES => Reply::chat(&[&fenced(&task(PASSES).reference_solution())]),
        // Evaluated code that looks for the key in its environment.
        LEAKS => Reply::chat(&[&fenced(
            "import os\ndef task_func(*args, **kwargs):\n    \
             raise RuntimeError('LEAK:' + os.environ.get('OPENAI_API_KEY', 'none'))",
        )]),
        FAILS_TO_ANSWER if flag.load(Ordering::SeqCst) => {
            Reply::chat(&[&fenced(&task(FAILS_TO_ANSWER).reference_solution())])
        }
        _ => Reply::openai_error(503, "server_error", "overloaded", "try later"),
    });
    let base = server.openai_base();
    let tasks = format!("{PASSES},{LEAKS},{FAILS_TO_ANSWER}");
    let args = [
        "run",
        "bigcodebench-hard",
        "--model",
        "openai:mock-model",
        "--base-url",
        &base,
        "--tasks",
        &tasks,
        "--retries",
        "1",
        "--out",
        "run",
    ];
    let first = assay(&args, dir.path(), &[("OPENAI_API_KEY", KEY)]);
    let (stdout, stderr) = (text(&first.stdout), text(&first.stderr));
    assert_eq!(first.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!(
            "{FAILS_TO_ANSWER} (1 sample): gave up after 2 attempts"
        )),
        "{stdout}"
    );
    // Both figures: the unanswered task set apart, and counted as a failure.
    assert!(
        stdout.contains(
            "pass@1: 0.5000 over 2 tasks judged (1 infra sample set apart; 1 task with no \
             verdict at all)"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("pass@1 with infra as failures: 0.3333 over 3 tasks"),
        "{stdout}"
    );
    let run = dir.path().join("run");
    // pass_at_k.json says the same: the unanswered sample counts there too.
    let pass_at_k = read_json(&run.join("pass_at_k.json"));
    assert_eq!(
        (
            &pass_at_k["tasks_judged"],
            &pass_at_k["tasks_set_apart"],
            &pass_at_k["samples_set_apart"]
        ),
        (&json!(2), &json!(1), &json!(1)),
        "{pass_at_k}"
    );
    let official_here = pass_at_k["infra_as_fail"]["pass@1"].as_f64().unwrap();
    assert!((official_here - 1.0 / 3.0).abs() < 1e-12, "{pass_at_k}");

    // The requests: the official user message, greedy, the official token limit, the key.
    let requests = server.requests_to(Route::Chat);
    assert_eq!(requests.len(), 4, "one each, the failing one twice");
    for request in &requests {
        let id = asked_about(&request.body);
        let expected = prompt::chat_message(&task(&id), assay_tasks::bigcodebench::Split::Complete);
        assert_eq!(
            request.body,
            serde_json::json!({
                "model": "mock-model",
                "messages": [{"role": "user", "content": expected}],
                "temperature": 0.0,
                "max_tokens": 1280,
            })
        );
        assert_eq!(
            request.header("authorization"),
            Some(&*format!("Bearer {KEY}"))
        );
    }

    // The official samples format, in task order, sanitized beside the raw answer.
    let samples = std::fs::read_to_string(run.join("samples.jsonl")).unwrap();
    let rows: Vec<&str> = samples.lines().collect();
    assert_eq!(rows.len(), 2);
    assert!(
        rows[0].starts_with(&format!("{{\"task_id\": \"{PASSES}\", \"solution\": \"")),
        "{}",
        rows[0]
    );
    let row: Value = serde_json::from_str(rows[0]).unwrap();
    assert!(row["raw_solution"]
        .as_str()
        .unwrap()
        .starts_with("Here is the solution:"));
    let solution = row["solution"].as_str().unwrap();
    assert!(
        solution.starts_with("import os\nimport glob\nimport zipfile\ndef task_func(directory):"),
        "{solution}"
    );
    assert!(
        !solution.contains("```") && !solution.contains("It zips"),
        "{solution}"
    );

    // Verdicts: a pass, the leak probe failing without having seen the key, the unanswered
    // sample infra with its reason.
    let summary = read_json(&run.join("summary.json"));
    assert_eq!(summary["statuses"]["pass"], 1, "{summary}");
    assert_eq!(summary["statuses"]["infra"], 1, "{summary}");
    let infra = summary["infra"][FAILS_TO_ANSWER].as_str().unwrap();
    assert!(
        infra.starts_with("no answer from the model: gave up after 2 attempts: HTTP 503"),
        "{infra}"
    );
    let eval = read_json(&run.join("eval_results.json"));
    let probe = eval["eval"][LEAKS][0]["details"].to_string();
    assert!(probe.contains("LEAK:none"), "{probe}");
    assert_eq!(
        read_json(&run.join("pass_at_k.json"))["model"],
        "mock-model"
    );
    let manifest = read_json(&run.join("manifest.json"));
    assert_eq!(manifest["identity"]["model"], "openai:mock-model");
    assert_eq!(manifest["identity"]["prompt"], "bigcodebench-0.2.5");
    assert_eq!(
        manifest["generation"]["totals"]["usage"]["completion_tokens"],
        10
    );
    assert_eq!(
        manifest["generation"]["totals"]["usage"]["prompt_tokens"],
        20
    );
    assert_eq!(manifest["model_access"]["base_url"], base.as_str());
    for (path, content) in files(&run) {
        assert!(!content.contains(KEY), "the key reached {}", path.display());
    }

    // Rerun: only the unanswered task is asked, only its sample is judged.
    healthy.store(true, Ordering::SeqCst);
    let second = assay(&args, dir.path(), &[("OPENAI_API_KEY", KEY)]);
    assert_eq!(
        second.status.code(),
        Some(0),
        "{}\n{}",
        text(&second.stdout),
        text(&second.stderr)
    );
    let requests = server.requests_to(Route::Chat);
    assert_eq!(requests.len(), 5);
    assert_eq!(asked_about(&requests[4].body), FAILS_TO_ANSWER);
    let ids: Vec<String> = lines(&run.join("samples.jsonl"))
        .iter()
        .map(|r| r["task_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, [PASSES, FAILS_TO_ANSWER, LEAKS]);
    // Earlier verdicts are kept, renumbered to their samples' new places: one record each.
    let records: Vec<(u64, String)> = lines(&run.join("results.jsonl"))
        .iter()
        .map(|r| {
            (
                r["index"].as_u64().unwrap(),
                r["task_id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: Vec<(u64, String)> = [PASSES, FAILS_TO_ANSWER, LEAKS]
        .iter()
        .enumerate()
        .map(|(i, t)| (i as u64, t.to_string()))
        .collect();
    assert_eq!(records, expected);
    let summary = read_json(&run.join("summary.json"));
    assert_eq!(summary["statuses"]["pass"], 2, "{summary}");
    assert!(
        summary["infra"].as_object().unwrap().is_empty(),
        "{summary}"
    );
}

#[test]
fn without_a_model_the_reference_solutions_check_the_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = format!("{PASSES},{LEAKS}");
    let out = assay(
        &[
            "run",
            "bigcodebench-hard",
            "--tasks",
            &tasks,
            "--out",
            "run",
        ],
        dir.path(),
        &[],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("To evaluate a model: assay run bigcodebench-hard --model openai:MODEL"),
        "{stderr}"
    );
    assert!(stdout.contains("pass@1: 1.0000"), "{stdout}");
    // stderr is a pipe, not a terminal: progress comes as lines, the last one whole, with
    // answers and verdicts counted apart (and the references when the cache lacked them).
    let last = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("assay: answers "))
        .unwrap_or_default();
    assert!(last.starts_with("assay: answers 2/2 ("), "{stderr}");
    assert!(last.contains(" · verdicts 2/2 ("), "{stderr}");
    assert!(!stderr.contains("judged"), "{stderr}");
    assert!(
        stdout.contains("generated 2 samples (2 requests"),
        "{stdout}"
    );
    let pass_at_k = read_json(&dir.path().join("run/pass_at_k.json"));
    assert_eq!(pass_at_k["model"], "reference");
}

#[test]
fn a_refused_key_stops_the_run_at_once_keeping_what_was_answered() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, |body| {
        if asked_about(body) == PASSES {
            Reply::chat(&["def task_func(directory):\n    return None\n"])
        } else {
            Reply::openai_error(
                401,
                "invalid_request_error",
                "invalid_api_key",
                "Incorrect API key",
            )
        }
    });
    let base = server.openai_base();
    let tasks = format!("{PASSES},{LEAKS},{FAILS_TO_ANSWER}");
    let out = generate(
        "openai:m",
        &base,
        &["--tasks", &tasks, "--concurrency", "1", "--out", "gen"],
        dir.path(),
        &[("OPENAI_API_KEY", KEY)],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the model API refused the run") && stderr.contains("HTTP 401"),
        "{stderr}"
    );
    assert!(!stderr.contains(KEY), "{stderr}");
    // Asked one at a time in task order: the run stops at the first refusal, the refused
    // request not retried (it would appear twice) and the task after it never asked. That
    // order of requests, not how long the command took, is what "at once" means here.
    let asked: Vec<String> = server
        .requests_to(Route::Chat)
        .iter()
        .map(|r| asked_about(&r.body))
        .collect();
    assert_eq!(asked, [PASSES, FAILS_TO_ANSWER]);
    // What was answered before is in the samples file, usable as it is.
    let rows = lines(&dir.path().join("gen/samples.jsonl"));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["task_id"], PASSES);
}

#[test]
fn anthropic_and_base_models_get_the_official_requests() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Messages, |_| {
        Reply::message("```python\nimport os\ndef task_func(directory):\n    return None\n```")
    });
    server.respond_with(Route::Completions, |_| {
        Reply::completion(&["    return None\n"])
    });
    let url = server.url();
    let out = generate(
        "anthropic:claude-mock",
        &url,
        &["--tasks", PASSES, "--split", "instruct", "--out", "claude"],
        dir.path(),
        &[("ANTHROPIC_API_KEY", KEY)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let request = &server.requests_to(Route::Messages)[0];
    assert_eq!(request.header("x-api-key"), Some(KEY));
    let stops: Vec<&str> = request.body["stop_sequences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(stops, prompt::EOS);
    assert_eq!(request.body["max_tokens"], 1280);
    let content = request.body["messages"][0]["content"].as_str().unwrap();
    assert_eq!(
        content,
        prompt::chat_message(&task(PASSES), assay_tasks::bigcodebench::Split::Instruct)
    );
    let row = &lines(&dir.path().join("claude/samples.jsonl"))[0];
    assert_eq!(
        row["solution"],
        "import os\ndef task_func(directory):\n    return None"
    );

    let base = server.openai_base();
    let out = generate(
        "openai:base-mock",
        &base,
        &[
            "--direct-completion",
            "--tasks",
            PASSES,
            "-n",
            "1",
            "--out",
            "base",
        ],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let request = &server.requests_to(Route::Completions)[0];
    assert_eq!(
        request.body["prompt"],
        task(PASSES).complete_prompt.as_str()
    );
    assert_eq!(request.body["stop"].as_array().unwrap().len(), 11);
    assert!(
        request.header("authorization").is_none(),
        "no key, none sent"
    );
    let row = &lines(&dir.path().join("base/samples.jsonl"))[0];
    let raw = row["raw_solution"].as_str().unwrap();
    assert_eq!(
        raw,
        format!("{}    return None\n", task(PASSES).complete_prompt)
    );
    let instruct = generate(
        "openai:base-mock",
        &base,
        &[
            "--direct-completion",
            "--split",
            "instruct",
            "--out",
            "base-instruct",
        ],
        dir.path(),
        &[],
    );
    assert!(text(&instruct.stderr).contains("can only answer the Complete split"));
}

#[test]
fn a_generation_killed_mid_way_resumes_without_asking_again() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    let hang = Arc::new(AtomicBool::new(true));
    let flag = hang.clone();
    server.respond_with(Route::Chat, move |body| {
        if asked_about(body) == FAILS_TO_ANSWER && flag.load(Ordering::SeqCst) {
            Reply::Hang
        } else {
            Reply::chat(&["def task_func():\n    return 1\n"])
        }
    });
    let base = server.openai_base();
    let tasks = format!("{PASSES},{LEAKS},{FAILS_TO_ANSWER}");
    let args = [
        "generate",
        "bigcodebench-hard",
        "--model",
        "openai:m",
        "--base-url",
        &base,
        "--tasks",
        &tasks,
        "--concurrency",
        "1",
        "--out",
        "gen",
    ];
    let mut child = assay_command(dir.path())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the first answer is on disk and the second request hangs, then kill -9.
    let log = dir.path().join("gen/generation.jsonl");
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.requests_to(Route::Chat).len() < 2
        || std::fs::read_to_string(&log).map_or(0, |t| t.lines().count()) < 1
    {
        assert!(
            Instant::now() < deadline,
            "the generation did not get going"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !dir.path().join("gen/samples.jsonl").exists()
            || lines(&dir.path().join("gen/samples.jsonl")).is_empty()
    );

    hang.store(false, Ordering::SeqCst);
    let out = assay_command(dir.path()).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let asked: Vec<String> = server
        .requests_to(Route::Chat)
        .iter()
        .map(|r| asked_about(&r.body))
        .collect();
    assert_eq!(
        asked,
        [PASSES, FAILS_TO_ANSWER, FAILS_TO_ANSWER, LEAKS],
        "the first answer is not asked for again"
    );
    let ids: Vec<String> = lines(&dir.path().join("gen/samples.jsonl"))
        .iter()
        .map(|r| r["task_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, [PASSES, FAILS_TO_ANSWER, LEAKS]);
}

#[test]
fn several_samples_are_one_sampled_request_per_task() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, |body| {
        let n = body["n"].as_u64().unwrap_or(1) as usize;
        let texts: Vec<String> = (0..n)
            .map(|i| format!("def task_func(directory):\n    return {i}\n"))
            .collect();
        Reply::chat(&texts.iter().map(String::as_str).collect::<Vec<_>>())
    });
    let base = server.openai_base();
    let tasks = format!("{PASSES},{LEAKS}");
    let out = generate(
        "openai:m",
        &base,
        &["--tasks", &tasks, "-n", "3", "--out", "gen"],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let requests = server.requests_to(Route::Chat);
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.body["n"], 3);
        assert_eq!(request.body["temperature"], 0.8);
        assert_eq!(request.body["top_p"], 0.95);
    }
    let rows = lines(&dir.path().join("gen/samples.jsonl"));
    let got: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["task_id"].as_str().unwrap().to_string(),
                r["solution"]
                    .as_str()
                    .unwrap()
                    .lines()
                    .last()
                    .unwrap()
                    .trim()
                    .to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [PASSES, LEAKS]
        .iter()
        .flat_map(|t| (0..3).map(move |i| (t.to_string(), format!("return {i}"))))
        .collect();
    assert_eq!(got, want);
    let manifest = read_json(&dir.path().join("gen/manifest.json"));
    assert_eq!(manifest["identity"]["generation"]["n"], 3);
    assert_eq!(manifest["generation"]["totals"]["samples"], 6);
}

#[test]
fn a_server_ignoring_n_is_asked_again_for_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, |body| {
        let n = body["n"].as_u64().unwrap_or(1);
        Reply::chat(&[&format!("def task_func(directory):\n    return {n}\n")])
    });
    let base = server.openai_base();
    let out = generate(
        "openai:m",
        &base,
        &["--tasks", PASSES, "-n", "3", "--out", "gen"],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let asked_n: Vec<u64> = server
        .requests_to(Route::Chat)
        .iter()
        .map(|r| r.body["n"].as_u64().unwrap_or(1))
        .collect();
    assert_eq!(asked_n, [3, 2, 1]);
    assert_eq!(lines(&dir.path().join("gen/samples.jsonl")).len(), 3);
}

#[test]
fn anthropic_samples_one_answer_per_request_without_top_p() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Messages, |_| {
        Reply::message("def task_func(directory):\n    return None")
    });
    let url = server.url();
    let out = generate(
        "anthropic:claude-mock",
        &url,
        &[
            "--tasks",
            PASSES,
            "-n",
            "2",
            "--concurrency",
            "1",
            "--out",
            "gen",
        ],
        dir.path(),
        &[("ANTHROPIC_API_KEY", KEY)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let requests = server.requests_to(Route::Messages);
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.body["temperature"], 0.8);
        assert!(request.body.get("top_p").is_none(), "{}", request.body);
        assert!(request.body.get("n").is_none(), "{}", request.body);
    }
    let log = lines(&dir.path().join("gen/generation.jsonl"));
    assert_eq!(log.len(), 2, "each answer recorded on its own");
    let manifest = read_json(&dir.path().join("gen/manifest.json"));
    assert_eq!(manifest["identity"]["generation"]["top_p"], Value::Null);
}

#[test]
fn run_continues_what_generate_made() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, |_| {
        Reply::chat(&[&fenced(&task(PASSES).reference_solution())])
    });
    let base = server.openai_base();
    let out = generate(
        "openai:m",
        &base,
        &["--tasks", PASSES, "--out", "gen"],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let hint = text(&out.stdout);
    assert!(
        hint.contains("the same command with `run` instead of `generate`"),
        "{hint}"
    );
    let out = assay(
        &[
            "run",
            "bigcodebench-hard",
            "--model",
            "openai:m",
            "--base-url",
            &base,
            "--tasks",
            PASSES,
            "--out",
            "gen",
        ],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        server.requests_to(Route::Chat).len(),
        1,
        "nothing asked twice"
    );
    let summary = read_json(&dir.path().join("gen/summary.json"));
    assert_eq!(summary["statuses"]["pass"], 1, "{summary}");
    let manifest = read_json(&dir.path().join("gen/manifest.json"));
    assert_eq!(manifest["kind"], "bigcodebench-run");
    assert_eq!(manifest["generation"]["samples"], 1);
}

#[test]
fn a_damaged_generation_log_is_named_by_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, |_| {
        Reply::chat(&["def task_func():\n    return 1\n"])
    });
    let base = server.openai_base();
    let args = ["--tasks", PASSES, "--out", "gen"];
    let out = generate("openai:m", &base, &args, dir.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let log = dir.path().join("gen/generation.jsonl");
    let mut record = lines(&log).remove(0);
    record["solutions"] = serde_json::json!([]);
    std::fs::write(&log, format!("{record}\n")).unwrap();
    let out = generate("openai:m", &base, &args, dir.path(), &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("gen/generation.jsonl:1: fields `raw`, `solutions`, `finish_reasons`: 1, 0 and 1 entries"),
        "{stderr}"
    );
    assert_eq!(
        server.requests_to(Route::Chat).len(),
        1,
        "nothing asked on a damaged log"
    );
}

/// A model whose context window is too small: a prompt that fits with a lower token limit is
/// asked again once with the limit the server's numbers leave; a prompt that does not fit at
/// all has an empty answer, judged `fail` with the reason. Nothing is `infra`, the command
/// succeeds, the summary counts both apart, and a rerun asks nothing.
#[test]
fn a_full_context_window_is_the_models_not_the_harness() {
    const ROOMY: &str = "BigCodeBench/19";
    const TOO_LONG: &str = "BigCodeBench/161";
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, |body| {
        let max_tokens = body["max_tokens"].as_u64().unwrap_or_default();
        match asked_about(body).as_str() {
            // vLLM's words for a prompt of 1,000 tokens in a 2,048-token window.
            ROOMY if max_tokens > 1048 => Reply::json(
                400,
                json!({"error": {"message": format!("'max_tokens' or 'max_completion_tokens' is too large: {max_tokens}. This model's maximum context length is 2048 tokens and your request has 1000 input tokens ({max_tokens} > 2048 - 1000). (parameter=max_tokens, value={max_tokens})"), "type": "BadRequestError", "param": null, "code": 400}}),
            ),
            ROOMY => Reply::chat(&[&fenced(&task(ROOMY).reference_solution())]),
            // llama.cpp's words for a prompt over the window.
            _ => Reply::json(
                400,
                json!({"error": {"code": 400, "message": "request (2100 tokens) exceeds the available context size (2048 tokens), try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 2100, "n_ctx": 2048}}),
            ),
        }
    });
    let base = server.openai_base();
    let tasks = format!("{ROOMY},{TOO_LONG}");
    let args = [
        "run",
        "bigcodebench-hard",
        "--model",
        "openai:small-window",
        "--base-url",
        &base,
        "--tasks",
        &tasks,
        "--out",
        "run",
    ];
    let first = assay(&args, dir.path(), &[]);
    let (stdout, stderr) = (text(&first.stdout), text(&first.stderr));
    assert!(first.status.success(), "{stdout}\n{stderr}");
    let asked: Vec<(String, u64)> = server
        .requests_to(Route::Chat)
        .iter()
        .map(|r| {
            let limit = r.body["max_tokens"].as_u64().unwrap();
            (asked_about(&r.body), limit)
        })
        .collect();
    let mut sorted = asked.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            (TOO_LONG.to_string(), 1280),
            (ROOMY.to_string(), 1048),
            (ROOMY.to_string(), 1280)
        ],
        "the roomy prompt once more with the limit that fits, the long one never again"
    );

    let out = dir.path().join("run");
    let records = lines(&out.join("generation.jsonl"));
    let record = |id: &str| records.iter().find(|r| r["task_id"] == id).unwrap().clone();
    let roomy = record(ROOMY);
    assert_eq!(roomy["context"]["max_tokens"], 1048);
    assert_eq!(roomy["context"]["empty"], false);
    assert!(roomy["context"]["said"]
        .as_str()
        .unwrap()
        .starts_with("HTTP 400: 'max_tokens' or 'max_completion_tokens' is too large: 1280."));
    let long = record(TOO_LONG);
    assert_eq!(long["raw"], json!([""]));
    assert_eq!(long["context"]["empty"], true);
    assert!(long.get("error").is_none());
    assert_eq!(
        long["context"]["reason"],
        "the prompt (2100 tokens) does not fit the model's context window (2048 tokens)"
    );

    let results = lines(&out.join("results.jsonl"));
    let result = |id: &str| results.iter().find(|r| r["task_id"] == id).unwrap().clone();
    assert_eq!(result(ROOMY)["status"], "pass");
    let empty = result(TOO_LONG);
    assert_eq!(empty["status"], "fail");
    let reason = empty["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("no answer: the prompt (2100 tokens) does not fit the model's context window (2048 tokens) (HTTP 400: request (2100 tokens) exceeds"),
        "{reason}"
    );
    // The official files judge the empty answer as the official harness would: a failure.
    let samples = lines(&out.join("samples.jsonl"));
    assert_eq!(samples.len(), 2);
    let evals = read_json(&out.join("eval_results.json"));
    assert_eq!(evals["eval"][TOO_LONG][0]["status"], "fail");
    let summary = read_json(&out.join("summary.json"));
    assert_eq!(summary["context"], json!({"lowered": 1, "empty": 1}));
    assert_eq!(summary["tasks_judged"], 2);
    assert!(summary["infra"].as_object().unwrap().is_empty());
    assert!(
        stdout.contains("1 answer asked again with the token limit that fits, 1 answer left empty"),
        "{stdout}"
    );

    let again = assay(&args, dir.path(), &[]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(
        server.requests_to(Route::Chat).len(),
        3,
        "a rerun asks nothing"
    );
}
