//! A real model behind a real OpenAI-compatible server: llama-cpp-python's, serving
//! SmolLM2-135M-Instruct on the CPU (`common::llama`; its environment is built once per
//! machine). Both benchmarks through chat and completions, both PyBench protocols, `kill -9`
//! of assay and of the server mid-run, a window too small for the prompts, `--serve`
//! starting and stopping the real server, and each coding agent's protocol translated to it by
//! the gateway. A test that cannot get the server fails with the reason.
//!
//! What the model answers is its own business (a 135M model mostly fails); what is checked is
//! what assay makes of it: every answer asked once, sanitized, judged, recorded, and nothing
//! `infra` that the model decided.

mod common;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use assay_tasks::bigcodebench::{Dataset, Subset};
use common::llama::{self, LlamaServer, MODEL};
use common::{assay_command, lines, pybench_data, pybench_env, read_json, run_bounded, text};
use serde_json::Value;

/// The longest one `assay` command of these tests may take (a request takes seconds).
const COMMAND_LIMIT: Duration = Duration::from_secs(15 * 60);
/// Hard tasks whose libraries the small `test` environment has: 19 (glob, zipfile, os; a
/// Complete prompt of 218 tokens), 120 (pandas, datetime, random; 572 tokens) and 15
/// (subprocess, csv, os; 371 tokens).
const TASKS: [&str; 3] = ["BigCodeBench/19", "BigCodeBench/120", "BigCodeBench/15"];
/// What `assay run bigcodebench-hard` needs to judge in the small environment.
const JUDGE: &[&str] = &["--profile", "test", "--jobs", "2"];

/// `assay ARGS` in `dir`, to its end within [`COMMAND_LIMIT`].
fn assay(dir: &Path, args: &[&str]) -> Output {
    let mut command = assay_command(dir);
    command.args(args);
    run_bounded(&mut command, COMMAND_LIMIT)
        .unwrap_or_else(|| panic!("assay {args:?} did not end within {COMMAND_LIMIT:?}"))
}

/// `assay run bigcodebench-hard` with the real model, reached as `reach` says (`--base-url
/// URL` or `--serve COMMAND`), on `tasks`, answers capped at `max_tokens`, into `out`, with
/// `rest`.
fn bigcodebench(
    reach: [&str; 2],
    tasks: &[&str],
    max_tokens: u32,
    out: &str,
    rest: &[&str],
) -> Vec<String> {
    let model = format!("openai:{MODEL}");
    let (tasks, max_tokens) = (tasks.join(","), max_tokens.to_string());
    let mut args = vec![
        "run",
        "bigcodebench-hard",
        "--model",
        &model,
        reach[0],
        reach[1],
        "--tasks",
        &tasks,
        "--max-tokens",
        &max_tokens,
        "--out",
        out,
    ];
    args.extend(JUDGE.iter().chain(rest));
    args.into_iter().map(String::from).collect()
}

/// `assay run pybench` with the real model, reached as `reach` says, on the shared data's
/// `tasks`, into `out`, with `rest`.
fn pybench(reach: [&str; 2], tasks: &str, out: &str, rest: &[&str]) -> Vec<String> {
    pybench_env();
    let model = format!("openai:{MODEL}");
    let data = pybench_data().display().to_string();
    let mut args = vec![
        "run", "pybench", "--model", &model, reach[0], reach[1], "--data", &data, "--tasks", tasks,
        "--out", out,
    ];
    args.extend(rest);
    args.into_iter().map(String::from).collect()
}

fn strings(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// The record of `task` in a JSON-lines file's `records`.
fn of<'a>(records: &'a [Value], task: &str) -> &'a Value {
    records
        .iter()
        .find(|r| r["task_id"] == task)
        .unwrap_or_else(|| panic!("no record of {task}"))
}

#[test]
fn bigcodebench_answers_from_a_real_model_through_chat_and_completions() {
    let dir = tempfile::tempdir().unwrap();
    let server = LlamaServer::start(2048, dir.path().join("server.log"));
    let base = server.base_url();
    let tasks = &TASKS[..2];
    for (out, rest) in [
        ("complete", &["--split", "complete"][..]),
        ("instruct", &["--split", "instruct"][..]),
        (
            "direct",
            &["--split", "complete", "--direct-completion"][..],
        ),
    ] {
        let started = Instant::now();
        let done = assay(
            dir.path(),
            &strings(&bigcodebench(["--base-url", &base], tasks, 96, out, rest)),
        );
        let (stdout, stderr) = (text(&done.stdout), text(&done.stderr));
        assert!(done.status.success(), "{out}: {stdout}\n{stderr}");
        eprintln!("{out}: {:.1} s\n{stdout}", started.elapsed().as_secs_f64());
        let run = dir.path().join(out);
        let answers = lines(&run.join("generation.jsonl"));
        assert_eq!(answers.len(), 2, "{out}: one request per task");
        for record in &answers {
            assert!(record.get("error").is_none(), "{out}: {record}");
            let raw = record["raw"][0].as_str().unwrap();
            assert!(!raw.trim().is_empty(), "{out}: an empty answer: {record}");
            assert!(record["usage"]["completion_tokens"].as_u64().unwrap() > 0);
        }
        if out == "direct" {
            // A base model's raw_solution is the prompt and its continuation.
            let hard = Dataset::embedded("v0.1.4", Subset::Hard).unwrap();
            for record in &answers {
                let task = hard.get(record["task_id"].as_str().unwrap()).unwrap();
                let raw = record["raw"][0].as_str().unwrap();
                assert!(raw.starts_with(&task.complete_prompt), "{record}");
            }
        }
        assert_eq!(lines(&run.join("samples.jsonl")).len(), 2);
        let results = lines(&run.join("results.jsonl"));
        assert_eq!(results.len(), 2, "{out}");
        for result in &results {
            let status = result["status"].as_str().unwrap();
            assert!(
                ["pass", "fail", "error", "timeout"].contains(&status),
                "{out}: {result}"
            );
        }
        assert_eq!(read_json(&run.join("summary.json"))["tasks_judged"], 2);
    }
    let log = server.log_text();
    assert!(
        log.contains("\"POST /v1/completions HTTP/1.1\" 200"),
        "the direct completions went to /v1/completions: {log}"
    );
    assert_eq!(
        server.answered(),
        4,
        "two chat requests for each chat split"
    );
}

#[test]
fn pybench_episodes_with_a_real_model_in_both_protocols() {
    let dir = tempfile::tempdir().unwrap();
    // The model's own window: a cell's output (up to 20,000 characters) fits beside the rest.
    let server = LlamaServer::start(8192, dir.path().join("server.log"));
    let base = server.base_url();
    for protocol in ["markdown", "tools"] {
        let started = Instant::now();
        let args = pybench(
            ["--base-url", &base],
            "3",
            protocol,
            &["--max-turns", "2", "--protocol", protocol],
        );
        let done = assay(dir.path(), &strings(&args));
        let (stdout, stderr) = (text(&done.stdout), text(&done.stderr));
        assert!(done.status.success(), "{protocol}: {stdout}\n{stderr}");
        eprintln!(
            "{protocol}: {:.1} s\n{stdout}",
            started.elapsed().as_secs_f64()
        );
        let run = dir.path().join(protocol);
        let record = &lines(&run.join("results.jsonl"))[0];
        assert!(
            ["pass", "fail"].contains(&record["status"].as_str().unwrap()),
            "{protocol}: {record}"
        );
        let turns = record["turns"].as_u64().unwrap();
        assert!((1..=2).contains(&turns), "{protocol}: {record}");
        // One request a reply, and one refused more where the conversation outgrew the window.
        let requests = lines(&run.join("generation.jsonl"));
        let refused = u64::from(record["end"] == "context_full");
        assert_eq!(
            requests.len() as u64,
            turns + refused,
            "{protocol}: {record}"
        );
        let answered = requests.iter().filter(|r| r.get("error").is_none()).count();
        assert_eq!(answered as u64, turns, "{protocol}");
        let trajectory = &lines(&run.join("trajectory.jsonl"))[0];
        assert_eq!(trajectory["index"], "3");
        assert_eq!(trajectory["messages"][0]["role"], "system");
    }
}

#[test]
fn a_real_small_model_judges_pybench_trajectories() {
    let dir = tempfile::tempdir().unwrap();
    pybench_env();
    let (run, reference) = common::judge_case(dir.path());
    let data = pybench_data().display().to_string();
    let (run, reference) = (
        run.display().to_string(),
        format!("replay:{}", reference.display()),
    );
    // Short requests, for the CPU: 29 and 113 judged against the recording and against
    // nothing ("Agent1 Failed").
    let tasks = "29,113";
    let done = assay(
        dir.path(),
        &[
            "eval",
            "pybench",
            "--trajectories",
            &run,
            "--data",
            &data,
            "--tasks",
            tasks,
            "--out",
            "eval",
        ],
    );
    assert!(done.status.success(), "{}", text(&done.stderr));
    // The window holds a judge request: upstream's system prompt and two short trajectories.
    let server = LlamaServer::start(8192, dir.path().join("server.log"));
    let model = format!("openai:{MODEL}");
    let judge = [
        "judge",
        "pybench",
        "eval",
        "--judge",
        &model,
        "--base-url",
        &server.base_url(),
        "--reference",
        &reference,
        "--orders",
        "paper",
        "--max-tokens",
        "256",
        // Once asked again at most: each ask is a minute of this CPU.
        "--reasks",
        "1",
    ];
    let started = Instant::now();
    let done = assay(dir.path(), &judge);
    let (stdout, stderr) = (text(&done.stdout), text(&done.stderr));
    assert!(done.status.success(), "{stdout}\n{stderr}");
    eprintln!(
        "judged in {:.1} s\n{stdout}",
        started.elapsed().as_secs_f64()
    );
    // What a 135M model answers is mostly no verdict: each reply is kept and counted, as a
    // verdict or as unreadable, never as a pass it did not give.
    let records = lines(&dir.path().join("eval/judgements.jsonl"));
    // One request a task, asked again once while no reply reads.
    for task in ["PyBench/29", "PyBench/113"] {
        let asks: Vec<&Value> = records.iter().filter(|r| r["task_id"] == task).collect();
        assert!((1..=2).contains(&asks.len()), "{task}: {asks:?}");
        let read = asks.iter().any(|r| r["verdict"].is_object());
        assert!(read || asks.len() == 2, "{task}: unread after one ask");
    }
    for record in &records {
        assert!(record["reply"].is_string(), "{record}");
        assert!(
            record["verdict"].is_object() != record["unreadable"].is_string(),
            "{record}"
        );
    }
    let figures = &read_json(&dir.path().join("eval/summary.json"))["judges"][0];
    let read = figures["read"].as_u64().unwrap();
    let unreadable = figures["unreadable"].as_object().unwrap().len() as u64;
    assert_eq!(read + unreadable, 2, "{figures}");
    assert!(figures["passed"].as_u64().unwrap() <= read);
    assert!(server.answered() >= 2, "the real server answered them");
    // Asked again, the same command asks nothing.
    let before = server.answered();
    let again = assay(dir.path(), &judge);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(server.answered(), before);
}

/// Whether `path` has at least `n` lines.
fn has_lines(path: &Path, n: usize) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.lines().count() >= n)
}

/// Waits (bounded) until `done` holds.
fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `assay ARGS` started in the background, its output in `dir`'s files.
fn spawn(dir: &Path, args: &[&str]) -> std::process::Child {
    assay_command(dir)
        .args(args)
        .stdout(std::fs::File::create(dir.join("stdout")).unwrap())
        .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
        .spawn()
        .unwrap()
}

#[test]
fn a_killed_run_resumes_without_asking_the_model_again() {
    let dir = tempfile::tempdir().unwrap();
    let server = LlamaServer::start(2048, dir.path().join("server.log"));
    let tasks = [
        "BigCodeBench/19",
        "BigCodeBench/120",
        "BigCodeBench/15",
        "BigCodeBench/100",
    ];
    let args = [
        "generate",
        "bigcodebench-hard",
        "--model",
        &format!("openai:{MODEL}"),
        "--base-url",
        &server.base_url(),
        "--tasks",
        &tasks.join(","),
        "--max-tokens",
        "64",
        "--concurrency",
        "1",
        "--out",
        "run",
    ];
    let log = dir.path().join("run/generation.jsonl");
    let mut child = spawn(dir.path(), &args);
    wait_until("two answers", COMMAND_LIMIT, || has_lines(&log, 2));
    // SIGKILL: no chance to write anything more.
    child.kill().unwrap();
    child.wait().unwrap();
    let before = lines(&log);
    let done = assay(dir.path(), &args);
    assert!(done.status.success(), "{}", text(&done.stderr));
    let after = lines(&log);
    assert_eq!(
        after.len(),
        tasks.len(),
        "one answer for each task, none twice"
    );
    assert_eq!(after[..before.len()], before[..], "what was kept is kept");
    let mut asked: Vec<&str> = after
        .iter()
        .map(|r| r["task_id"].as_str().unwrap())
        .collect();
    asked.sort();
    asked.dedup();
    assert_eq!(asked.len(), tasks.len());
    // At the server: each task answered once, and at most the request in flight when assay
    // was killed answered a second time.
    let answered = server.answered();
    assert!(
        (tasks.len()..=tasks.len() + 1).contains(&answered),
        "the server answered {answered} requests for {} tasks",
        tasks.len()
    );
}

#[test]
fn a_server_that_dies_mid_run_and_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = LlamaServer::start(2048, dir.path().join("server.log"));
    let tasks = [
        "BigCodeBench/19",
        "BigCodeBench/120",
        "BigCodeBench/15",
        "BigCodeBench/100",
        "BigCodeBench/123",
    ];
    let args_owned = bigcodebench(
        ["--base-url", &server.base_url()],
        &tasks,
        48,
        "run",
        &["--concurrency", "1", "--retries", "3"],
    );
    let args = strings(&args_owned);
    let log = dir.path().join("run/generation.jsonl");
    let mut child = spawn(dir.path(), &args);
    wait_until("an answer", COMMAND_LIMIT, || has_lines(&log, 1));
    server.kill();
    // Back once a request has failed for good (its retries span seconds; the next request's
    // retries outlast the restart).
    wait_until("a failed request", COMMAND_LIMIT, || {
        lines(&log).iter().any(|r| r.get("error").is_some())
    });
    server.restart();
    let status = {
        let deadline = Instant::now() + COMMAND_LIMIT;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "the run did not end");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let stdout = std::fs::read_to_string(dir.path().join("stdout")).unwrap();
    assert_eq!(status.code(), Some(1), "unanswered tasks: exit 1\n{stdout}");
    let records = lines(&log);
    let failed: Vec<String> = records
        .iter()
        .filter(|r| r.get("error").is_some())
        .map(|r| r["task_id"].as_str().unwrap().to_string())
        .collect();
    let answered = records.iter().filter(|r| r.get("error").is_none()).count();
    assert!(!failed.is_empty() && answered >= 2, "{records:?}");
    assert_eq!(failed.len() + answered, tasks.len());
    let run = dir.path().join("run");
    let results = lines(&run.join("results.jsonl"));
    assert_eq!(results.len(), answered, "the answered are judged");
    let summary = read_json(&run.join("summary.json"));
    for task in &failed {
        let why = summary["infra"][task].as_str().unwrap_or_default();
        assert!(
            why.contains("gave up after 4 attempts"),
            "{task}: {summary}"
        );
    }

    // The rerun asks only for what failed, and ends well.
    let served = server.answered();
    let again = assay(dir.path(), &args);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(server.answered() - served, failed.len());
    let records = lines(&log);
    let answered_now = records.iter().filter(|r| r.get("error").is_none()).count();
    assert_eq!(answered_now, tasks.len());
    assert_eq!(lines(&run.join("results.jsonl")).len(), tasks.len());
    let summary = read_json(&run.join("summary.json"));
    assert!(
        summary["infra"].as_object().unwrap().is_empty(),
        "{summary}"
    );
}

#[test]
fn a_window_too_small_is_the_models_not_the_harness() {
    let dir = tempfile::tempdir().unwrap();
    // 512 tokens: llama-cpp-python refuses a prompt over it in OpenAI's words (HTTP 400).
    let small = LlamaServer::start(512, dir.path().join("small.log"));
    let tasks = ["BigCodeBench/19", "BigCodeBench/120"];
    let done = assay(
        dir.path(),
        &strings(&bigcodebench(
            ["--base-url", &small.base_url()],
            &tasks,
            1280,
            "small",
            &[],
        )),
    );
    let stdout = text(&done.stdout);
    assert!(done.status.success(), "{stdout}\n{}", text(&done.stderr));
    let run = dir.path().join("small");
    let answers = lines(&run.join("generation.jsonl"));
    let long = of(&answers, "BigCodeBench/120");
    assert_eq!(long["context"]["empty"], true, "{long}");
    assert_eq!(long["raw"][0], "");
    let said = long["context"]["said"].as_str().unwrap();
    assert!(
        said.starts_with("HTTP 400: This model's maximum context length is 512 tokens."),
        "{said}"
    );
    assert!(
        long["context"]["reason"]
            .as_str()
            .unwrap()
            .ends_with("does not fit the model's context window (512 tokens)"),
        "{long}"
    );
    // The short prompt fits: the server cuts its answer to the window, an ordinary answer.
    assert!(of(&answers, "BigCodeBench/19").get("context").is_none());
    let results = lines(&run.join("results.jsonl"));
    let empty = of(&results, "BigCodeBench/120");
    assert_eq!(empty["status"], "fail", "{empty}");
    assert!(empty["reason"]
        .as_str()
        .unwrap()
        .starts_with("no answer: the prompt"));
    let summary = read_json(&run.join("summary.json"));
    assert_eq!(summary["context"]["empty"], 1, "{summary}");
    assert!(summary["infra"].as_object().unwrap().is_empty());
    assert_eq!(summary["tasks_judged"], 2);
    assert!(stdout.contains("1 answer left empty"), "{stdout}");

    // 600 tokens: llama.cpp rounds the window up while llama-cpp-python keeps arrays of 600,
    // so an answer that fills them fails with numpy's words (HTTP 500): never retried.
    let odd = LlamaServer::start(600, dir.path().join("odd.log"));
    let done = assay(
        dir.path(),
        &strings(&bigcodebench(
            ["--base-url", &odd.base_url()],
            &tasks[1..],
            1280,
            "odd",
            &["--retries", "3"],
        )),
    );
    assert!(done.status.success(), "{}", text(&done.stderr));
    let answers = lines(&dir.path().join("odd/generation.jsonl"));
    let filled = of(&answers, "BigCodeBench/120");
    assert_eq!(
        filled["context"]["said"],
        "HTTP 500: could not broadcast input array from shape (49152,) into shape (0,) \
         (internal_server_error)",
        "{filled}"
    );
    assert_eq!(filled["attempts"], 1, "not retried");
    assert_eq!(
        of(
            &lines(&dir.path().join("odd/results.jsonl")),
            "BigCodeBench/120"
        )["status"],
        "fail"
    );

    // PyBench: its first prompt (about 460 tokens) is over a 400-token window; the episode
    // ends there and is judged, quoting the server.
    let tiny = LlamaServer::start(400, dir.path().join("tiny.log"));
    let args = pybench(["--base-url", &tiny.base_url()], "3", "pybench", &[]);
    let done = assay(dir.path(), &strings(&args));
    let stdout = text(&done.stdout);
    assert!(done.status.success(), "{stdout}\n{}", text(&done.stderr));
    let record = &lines(&dir.path().join("pybench/results.jsonl"))[0];
    assert_eq!(record["end"], "context_full", "{record}");
    assert_eq!(record["status"], "fail");
    let said = record["end_reason"].as_str().unwrap();
    assert!(
        said.starts_with(
            "the conversation outgrew the model's context window: HTTP 500: could not \
             broadcast input array from shape ("
        ),
        "{said}"
    );
    let summary = read_json(&dir.path().join("pybench/summary.json"));
    assert_eq!(summary["context_full"]["PyBench/3"], said);
    assert_eq!(summary["judged"], 1);
    assert!(
        stdout.contains("ended at a full context window (1,"),
        "{stdout}"
    );
}

#[test]
fn serve_starts_the_real_server_for_both_benchmarks_and_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let port = llama::free_port();
    let serve = shlex::try_join(llama::command(port, 4096).iter().map(String::as_str)).unwrap();
    let started = Instant::now();
    let args = bigcodebench(["--serve", &serve], &TASKS[..1], 64, "bigcodebench", &[]);
    let done = assay(dir.path(), &strings(&args));
    let (stdout, stderr) = (text(&done.stdout), text(&done.stderr));
    assert!(done.status.success(), "{stdout}\n{stderr}");
    eprintln!(
        "bigcodebench through --serve: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(llama::models(port).is_none(), "the server outlived the run");
    let run = dir.path().join("bigcodebench");
    let manifest = read_json(&run.join("manifest.json"));
    assert_eq!(
        manifest["model_access"]["server"]["models"],
        serde_json::json!([MODEL])
    );
    assert_eq!(
        manifest["model_access"]["base_url"],
        format!("http://127.0.0.1:{port}/v1")
    );
    let log = std::fs::read_to_string(run.join("server.log")).unwrap();
    assert!(
        log.contains("POST /v1/chat/completions HTTP/1.1\" 200"),
        "{log}"
    );
    assert_eq!(lines(&run.join("results.jsonl")).len(), 1);

    let started = Instant::now();
    let args = pybench(["--serve", &serve], "85", "pybench", &["--max-turns", "1"]);
    let done = assay(dir.path(), &strings(&args));
    assert!(done.status.success(), "{}", text(&done.stderr));
    eprintln!(
        "pybench through --serve: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(llama::models(port).is_none(), "the server outlived the run");
    let run = dir.path().join("pybench");
    let record = &lines(&run.join("results.jsonl"))[0];
    assert_eq!(record["turns"], 1, "{record}");
    let manifest = read_json(&run.join("manifest.json"));
    assert_eq!(manifest["model_access"]["server"]["log"], "server.log");
    assert!(run.join("server.log").is_file());
    // Nothing left to play: the rerun starts no server.
    let again = assay(dir.path(), &strings(&args));
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(!text(&again.stderr).contains("starting the model server"));
}

#[test]
fn each_agents_protocol_reaches_the_real_server_and_its_episode_is_judged() {
    pybench_env();
    let dir = tempfile::tempdir().unwrap();
    let server = LlamaServer::start(8192, dir.path().join("server.log"));
    let model = format!("openai:{MODEL}");
    let data = pybench_data().display().to_string();
    // Codex speaks Responses (streamed), Claude Code Anthropic Messages (streamed),
    // mini-swe-agent Chat Completions: each translated to the server's Chat Completions.
    for (agent, protocol) in [
        ("codex", "responses"),
        ("claude-code", "messages"),
        ("mini-swe-agent", "chat_completions"),
    ] {
        let out = format!("pybench-{agent}");
        // Replies of 32 tokens: what is tested is the path, and prompt processing on a CPU is
        // most of the time already (Claude Code's request is 4,000 tokens).
        let done = assay(
            dir.path(),
            &[
                "run",
                "pybench",
                "--agent",
                agent,
                "--model",
                &model,
                "--base-url",
                &server.base_url(),
                "--data",
                &data,
                "--tasks",
                "7",
                "--max-turns",
                "2",
                "--max-tokens",
                "32",
                "--out",
                &out,
            ],
        );
        assert!(done.status.success(), "{agent}: {}", text(&done.stderr));
        let run = dir.path().join(&out);
        let record = lines(&run.join("results.jsonl")).remove(0);
        let status = record["status"].as_str().unwrap_or_default();
        assert!(matches!(status, "pass" | "fail"), "{agent}: {record}");
        let end = record["end"].as_str().unwrap_or_default();
        assert!(
            matches!(
                end,
                "answered" | "max_turns" | "agent_ended" | "context_full"
            ),
            "{agent}: {record}"
        );
        let exchanges = lines(&run.join("tasks/7/agent/exchanges.jsonl"));
        let answered: Vec<&Value> = exchanges.iter().filter(|e| e["error"].is_null()).collect();
        assert!(!answered.is_empty(), "{agent}: {exchanges:?}");
        for exchange in &answered {
            assert_eq!(exchange["protocol"], protocol, "{agent}");
            assert!(
                exchange["usage"]["prompt_tokens"].as_u64().unwrap_or(0) > 0,
                "{agent}"
            );
        }
    }
}
