//! `assay run pybench` with a model behind a real HTTP server on loopback: upstream's requests
//! (system prompt, the [INFO] message, the query, its sampling parameters), the observation
//! sent back, both protocols, generation.jsonl, and a model that fails: infra, exit 1, then a
//! rerun that asks only for what is missing.

mod common;
#[path = "../../assay-models/tests/mock/mod.rs"]
mod mock;

use std::path::Path;
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

// Task 3 dedups a CSV into ./output/3.csv; task 7's check wants the region counts in the
// final answer.
use common::PYBENCH_DEDUP as DEDUP;
use common::{
    assay_command, lines, pybench_data, pybench_env, query, read_json, run_pybench, task_statuses,
    text,
};
use mock::{MockServer, Reply, Route};
use serde_json::{json, Value};

const KEY: &str = "sk-pybench-canary-77";

fn assay(args: &[&str], dir: &Path) -> Output {
    pybench_env();
    assay_command(dir)
        .args(args)
        .env("OPENAI_API_KEY", KEY)
        .output()
        .expect("run assay")
}

/// `assay run pybench --model openai:mock` against `server` on the shared data, for `tasks`,
/// into `out`, with `rest`.
fn run_mock(server: &MockServer, tasks: &str, out: &Path, rest: &[&str], dir: &Path) -> Output {
    let key = ("OPENAI_API_KEY", KEY);
    run_pybench(
        "openai:mock",
        &server.openai_base(),
        tasks,
        out,
        rest,
        key,
        dir,
    )
}

#[test]
fn a_model_drives_episodes_through_markdown_replies() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, |body| {
        let turns = body["messages"].as_array().unwrap().len();
        let reply = match (query(body).contains("./output/3.csv"), turns) {
            (true, 3) => format!("Analyse: dedup\nAction:\n```python\n{DEDUP}\n```"),
            (true, _) => "Finished: saved to ./output/3.csv".to_string(),
            (false, _) => "Finished: 48 38 32 26 23 15 10 2 1".to_string(),
        };
        Reply::chat(&[&reply])
    });
    let out = dir.path().join("run");
    let done = run_mock(&server, "3,7", &out, &["--jobs", "2"], dir.path());
    assert!(done.status.success(), "{}", text(&done.stderr));
    let requests = server.requests_to(Route::Chat);
    assert_eq!(requests.len(), 3, "two replies for task 3, one for task 7");
    let first = requests
        .iter()
        .find(|r| {
            query(&r.body).contains("./output/3.csv")
                && r.body["messages"].as_array().unwrap().len() == 3
        })
        .expect("task 3's first request");
    let body = &first.body;
    assert_eq!(body["messages"][0]["role"], "system");
    assert!(body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .starts_with("You are an AI Agent"));
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "[INFO]The data is uploaded to ./data/Week 40 - US Christmas Tree Sales - 2010 to 2016.csv"})
    );
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["top_p"], 0.5);
    assert_eq!(body["max_tokens"], 1000);
    assert_eq!(body["frequency_penalty"], 1.02);
    assert!(body.get("tools").is_none());
    let second = requests
        .iter()
        .find(|r| r.body["messages"].as_array().unwrap().len() == 5)
        .expect("task 3's second request");
    let observation = second.body["messages"][4]["content"].as_str().unwrap();
    assert!(
        observation.starts_with("[INFO]This is a Code Interpreter Message:\nrows "),
        "{observation}"
    );

    let records = lines(&out.join("results.jsonl"));
    let statuses = task_statuses(&out.join("results.jsonl"));
    assert_eq!(
        statuses,
        [
            ("PyBench/3".into(), "pass".into()),
            ("PyBench/7".into(), "pass".into())
        ]
    );
    assert_eq!(records[0]["turns"], 2);
    assert!(out.join("tasks/3/output/3.csv").is_file());
    let generation = lines(&out.join("generation.jsonl"));
    assert_eq!(generation.len(), 3);
    assert!(generation
        .iter()
        .all(|g| g["error"].is_null() && g["attempts"] == 1));
    let trajectories = lines(&out.join("trajectory.jsonl"));
    assert_eq!(trajectories[0]["messages"].as_array().unwrap().len(), 6);
    assert_eq!(trajectories[0]["index"], "3");
    // The key went nowhere but the server.
    for file in [
        "results.jsonl",
        "generation.jsonl",
        "trajectory.jsonl",
        "manifest.json",
    ] {
        let content = std::fs::read_to_string(out.join(file)).unwrap();
        assert!(!content.contains(KEY), "{file} holds the key");
    }
}

#[test]
fn the_tools_protocol_calls_a_python_tool_and_reads_as_upstreams_trajectory() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, |body| {
        let messages = body["messages"].as_array().unwrap();
        if messages.len() == 3 {
            Reply::ok(json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Dedup first.",
                "tool_calls": [{"id": "call_9", "type": "function",
                                "function": {"name": "python", "arguments": json!({"code": DEDUP}).to_string()}}]}}]}))
        } else {
            Reply::chat(&["Finished: done"])
        }
    });
    let out = dir.path().join("tools");
    let done = run_mock(&server, "3", &out, &["--protocol", "tools"], dir.path());
    assert!(done.status.success(), "{}", text(&done.stderr));
    let requests = server.requests_to(Route::Chat);
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["tools"][0]["function"]["name"], "python");
    assert!(requests[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("`python` tool"));
    let result = &requests[1].body["messages"][4];
    assert_eq!(result["role"], "tool");
    assert_eq!(result["tool_call_id"], "call_9");
    assert!(
        result["content"].as_str().unwrap().starts_with("rows "),
        "{result}"
    );
    let trajectory = &lines(&out.join("trajectory.jsonl"))[0];
    let reply = trajectory["messages"][3]["content"].as_str().unwrap();
    assert!(
        reply.starts_with("Dedup first.\n```python\nimport pandas"),
        "{reply}"
    );
    assert!(trajectory["messages"][4]["content"]
        .as_str()
        .unwrap()
        .starts_with("[INFO]This is a Code Interpreter Message:\nrows "));
    assert_eq!(lines(&out.join("results.jsonl"))[0]["status"], "pass");
}

#[test]
fn a_failing_model_leaves_infra_and_a_rerun_asks_only_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    let healthy = Arc::new(AtomicBool::new(false));
    let flag = healthy.clone();
    server.respond_with(Route::Chat, move |body| {
        if query(body).contains("./output/3.csv") && !flag.load(Ordering::SeqCst) {
            Reply::openai_error(503, "server_error", "overloaded", "try later")
        } else {
            Reply::chat(&["Finished: 48 38 32 26 23 15 10 2 1"])
        }
    });
    let out = dir.path().join("flaky");
    let retries = ["--retries", "0"];
    let first = run_mock(&server, "3,7", &out, &retries, dir.path());
    assert_eq!(first.status.code(), Some(1), "{}", text(&first.stderr));
    assert!(
        text(&first.stderr).contains("rerun the same command"),
        "{}",
        text(&first.stderr)
    );
    let records = lines(&out.join("results.jsonl"));
    let three = records
        .iter()
        .find(|r| r["task_id"] == "PyBench/3")
        .unwrap();
    assert_eq!(
        (three["status"].as_str(), three["end"].as_str()),
        (Some("infra"), Some("model_failed"))
    );
    let asked = server.requests_to(Route::Chat).len();
    healthy.store(true, Ordering::SeqCst);
    let second = run_mock(&server, "3,7", &out, &retries, dir.path());
    assert!(second.status.success(), "{}", text(&second.stderr));
    let asked_again = server.requests_to(Route::Chat).len() - asked;
    assert_eq!(asked_again, 1, "only task 3 is asked again");
    let records = lines(&out.join("results.jsonl"));
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["end"], "answered");
}

/// A conversation that outgrows the model's window: the server refuses the next request
/// (llama-cpp-python's HTTP 500 here), the episode ends there, as upstream's loop does, and is
/// judged on what it produced, quoting the server; not `infra`, not asked again.
#[test]
fn a_conversation_outgrowing_the_window_ends_the_episode_and_is_judged() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, |body| {
        if body["messages"].as_array().unwrap().len() == 3 {
            Reply::chat(&[&format!("Analyse: dedup\nAction:\n```python\n{DEDUP}\n```")])
        } else {
            Reply::openai_error(
                500,
                "internal_server_error",
                "",
                "could not broadcast input array from shape (49152,) into shape (0,)",
            )
        }
    });
    let out = dir.path().join("short");
    let first = run_mock(&server, "3", &out, &["--retries", "3"], dir.path());
    let stdout = text(&first.stdout);
    assert!(first.status.success(), "{stdout}\n{}", text(&first.stderr));
    assert_eq!(
        server.requests_to(Route::Chat).len(),
        2,
        "refused once, not retried"
    );
    let record = &lines(&out.join("results.jsonl"))[0];
    assert_eq!(record["end"], "context_full");
    // Judged on what it left: task 3's check reads ./output/3.csv, which the first cell wrote.
    assert_eq!(record["status"], "pass", "{record}");
    assert_eq!(record["turns"], 1);
    let said = record["end_reason"].as_str().unwrap();
    assert_eq!(
        said,
        "the conversation outgrew the model's context window: HTTP 500: could not broadcast \
         input array from shape (49152,) into shape (0,) (internal_server_error)"
    );
    let summary = read_json(&out.join("summary.json"));
    assert_eq!(summary["context_full"]["PyBench/3"], said);
    assert!(summary["infra"].as_object().unwrap().is_empty());
    assert!(
        stdout.contains("ended at a full context window (1,"),
        "{stdout}"
    );
    assert_eq!(lines(&out.join("trajectory.jsonl")).len(), 1);

    let again = run_mock(&server, "3", &out, &[], dir.path());
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(
        server.requests_to(Route::Chat).len(),
        2,
        "a rerun asks nothing"
    );
}

/// A replay file of our own: each task's first reply sleeps in a cell, then it answers.
fn sleepy_replay(dir: &Path, tasks: &[&str]) -> std::path::PathBuf {
    let path = dir.join("sleepy.jsonl");
    let lines: Vec<String> = tasks
        .iter()
        .map(|t| {
            json!({"index": t, "messages": [
                {"role": "assistant", "content": "Action:\n```python\nimport time\ntime.sleep(1.5)\nprint('slept')\n```"},
                {"role": "assistant", "content": "Finished: 48 38 32 26 23 15 10 2 1"},
            ]})
            .to_string()
        })
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

#[test]
fn a_run_killed_mid_way_resumes_and_ends_as_one_run_would() {
    use std::time::Instant;
    let dir = tempfile::tempdir().unwrap();
    let tasks = ["2", "3", "4", "5", "7"];
    let replay = format!("replay:{}", sleepy_replay(dir.path(), &tasks).display());
    let data = pybench_data().display().to_string();
    let out = dir.path().join("killed");
    let out_arg = out.display().to_string();
    let list = tasks.join(",");
    let args = [
        "run",
        "pybench",
        "--model",
        &replay,
        "--data",
        &data,
        "--tasks",
        &list,
        "--jobs",
        "1",
        "--max-jobs",
        "1",
        "--out",
        &out_arg,
    ];
    pybench_env();
    let mut child = assay_command(dir.path())
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let results = out.join("results.jsonl");
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::fs::read_to_string(&results).map_or(0, |t| t.lines().count()) == 0 {
        assert!(Instant::now() < deadline, "no episode ended within 120 s");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    child.wait().unwrap();
    let before = lines(&results).len();
    assert!(
        before < tasks.len(),
        "killed before the end ({before} recorded)"
    );
    let done = assay(&args, dir.path());
    assert!(done.status.success(), "{}", text(&done.stderr));
    assert!(
        text(&done.stderr).contains("resuming"),
        "{}",
        text(&done.stderr)
    );
    let records = lines(&results);
    let ids: Vec<&str> = records
        .iter()
        .map(|r| r["task_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, tasks.map(|t| format!("PyBench/{t}")));
    let trajectories = lines(&out.join("trajectory.jsonl"));
    let indices: Vec<&str> = trajectories
        .iter()
        .map(|t| t["index"].as_str().unwrap())
        .collect();
    assert_eq!(indices, tasks);
    for t in &trajectories {
        assert_eq!(
            t["messages"][4]["content"],
            "[INFO]This is a Code Interpreter Message:\nslept\n"
        );
    }
    let seven = records
        .iter()
        .find(|r| r["task_id"] == "PyBench/7")
        .unwrap();
    assert_eq!(seven["status"], "pass");
}

#[test]
fn episodes_cannot_read_the_key_or_the_tests_or_write_outside() {
    let dir = tempfile::tempdir().unwrap();
    let data = pybench_data();
    let tests = data.join("data/unit_test/tests.py");
    let probe = format!(
        "import os\nprint('key', os.environ.get('OPENAI_API_KEY'))\nprint('tests', os.path.exists({tests:?}))\n\
         print('keys', [k for k in os.environ if 'KEY' in k])\n\
         try:\n    open({outside:?}, 'w').write('x')\n    print('wrote outside')\nexcept OSError as e:\n    print('refused', type(e).__name__)",
        tests = tests.display().to_string(),
        outside = dir.path().join("escaped.txt").display().to_string(),
    );
    let server = MockServer::start_on_thread();
    let code = probe.clone();
    server.respond_with(Route::Chat, move |body| {
        if body["messages"].as_array().unwrap().len() == 3 {
            Reply::chat(&[&format!("Action:\n```python\n{code}\n```")])
        } else {
            Reply::chat(&["Finished: 48 38 32 26 23 15 10 2 1"])
        }
    });
    let out = dir.path().join("hostile");
    let done = run_mock(&server, "7", &out, &[], dir.path());
    assert!(done.status.success(), "{}", text(&done.stderr));
    let trajectory = &lines(&out.join("trajectory.jsonl"))[0];
    let seen = trajectory["messages"][4]["content"].as_str().unwrap();
    assert!(
        seen.contains("key None\ntests False\nkeys []\nrefused"),
        "{seen}"
    );
    assert!(!dir.path().join("escaped.txt").exists());
}

#[test]
fn audio_tools_work_in_episodes_and_fixed_checks_can_head_the_results() {
    let dir = tempfile::tempdir().unwrap();
    // pydub needs ffmpeg (to write mp3) and ffprobe (to read it back), both on the jobs' PATH.
    let audio = "import numpy as np, wave\nfrom pydub import AudioSegment\n\
        tone = (np.sin(np.arange(8000) / 8000 * 440 * 2 * np.pi) * 20000).astype(np.int16)\n\
        w = wave.open('./output/tone.wav', 'wb'); w.setnchannels(1); w.setsampwidth(2)\n\
        w.setframerate(8000); w.writeframes(tone.tobytes()); w.close()\n\
        AudioSegment.from_wav('./output/tone.wav').export('./output/tone.mp3', format='mp3')\n\
        print('mp3 ms', round(len(AudioSegment.from_mp3('./output/tone.mp3')) / 100) * 100)";
    let replay = dir.path().join("audio.jsonl");
    std::fs::write(
        &replay,
        json!({"index": "63", "messages": [
            {"role": "assistant", "content": format!("```python\n{audio}\n```")},
            {"role": "assistant", "content": "Finished: no chart drawn"},
        ]})
        .to_string()
            + "\n",
    )
    .unwrap();
    let data = pybench_data().display().to_string();
    let out = dir.path().join("fixed");
    let done = assay(
        &[
            "run",
            "pybench",
            "--model",
            &format!("replay:{}", replay.display()),
            "--data",
            &data,
            "--tasks",
            "63",
            "--checks",
            "fixed",
            "--out",
            &out.display().to_string(),
        ],
        dir.path(),
    );
    assert!(done.status.success(), "{}", text(&done.stderr));
    let trajectory = &lines(&out.join("trajectory.jsonl"))[0];
    let seen = trajectory["messages"][4]["content"].as_str().unwrap();
    assert!(seen.ends_with("mp3 ms 1000\n"), "{seen}");
    assert!(out.join("tasks/63/output/tone.mp3").is_file());
    // Upstream's test 63 never asserts (always passes); the fixed one wants ./output/63.png.
    let record = &lines(&out.join("results.jsonl"))[0];
    assert_eq!(record["verdicts"]["faithful"]["status"], "pass");
    assert_eq!(record["verdicts"]["fixed"]["status"], "fail");
    assert_eq!(record["status"], "fail", "the fixed verdict heads");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["checks"], "fixed");
}

#[test]
fn a_check_reading_a_task_that_runs_again_is_judged_again() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    let healthy = Arc::new(AtomicBool::new(false));
    let flag = healthy.clone();
    // Task 67 draws ./output/67.png; upstream's test 68 checks that file, not 68's own.
    server.respond_with(Route::Chat, move |body| {
        let turns = body["messages"].as_array().unwrap().len();
        match (query(body).contains("./output/67.png"), turns) {
            (true, _) if !flag.load(Ordering::SeqCst) => {
                Reply::openai_error(503, "server_error", "overloaded", "try later")
            }
            (true, 3) => Reply::chat(&["```python\nimport matplotlib.pyplot as plt\nplt.scatter([1], [2])\nplt.savefig('./output/67.png')\n```"]),
            _ => Reply::chat(&["Finished: drawn"]),
        }
    });
    let out = dir.path().join("pair");
    let retries = ["--retries", "0"];
    let first = run_mock(&server, "67,68", &out, &retries, dir.path());
    assert_eq!(first.status.code(), Some(1), "{}", text(&first.stderr));
    let records = lines(&out.join("results.jsonl"));
    assert_eq!(
        records[1]["verdicts"]["faithful"]["status"], "fail",
        "no 67.png yet"
    );
    healthy.store(true, Ordering::SeqCst);
    let second = run_mock(&server, "67,68", &out, &retries, dir.path());
    assert!(second.status.success(), "{}", text(&second.stderr));
    let records = lines(&out.join("results.jsonl"));
    assert_eq!(records[0]["verdicts"]["faithful"]["status"], "pass");
    assert_eq!(
        records[1]["verdicts"]["faithful"]["status"], "pass",
        "68 judged again on 67's new output"
    );
    assert_eq!(
        records[1]["verdicts"]["fixed"]["status"], "fail",
        "68 drew nothing"
    );
    let asked_for_68 = server
        .requests_to(Route::Chat)
        .iter()
        .filter(|r| query(&r.body).contains("./output/68.png"))
        .count();
    assert_eq!(asked_for_68, 1, "68's episode is not run again");
}

#[test]
fn the_agents_tokens_are_priced_and_its_requests_paced() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    // One reply, without code: 10 prompt and 5 completion tokens (the mock's usage).
    server.respond_with(Route::Chat, |_| {
        Reply::chat(&["Finished: 48 38 32 26 23 15 10 2 1"])
    });
    let out = dir.path().join("run");
    let priced = [
        "--price-in",
        "1000",
        "--price-out",
        "2000",
        "--rpm",
        "600",
        "--tpm",
        "100000",
    ];
    let done = run_mock(&server, "7", &out, &priced, dir.path());
    assert!(done.status.success(), "{}", text(&done.stderr));
    let stdout = text(&done.stdout);
    assert!(stdout.contains("tokens 10 in, 5 out, $0.0200;"), "{stdout}");
    let read = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(out.join(name)).unwrap()).unwrap()
    };
    let summary = read("summary.json");
    assert_eq!(
        summary["tokens"],
        json!({"prompt_tokens": 10, "completion_tokens": 5})
    );
    assert_eq!(summary["cost_usd"].as_f64(), Some(0.02));
    let access = &read("manifest.json")["model_access"];
    assert_eq!(access["requests_per_minute"], 600);
    assert_eq!(access["tokens_per_minute"], 100_000);
    assert_eq!(access["prices"]["completion_usd_per_million"], 2000.0);

    // A rerun at other prices asks nothing again; the summary costs what it ran at them.
    let repriced = ["--price-in", "0", "--price-out", "1000"];
    let again = run_mock(&server, "7", &out, &repriced, dir.path());
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(server.requests_to(Route::Chat).len(), 1);
    assert_eq!(read("summary.json")["cost_usd"].as_f64(), Some(0.005));
    assert_eq!(
        read("manifest.json")["model_access"]["prices"]["prompt_usd_per_million"],
        0.0
    );

    // Three episodes at once under --rpm 60: their requests reach the server a second apart.
    let paced = dir.path().join("paced");
    let done = run_mock(&server, "3,7,67", &paced, &["--rpm", "60"], dir.path());
    assert!(done.status.success(), "{}", text(&done.stderr));
    let received: Vec<_> = server.requests_to(Route::Chat)[1..]
        .iter()
        .map(|r| r.received)
        .collect();
    assert_eq!(received.len(), 3);
    for pair in received.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(gap >= Duration::from_millis(900), "{gap:?} apart");
    }
}
