//! The built-in coding agents, really installed (pinned, from npm and PyPI) and really run:
//! `assay agents check` drives each through its own protocol, the gateway and the sandbox's
//! relay with a scripted model, and the shell command it is told to run must leave its file in
//! the agent's working directory; `assay run pybench --agent` has each solve one task (its
//! check passes) and fail another, and `assay run bigcodebench-hard --agent` has each write
//! one task's solution.py right (pass) and another's wrong (fail), through a scripted model
//! behind a real HTTP server.

mod common;
#[path = "../../assay-models/tests/mock/mod.rs"]
mod mock;

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{assay_command, hard, lines, pybench_data, pybench_env, task_statuses, PYBENCH_DEDUP};
use mock::{MockServer, Reply, Route};
use serde_json::{json, Value};

/// The provider key the scripted model's server is given: never in anything an agent sees.
const KEY: &str = "sk-agent-canary-4471";

/// Installs `agent` if needed and checks it, with `rest`: it must run the command through
/// `requests` model requests (one asked for the command, one saw its output and finished) and
/// answer `answer` when one is given.
fn check(agent: &str, requests: u32, answer: Option<&str>, rest: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let out = assay_command(dir.path())
        .args(["agents", "check", agent, "--profile", "test"])
        .args(rest)
        .output()
        .expect("assay runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{agent}: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("ok: it ran the command in the sandbox"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("{agent}: {requests} model requests")),
        "{stdout}"
    );
    if let Some(answer) = answer {
        assert!(stdout.contains(&format!("answer {answer:?}")), "{stdout}");
    }
}

#[test]
fn codex_runs_a_command_through_the_responses_api() {
    check("codex", 2, Some("Done."), &[]);
}

#[test]
fn with_the_hosts_network_the_gateway_takes_a_free_port() {
    // No network namespace of its own: the loopback is the host's, shared by every episode.
    check("codex", 2, Some("Done."), &["--allow-network"]);
}

#[test]
fn claude_code_runs_a_command_through_anthropic_messages() {
    check("claude-code", 2, Some("Done."), &[]);
}

#[test]
fn mini_swe_agent_runs_a_command_through_chat_completions() {
    // Its second command is the one that submits; its last reply has no text.
    check("mini-swe-agent", 2, None, &[]);
}

#[test]
fn agents_are_listed_with_their_protocol_and_pins() {
    let dir = tempfile::tempdir().unwrap();
    let out = assay_command(dir.path())
        .args(["agents", "list"])
        .output()
        .expect("assay runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    for line in [
        "speaks responses; @openai/codex@0.171.0",
        "speaks messages; @anthropic-ai/claude-code@2.1.332",
        "speaks chat_completions; mini-swe-agent==2.4.6",
    ] {
        assert!(stdout.contains(line), "{line}\n{stdout}");
    }
}

/// One step of the scripted model: run a shell command, or answer.
enum Step {
    Shell(String),
    Answer(&'static str),
}

/// The reply of the scripted model to `body` when the agent is at step `steps[n]`, `n` being
/// the tool results so far: a call of whichever shell tool the agent offers, or its answer (for
/// mini-swe-agent, which ends only by a command, the command that submits, with the answer as
/// the reply's text).
fn scripted(body: &Value, steps: &[Step]) -> Reply {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let done = messages.iter().filter(|m| m["role"] == "tool").count();
    let offered: Vec<String> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(String::from))
        .collect();
    let has = |name: &str| offered.iter().any(|o| o == name);
    let submit_by_command = has("bash") && !has("Bash");
    let (text, command) = match steps.get(done) {
        Some(Step::Shell(command)) => (String::new(), Some(command.clone())),
        Some(Step::Answer(text)) if submit_by_command => (
            text.to_string(),
            Some("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT".to_string()),
        ),
        Some(Step::Answer(text)) => (text.to_string(), None),
        None => ("Done.".to_string(), None),
    };
    let call = command.map(|command| {
        let (name, arguments) = if has("exec_command") {
            ("exec_command", json!({ "cmd": command }))
        } else if has("Bash") {
            ("Bash", json!({ "command": command }))
        } else if has("bash") {
            ("bash", json!({ "command": command }))
        } else {
            ("shell", json!({ "command": ["bash", "-lc", command] }))
        };
        json!([{"id": format!("call_{done}"), "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()}}])
    });
    let mut message = json!({"role": "assistant", "content": text});
    if let Some(call) = &call {
        message["tool_calls"] = call.clone();
    }
    let finish = if call.is_some() { "tool_calls" } else { "stop" };
    Reply::ok(json!({
        "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }))
}

/// Every file under `dir`, with its bytes.
fn files(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    out
}

/// The scripted model on PyBench task 3: the dedup (after `before`, a shell prefix), then the
/// answer naming the file. `None` for another task.
fn solve_3(body: &Value, before: &str) -> Option<Reply> {
    if !body.to_string().contains("./output/3.csv") {
        return None;
    }
    let dedup = format!("{before}python3 - <<'EOF'\n{PYBENCH_DEDUP}\nEOF");
    let steps = [
        Step::Shell(dedup),
        Step::Answer("Finished: saved to ./output/3.csv"),
    ];
    Some(scripted(body, &steps))
}

/// `assay run pybench --agent AGENT` on tasks 3 (the agent dedups the CSV into
/// ./output/3.csv with a Python heredoc, then says where it is: its check passes) and 7 (the
/// agent answers with the wrong counts: its check fails).
fn solves_one_pybench_task_and_fails_another(agent: &str, requests_for_3: usize) {
    pybench_env();
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, |body| {
        // Its environment is kept too: what the agent's commands can read.
        solve_3(body, "env > output/env.txt; ")
            .unwrap_or_else(|| scripted(body, &[Step::Answer("Finished: 1 2 3")]))
    });
    let out = dir.path().join("run");
    let data = pybench_data().display().to_string();
    let done = assay_command(dir.path())
        .args([
            "run",
            "pybench",
            "--agent",
            agent,
            "--model",
            "openai:scripted",
        ])
        .args([
            "--base-url",
            &server.openai_base(),
            "--data",
            &data,
            "--tasks",
            "3,7",
        ])
        .arg("--out")
        .arg(&out)
        .env("OPENAI_API_KEY", KEY)
        .output()
        .expect("assay runs");
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{agent}: {stderr}");
    let statuses = task_statuses(&out.join("results.jsonl"));
    assert_eq!(
        statuses,
        [
            ("PyBench/3".into(), "pass".into()),
            ("PyBench/7".into(), "fail".into())
        ],
        "{agent}: {stderr}"
    );
    let records = lines(&out.join("results.jsonl"));
    let three = records
        .iter()
        .find(|r| r["task_id"] == "PyBench/3")
        .unwrap();
    assert_eq!(three["end"], "answered", "{agent}: {three}");
    assert_eq!(three["turns"], requests_for_3 as u64, "{agent}: {three}");
    assert!(out.join("tasks/3/output/3.csv").is_file(), "{agent}");
    // Its commands see the placeholder the gateway asks for, not the key (checked below with
    // every other file of the run).
    let env = std::fs::read_to_string(out.join("tasks/3/output/env.txt")).unwrap();
    assert!(env.contains("=assay-"), "{agent}: {env}");
    let exchanges = lines(&out.join("tasks/3/agent/exchanges.jsonl"));
    assert_eq!(exchanges.len(), requests_for_3, "{agent}");
    // The second request brought back what the dedup printed.
    let results = exchanges[1]["results"][0]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(results.contains("rows"), "{agent}: {results}");
    // The trajectory, in upstream's form, has it as an interpreter message.
    let trajectories = lines(&out.join("trajectory.jsonl"));
    let three = trajectories.iter().find(|t| t["index"] == "3").unwrap();
    let observed = three["messages"].as_array().unwrap().iter().any(|m| {
        m["role"] == "user"
            && m["content"].as_str().is_some_and(|c| {
                c.starts_with("[INFO]This is a Code Interpreter Message:") && c.contains("rows")
            })
    });
    assert!(observed, "{agent}: {three}");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert!(
        manifest["identity"]["agent"]
            .as_str()
            .is_some_and(|a| a.starts_with(agent)),
        "{agent}: {manifest}"
    );
    // The real key went to the model's server and nowhere the agent could see: not in its
    // requests, its output, or anything of the run.
    let upstream = server.requests_to(Route::Chat);
    assert!(upstream
        .iter()
        .all(|r| r.headers.get("authorization").map(String::as_str)
            == Some(&format!("Bearer {KEY}"))));
    for (path, bytes) in files(&out) {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "{agent}: the key is in {}",
            path.display()
        );
    }
}

#[test]
fn codex_solves_a_pybench_task() {
    solves_one_pybench_task_and_fails_another("codex", 2);
}

#[test]
fn claude_code_solves_a_pybench_task() {
    solves_one_pybench_task_and_fails_another("claude-code", 2);
}

#[test]
fn mini_swe_agent_solves_a_pybench_task() {
    solves_one_pybench_task_and_fails_another("mini-swe-agent", 2);
}

/// Every text of a chat request's messages, joined.
fn texts(body: &Value) -> String {
    let mut out = String::new();
    for message in body["messages"].as_array().into_iter().flatten() {
        match &message["content"] {
            Value::String(text) => out.push_str(text),
            Value::Array(parts) => {
                for part in parts {
                    out.push_str(part["text"].as_str().unwrap_or_default());
                }
            }
            _ => {}
        }
        out.push('\n');
    }
    out
}

/// The Hard task whose prompt an agent's request carries.
fn asked_task(body: &Value) -> Option<assay_tasks::bigcodebench::Task> {
    let texts = texts(body);
    hard()
        .tasks
        .into_iter()
        .find(|t| texts.contains(t.complete_prompt.trim()))
}

/// Passes with the reference solution; fails with the wrong one.
const RIGHT: &str = "BigCodeBench/19";
const WRONG: &str = "BigCodeBench/161";

/// `assay run bigcodebench-hard --agent AGENT` on two tasks: the agent writes the reference
/// solution of one into solution.py (pass) and a wrong function for the other (fail).
fn writes_one_bigcodebench_solution_right_and_another_wrong(agent: &str) {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, |body| {
        let Some(task) = asked_task(body) else {
            return scripted(body, &[Step::Answer("I do not know this task.")]);
        };
        let code = if task.task_id == RIGHT {
            task.reference_solution()
        } else {
            format!(
                "def {}(*args, **kwargs):\n    return None\n",
                task.entry_point
            )
        };
        let write = format!("cat > solution.py <<'ASSAY_EOF'\n{code}\nASSAY_EOF");
        scripted(
            body,
            &[Step::Shell(write), Step::Answer("Saved to solution.py.")],
        )
    });
    let tasks = format!("{RIGHT},{WRONG}");
    let done = assay_command(dir.path())
        .args(["run", "bigcodebench-hard", "--agent", agent])
        .args([
            "--model",
            "openai:scripted",
            "--base-url",
            &server.openai_base(),
        ])
        .args(["--tasks", &tasks, "--out", "run"])
        .env("OPENAI_API_KEY", KEY)
        .output()
        .expect("assay runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&done.stdout),
        String::from_utf8_lossy(&done.stderr),
    );
    assert!(done.status.success(), "{agent}: {stdout}\n{stderr}");
    let out = dir.path().join("run");
    let records = lines(&out.join("results.jsonl"));
    let status = |id: &str| {
        records
            .iter()
            .find(|r| r["task_id"] == id)
            .map(|r| r["status"].as_str().unwrap_or_default().to_string())
    };
    assert_eq!(
        status(RIGHT).as_deref(),
        Some("pass"),
        "{agent}: {records:?}"
    );
    assert_eq!(
        status(WRONG).as_deref(),
        Some("fail"),
        "{agent}: {records:?}"
    );
    // What the agent spent, per sample: its requests and tokens, in generation.jsonl.
    let generation = lines(&out.join("generation.jsonl"));
    assert_eq!(generation.len(), 2, "{agent}");
    for record in &generation {
        assert!(record["error"].is_null(), "{agent}: {record}");
        // Its requests are its work, not retries.
        assert_eq!(record["attempts"], 1, "{agent}: {record}");
        assert!(
            record["usage"]["prompt_tokens"].as_u64().unwrap_or(0) > 0,
            "{agent}: {record}"
        );
    }
    let number = RIGHT.trim_start_matches("BigCodeBench/");
    let exchanges = lines(&out.join(format!("agents/{number}-0/exchanges.jsonl")));
    assert!(exchanges.len() >= 2, "{agent}: {exchanges:?}");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert!(
        manifest["identity"]["agent"]
            .as_str()
            .is_some_and(|a| a.starts_with(agent)),
        "{agent}: {manifest}"
    );
    for (path, bytes) in files(&out) {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "{agent}: the key is in {}",
            path.display()
        );
    }
}

#[test]
fn codex_solves_a_bigcodebench_task() {
    writes_one_bigcodebench_solution_right_and_another_wrong("codex");
}

#[test]
fn claude_code_solves_a_bigcodebench_task() {
    writes_one_bigcodebench_solution_right_and_another_wrong("claude-code");
}

#[test]
fn mini_swe_agent_solves_a_bigcodebench_task() {
    writes_one_bigcodebench_solution_right_and_another_wrong("mini-swe-agent");
}

/// `assay run pybench --agent codex` on task 7 with `rest`, the model answering as `reply`
/// does; the task's record.
fn pybench_record(reply: impl Fn(&Value) -> Reply + Send + Sync + 'static, rest: &[&str]) -> Value {
    pybench_env();
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, reply);
    let out = dir.path().join("run");
    let data = pybench_data().display().to_string();
    let done = assay_command(dir.path())
        .args([
            "run",
            "pybench",
            "--agent",
            "codex",
            "--model",
            "openai:scripted",
        ])
        .args([
            "--base-url",
            &server.openai_base(),
            "--data",
            &data,
            "--tasks",
            "7",
        ])
        .args(rest)
        .arg("--out")
        .arg(&out)
        .env("OPENAI_API_KEY", KEY)
        .output()
        .expect("assay runs");
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    lines(&out.join("results.jsonl")).remove(0)
}

/// A model that never stops asking for commands.
fn runaway(body: &Value) -> Reply {
    let again: Vec<Step> = (0..100).map(|_| Step::Shell("echo again".into())).collect();
    scripted(body, &again)
}

#[test]
fn a_runaway_agent_is_ended_by_its_request_budget() {
    // Codex has no turn limit of its own: the gateway's is the bound. The model never stops
    // asking for commands.
    let record = pybench_record(runaway, &["--max-turns", "3"]);
    assert_eq!(record["end"], "max_turns", "{record}");
    assert_eq!(record["turns"], 3, "{record}");
    assert_eq!(record["status"], "fail", "{record}");
}

#[test]
fn a_runaway_agent_is_ended_by_its_token_budget() {
    // Each scripted reply counts 120 tokens: past 200, the third request is refused and the
    // agent ended.
    let record = pybench_record(runaway, &["--agent-tokens", "200"]);
    assert_eq!(record["end"], "agent_ended", "{record}");
    assert!(
        record["end_reason"]
            .as_str()
            .is_some_and(|r| r.contains("its token budget is spent")),
        "{record}"
    );
    assert_eq!(record["turns"], 2, "{record}");
    assert_eq!(record["tokens"]["prompt_tokens"], 200, "{record}");
}

#[test]
fn an_agent_past_its_time_is_ended_and_judged() {
    let record = pybench_record(
        |body| scripted(body, &[Step::Shell("sleep 120".into())]),
        &["--agent-timeout", "5"],
    );
    assert_eq!(record["end"], "agent_ended", "{record}");
    assert!(
        record["end_reason"]
            .as_str()
            .is_some_and(|r| r.contains("wall-clock limit of 5 s")),
        "{record}"
    );
    assert_eq!(record["status"], "fail", "{record}");
    assert!(record["seconds"].as_f64().unwrap() < 30.0, "{record}");
}

/// Processes whose command line carries `mark`.
fn processes_with(mark: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(mark) {
            found.push(format!("{name}: {cmdline}"));
        }
    }
    found
}

#[test]
fn a_run_killed_mid_episode_keeps_what_finished_and_leaves_no_agent_running() {
    pybench_env();
    let dir = tempfile::tempdir().unwrap();
    // Put together at run time: only the agent's command carries the whole name.
    let mark = format!("assay-agent-{}-sleeper", std::process::id());
    let (head, tail) = mark.split_at(6);
    let resumed = Arc::new(AtomicBool::new(false));
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, {
        let resumed = resumed.clone();
        let sleeper = format!("X={head}; exec -a \"${{X}}{tail}\" sleep 300");
        move |body| {
            if let Some(reply) = solve_3(body, "") {
                reply
            } else if resumed.load(Ordering::SeqCst) {
                scripted(body, &[Step::Answer("Finished: 48 38 32 26 23 15 10 2 1")])
            } else {
                scripted(body, &[Step::Shell(sleeper.clone())])
            }
        }
    });
    let data = pybench_data().display().to_string();
    let base = server.openai_base();
    let command = || {
        let mut command = assay_command(dir.path());
        command
            .args([
                "run",
                "pybench",
                "--agent",
                "codex",
                "--model",
                "openai:scripted",
            ])
            .args([
                "--base-url",
                &base,
                "--data",
                &data,
                "--tasks",
                "3,7",
                "--out",
                "run",
            ])
            .env("OPENAI_API_KEY", KEY);
        command
    };
    let mut child = command()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let results = dir.path().join("run/results.jsonl");
    let deadline = Instant::now() + Duration::from_secs(120);
    let finished_3 = || std::fs::read_to_string(&results).is_ok_and(|t| t.contains("PyBench/3"));
    while !finished_3() || processes_with(&mark).is_empty() {
        assert!(
            Instant::now() < deadline,
            "task 3 never finished with task 7's agent asleep"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap(); // SIGKILL: assay gets no chance to clean up
    child.wait().unwrap();
    // The agent goes with it: its sandbox dies with the engine's worker.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with(&mark).is_empty() {
        assert!(
            Instant::now() < deadline,
            "left running: {:?}",
            processes_with(&mark)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let asked_for_3 = |server: &MockServer| {
        server
            .requests_to(Route::Chat)
            .iter()
            .filter(|r| r.body.to_string().contains("./output/3.csv"))
            .count()
    };
    let before = asked_for_3(&server);
    resumed.store(true, Ordering::SeqCst);
    let again = command().output().unwrap();
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    assert!(stderr.contains("resuming"), "{stderr}");
    assert_eq!(asked_for_3(&server), before, "task 3's episode ran again");
    let statuses = task_statuses(&results);
    assert_eq!(
        statuses,
        [
            ("PyBench/3".into(), "pass".into()),
            ("PyBench/7".into(), "pass".into())
        ]
    );
}

#[test]
fn agent_runs_merge_judge_report_export_and_show_like_any_run() {
    pybench_env();
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, |body| {
        solve_3(body, "").unwrap_or_else(|| {
            scripted(body, &[Step::Answer("Finished: 48 38 32 26 23 15 10 2 1")])
        })
    });
    let data = pybench_data().display().to_string();
    let base = server.openai_base();
    let ok = |args: &[&str]| {
        let done = assay_command(dir.path())
            .args(args)
            .env("OPENAI_API_KEY", KEY)
            .output()
            .expect("assay runs");
        assert!(
            done.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&done.stderr)
        );
        done
    };
    // Two machines' shards, merged.
    for (shard, out) in [("0/2", "shard-0"), ("1/2", "shard-1")] {
        ok(&[
            "run",
            "pybench",
            "--agent",
            "codex",
            "--model",
            "openai:scripted",
            "--base-url",
            &base,
            "--data",
            &data,
            "--tasks",
            "3,7",
            "--shard",
            shard,
            "--out",
            out,
        ]);
    }
    ok(&["merge", "shard-0", "shard-1", "--out", "merged"]);
    let merged = dir.path().join("merged");
    let statuses = task_statuses(&merged.join("results.jsonl"));
    assert_eq!(
        statuses,
        [
            ("PyBench/3".into(), "pass".into()),
            ("PyBench/7".into(), "pass".into())
        ]
    );
    let report = ok(&["report", "--json", "merged"]);
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    assert!(report.to_string().contains("merged"), "{report}");
    let export = ok(&["export", "merged", "--to", "inspect", "--out", "-"]);
    let log: Value = serde_json::from_slice(&export.stdout).unwrap();
    assert_eq!(log["samples"].as_array().unwrap().len(), 2);
    // The LLM judge reads the agent's episodes in upstream's form, beside a reference run's.
    let judge = MockServer::start_on_thread();
    judge.respond_with(Route::Chat, |_| {
        let verdict = json!({"Pass": {"Agent1": "Pass", "Agent2": "Pass"},
                             "Decision": {"Agent1": 1, "Agent2": 1}});
        Reply::chat(&[&format!("Both solved it.\n```\n{verdict}\n```")])
    });
    let reference = format!(
        "replay:{}",
        pybench_data().join("trajectory.jsonl").display()
    );
    ok(&[
        "judge",
        "pybench",
        "merged",
        "--judge",
        "openai:judge-model",
        "--base-url",
        &judge.openai_base(),
        "--reference",
        &reference,
    ]);
    let asked = judge.requests_to(Route::Chat);
    assert!(
        asked
            .iter()
            .any(|r| r.body.to_string().contains("Code Interpreter Message")
                && r.body.to_string().contains("exec_command")),
        "the judge never saw the agent's episode"
    );
    let judged = lines(&merged.join("judgements.jsonl"));
    assert!(!judged.is_empty());
    // The viewer shows the agent's turns: its reply with the tool call, what the tool
    // printed, its answer.
    let view = common::viewer::Server::start(dir.path(), &[&merged]);
    let sample = view.json("/api/runs/0/samples/3");
    assert_eq!(sample["record"]["end"], "answered", "{sample}");
    let shown = sample.to_string();
    for part in [
        "exec_command",
        "Code Interpreter Message",
        "rows",
        "Finished: saved",
    ] {
        assert!(shown.contains(part), "{part}: {sample}");
    }
}

#[test]
fn a_users_own_declaration_is_installed_and_checked_and_a_bad_one_named() {
    let dir = tempfile::tempdir().unwrap();
    // Their own agent: mini-swe-agent under another name, limited to 5 steps of its own.
    let built_in = include_str!("../../assay-coding-agents/agents/mini-swe-agent.toml");
    let mine = built_in
        .replace("name = \"mini-swe-agent\"", "name = \"my-mini\"")
        .replace("agent.step_limit={max_turns}", "agent.step_limit=5");
    std::fs::write(dir.path().join("my-mini.toml"), mine).unwrap();
    let out = assay_command(dir.path())
        .args(["agents", "check", "my-mini.toml", "--profile", "test"])
        .output()
        .expect("assay runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("my-mini: 2 model requests"), "{stdout}");
    // A pin that is not one is refused before anything is installed, by file, line and field.
    let bad = built_in.replace("mini-swe-agent==2.4.6", "mini-swe-agent>=2");
    std::fs::write(dir.path().join("bad.toml"), bad).unwrap();
    let out = assay_command(dir.path())
        .args(["agents", "install", "bad.toml"])
        .output()
        .expect("assay runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    let line = built_in
        .lines()
        .position(|l| l.starts_with("pypi"))
        .unwrap()
        + 1;
    assert!(
        stderr.contains(&format!(
            "bad.toml:{line}: pypi: \"mini-swe-agent>=2\" is not `name==version`"
        )),
        "{stderr}"
    );
}
