//! `assay serve`, as its clients use it: a real server process on loopback, real HTTP, every
//! route. BigCodeBench verdicts (the same as `assay eval` gives the same answers), batches
//! streamed as they finish, unittest and script jobs, sessions, the NeMo Gym and
//! SandboxFusion drop-ins (the latter through the real `sandbox-fusion` client from PyPI),
//! the secret, the bounded queue, a client that goes away, and hostile code through every
//! route leaving the server and other requests unaffected.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use common::service::{http, json_of, Server};
use common::{assay_command, hard, lines};
use serde_json::{json, Value};

/// `assay serve --port 0 --profile test --jobs 2 ARGS` in `dir`, with `env` set, once it says
/// where it listens.
fn serve(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
    let args = [&["--profile", "test", "--jobs", "2"][..], args].concat();
    Server::start(dir, &args, env)
}

/// POSTs `body` to `path`, expecting `status`; its JSON.
fn post(server: &Server, path: &str, body: Value, status: u16) -> Value {
    let (got, _, raw) = http(server.addr(), "POST", path, &[], Some(&body));
    assert_eq!(got, status, "{path}: {}", String::from_utf8_lossy(&raw));
    json_of(&raw)
}

fn get(server: &Server, path: &str) -> (u16, Vec<u8>) {
    let (status, _, raw) = http(server.addr(), "GET", path, &[], None);
    (status, raw)
}

fn task(id: u32) -> assay_tasks::bigcodebench::Task {
    hard()
        .get(&format!("BigCodeBench/{id}"))
        .cloned()
        .unwrap_or_else(|| panic!("BigCodeBench/{id} is a Hard task"))
}

/// A wrong answer to task 19 (`task_func(directory)`), fenced as a chat model writes it.
const WRONG_19: &str =
    "Sure:\n```python\nimport os\ndef task_func(directory):\n    return None\n```\n";

#[test]
fn bigcodebench_verdicts_are_eval_s_and_batches_stream_as_they_finish() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[], &[]);
    let t19 = task(19);

    // A reference solution passes; its budget comes from its reference's time here.
    let passed = post(
        &server,
        "/v1/bigcodebench/verify",
        json!({"id": "ref", "task_id": "BigCodeBench/19", "solution": t19.reference_solution()}),
        200,
    );
    assert_eq!(passed["id"], "ref");
    assert_eq!(
        (&passed["status"], &passed["official_status"]),
        (&json!("pass"), &json!("pass"))
    );
    assert_eq!(passed["reward"], 1.0);
    assert_eq!(passed["reference"]["status"], "pass");
    assert!(
        passed["time_limit_seconds"].as_f64().unwrap() >= 60.0,
        "{passed}"
    );
    assert!(passed["tests"].as_array().unwrap().len() >= 5, "{passed}");

    // A raw answer: its thinking set apart, sanitized as generation does, every test judged.
    let answer = format!("<think>```python\nthis is not it\n```</think>{WRONG_19}");
    let failed = post(
        &server,
        "/v1/bigcodebench/verify",
        json!({"task_id": "BigCodeBench/19", "answer": answer, "split": "instruct"}),
        200,
    );
    assert_eq!(
        failed["solution"],
        "import os\ndef task_func(directory):\n    return None"
    );
    assert_eq!(
        (&failed["status"], &failed["reward"]),
        (&json!("fail"), &json!(0.0))
    );
    assert_eq!(failed["split"], "instruct");
    let failing = failed["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["result"] != "pass")
        .count();
    assert!(failing >= 4, "{failed}");
    assert!(!failed["official"]["details"]
        .as_object()
        .unwrap()
        .is_empty());

    // Bad requests say what is wrong.
    let (status, _, raw) = http(
        server.addr(),
        "POST",
        "/v1/bigcodebench/verify",
        &[],
        Some(&json!({"task_id": "BigCodeBench/19", "answer": "x", "solution": "y"})),
    );
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&raw).contains("exactly one of"));
    let unknown = post(
        &server,
        "/v1/bigcodebench/verify",
        json!({"task_id": "BigCodeBench/99999", "solution": "x"}),
        404,
    );
    assert!(unknown["error"]
        .as_str()
        .unwrap()
        .contains("BigCodeBench/99999"));
    let typo = post(
        &server,
        "/v1/bigcodebench/verify",
        json!({"task_id": "BigCodeBench/19", "solutoin": "x"}),
        422,
    );
    assert!(
        typo["error"].as_str().unwrap().contains("solutoin"),
        "{typo}"
    );

    // A batch: each line as its answer finishes, with its id; a bad item in its place.
    let slow = format!(
        "{}\nimport time\n_real = task_func\ndef task_func(directory):\n    time.sleep(4)\n    return _real(directory)\n",
        t19.reference_solution()
    );
    let batch = json!({"requests": [
        {"id": "slow", "task_id": "BigCodeBench/19", "solution": slow},
        {"id": "fast", "task_id": "BigCodeBench/19", "answer": WRONG_19},
        {"id": "bad", "task_id": "BigCodeBench/19"},
    ]});
    let (status, headers, raw) = http(
        server.addr(),
        "POST",
        "/v1/bigcodebench/verify_batch",
        &[],
        Some(&batch),
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&raw));
    assert!(headers
        .iter()
        .any(|(k, v)| k == "content-type" && v == "application/x-ndjson"));
    let results: Vec<Value> = String::from_utf8(raw)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<&str> = results.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[2], "slow", "the slow answer finishes last: {ids:?}");
    let by_id = |id: &str| results.iter().find(|r| r["id"] == id).unwrap();
    assert!(by_id("bad")["error"]
        .as_str()
        .unwrap()
        .contains("exactly one of"));
    assert_eq!(by_id("fast")["status"], "fail");
    assert_eq!(by_id("slow")["status"], "pass");

    // The same answers through `assay eval` give the same verdicts, word for word.
    let t161 = task(161);
    let answers = [
        ("BigCodeBench/19", t19.reference_solution()),
        (
            "BigCodeBench/19",
            "import os\ndef task_func(directory):\n    return None".to_string(),
        ),
        ("BigCodeBench/161", t161.reference_solution()),
        (
            "BigCodeBench/161",
            "def task_func(log_file):\n    raise ValueError('no')\n".to_string(),
        ),
    ];
    let samples: String = answers
        .iter()
        .map(|(id, code)| json!({"task_id": id, "solution": code}).to_string() + "\n")
        .collect();
    std::fs::write(
        dir.path().join("m--bigcodebench-complete--x.jsonl"),
        samples,
    )
    .unwrap();
    let eval = assay_command(dir.path())
        .args([
            "eval",
            "bigcodebench",
            "--samples",
            "m--bigcodebench-complete--x.jsonl",
            "--tasks",
            "BigCodeBench/19,BigCodeBench/161",
            "--out",
            "run",
            "--profile",
            "test",
            "--jobs",
            "2",
        ])
        .output()
        .unwrap();
    assert!(
        eval.status.success(),
        "{}",
        String::from_utf8_lossy(&eval.stderr)
    );
    let mut records = lines(&dir.path().join("run/results.jsonl"));
    records.sort_by_key(|r| r["index"].as_u64());
    for ((id, code), record) in answers.iter().zip(&records) {
        let served = post(
            &server,
            "/v1/bigcodebench/verify",
            json!({"task_id": id, "solution": code}),
            200,
        );
        for field in ["status", "official", "program_digest", "reason"] {
            assert_eq!(served[field], record[field], "{id} {field}");
        }
    }
}

#[test]
fn unittest_and_script_jobs_and_their_limits() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--max-timeout", "5", "--max-body", "1"], &[]);
    let test = "import unittest\nclass TestCases(unittest.TestCase):\n    def test_data(self):\n        self.assertEqual(double(int(open('n.txt').read())), 42)\n    def test_negative(self):\n        self.assertEqual(double(-1), -2)\n";
    let files = json!({"n.txt": STANDARD.encode("21")});
    let passed = post(
        &server,
        "/v1/unittest",
        json!({"id": 1, "code": "def double(x):\n    return 2 * x\n", "test": test, "files": files}),
        200,
    );
    assert_eq!(
        (&passed["status"], &passed["official_status"]),
        (&json!("pass"), &json!("pass"))
    );
    assert_eq!(passed["tests"].as_array().unwrap().len(), 2);
    let failed = post(
        &server,
        "/v1/unittest",
        json!({"code": "def double(x):\n    return abs(2 * x)\n", "test": test, "files": files, "timeout": 100}),
        200,
    );
    assert_eq!(failed["status"], "fail");
    assert!(failed["official"]["details"]["test_negative"]
        .as_str()
        .unwrap()
        .contains("AssertionError"));
    assert_eq!(failed["time_limit_seconds"], 5.0, "held to --max-timeout");
    // A test that skips itself past the code is no pass here (integrity).
    let gamed = post(
        &server,
        "/v1/unittest",
        json!({"code": "import unittest\ndef double(x):\n    raise unittest.SkipTest('later')\n", "test": test, "files": files}),
        200,
    );
    assert_eq!(gamed["status"], "fail", "{gamed}");
    assert!(!gamed["integrity"].as_array().unwrap().is_empty());

    let ran = post(
        &server,
        "/v1/run",
        json!({
            "code": "import sys\ndata = open('in.txt').read()\nopen('out/o.txt', 'w').write(data + sys.stdin.read())\nprint(sys.argv[1:])",
            "stdin": " world",
            "argv": ["-v"],
            "files": {"in.txt": STANDARD.encode("hello"), "out/keep": ""},
            "fetch_files": ["out/o.txt"],
        }),
        200,
    );
    assert_eq!(ran["status"], "pass", "{ran}");
    assert_eq!(ran["exit_code"], 0);
    assert_eq!(ran["stdout"]["text"], "['-v']\n");
    assert_eq!(
        ran["files"],
        json!({"out/o.txt": STANDARD.encode("hello world")})
    );
    let slow = post(
        &server,
        "/v1/run",
        json!({"code": "import time\ntime.sleep(60)", "timeout": 30}),
        200,
    );
    assert_eq!(slow["status"], "timeout");
    assert!(slow["wall_seconds"].as_f64().unwrap() < 15.0, "{slow}");
    let exited = post(
        &server,
        "/v1/run",
        json!({"code": "import sys\nsys.exit(3)"}),
        200,
    );
    assert_eq!(
        (&exited["status"], &exited["exit_code"]),
        (&json!("error"), &json!(3))
    );
    let bad = post(
        &server,
        "/v1/run",
        json!({"code": "1", "files": {"x": "not base64!"}}),
        400,
    );
    assert!(
        bad["error"].as_str().unwrap().contains("files[\"x\"]"),
        "{bad}"
    );
    // Past --max-body (1 MiB), a body is refused unread.
    let big = post(
        &server,
        "/v1/run",
        json!({"code": "#".repeat(2 << 20)}),
        413,
    );
    assert!(big["error"].is_string(), "{big}");
    // A body not said to be JSON is refused, and the error says what header it needs.
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    let body = json!({"code": "1"}).to_string();
    write!(
        stream,
        "POST /v1/run HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: text/plain\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut stream, &mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 415 "), "{answer}");
    assert!(
        answer.ends_with(r#"{"error":"Expected request with `Content-Type: application/json`"}"#),
        "{answer}"
    );

    // What /metrics counts.
    let (status, metrics) = get(&server, "/metrics");
    assert_eq!(status, 200);
    let metrics = String::from_utf8(metrics).unwrap();
    for line in [
        "assay_requests_total{route=\"/v1/unittest\",status=\"200\"} 3",
        "assay_requests_total{route=\"/v1/run\",status=\"400\"} 1",
        "assay_verdicts_total{kind=\"run\",status=\"timeout\"} 1",
        "assay_job_seconds_count{kind=\"unittest\"} 3",
        "assay_jobs_running 0",
        "assay_queue_waiting 0",
    ] {
        assert!(metrics.contains(line), "{line} in:\n{metrics}");
    }
}

/// A Python venv with `packages` from PyPI, made once per test process under the build's
/// scratch space.
// Made and run as a user makes and runs one, with the test's environment (pip needs PATH,
// proxies): not a child of assay's.
#[allow(clippy::disallowed_methods)]
fn venv(name: &str, packages: &[&str]) -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let python = root.join("bin/python");
    if root.join("complete").exists() {
        return python;
    }
    let base = assay_pyenv::Interpreter::discover(None)
        .expect("a Python 3.11")
        .executable;
    let _ = std::fs::remove_dir_all(&root);
    let made = Command::new(&base)
        .arg("-m")
        .arg("venv")
        .arg(&root)
        .status()
        .unwrap();
    assert!(made.success(), "python -m venv {}", root.display());
    let installed = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(packages)
        .status()
        .unwrap();
    assert!(
        installed.success(),
        "pip install {packages:?} (PyPI must be reachable)"
    );
    std::fs::write(root.join("complete"), "").unwrap();
    python
}

#[test]
// The client runs as a user runs it (see `venv`).
#[allow(clippy::disallowed_methods)]
fn sandbox_fusion_clients_work_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[], &[]);
    let python = venv("sandbox-fusion-client", &["sandbox-fusion==0.3.7"]);
    // The PyPI client, as verl's and users' code calls it: the endpoint its only change.
    let script = r#"
import base64, json, sys
from sandbox_fusion import RunCodeRequest, run_code, set_sandbox_endpoint
set_sandbox_endpoint(sys.argv[1])
ok = run_code(RunCodeRequest(code="import sys\nprint(open('in.txt').read() + sys.stdin.read())\nopen('o.txt','w').write('out')",
    language="python", stdin="!", files={"in.txt": base64.b64encode(b"hi").decode()}, fetch_files=["o.txt"]))
fail = run_code(RunCodeRequest(code="print(1/0)", language="python"))
slow = run_code(RunCodeRequest(code="import time\ntime.sleep(30)", language="python", run_timeout=1))
print(json.dumps([r.dict() for r in (ok, fail, slow)], default=str))
"#;
    let out = Command::new(&python)
        .args(["-c", script, &server.url("")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (ok, fail, slow) = (&results[0], &results[1], &results[2]);
    assert_eq!(ok["status"], "Success", "{ok}");
    assert_eq!(ok["run_result"]["stdout"], "hi!\n");
    assert_eq!(ok["run_result"]["return_code"], 0);
    assert_eq!(ok["files"]["o.txt"], STANDARD.encode("out"));
    assert_eq!(fail["status"], "Failed");
    assert_eq!(fail["run_result"]["status"], "Finished");
    assert_eq!(fail["run_result"]["return_code"], 1);
    assert!(fail["run_result"]["stderr"]
        .as_str()
        .unwrap()
        .contains("ZeroDivisionError"));
    assert_eq!(slow["status"], "Failed");
    assert_eq!(slow["run_result"]["status"], "TimeLimitExceeded");

    // verl's reward path builds its payload by hand; the same bytes, the same checks it makes.
    let verl = post(
        &server,
        "/run_code",
        json!({"compile_timeout": 10, "run_timeout": 10, "code": "print(int(input()) * 2)",
               "stdin": "21\n", "memory_limit_MB": 1024, "language": "python",
               "files": {}, "fetch_files": []}),
        200,
    );
    assert_eq!(verl["run_result"]["status"], "Finished");
    assert_eq!(verl["run_result"]["return_code"], 0);
    assert_eq!(
        verl["run_result"]["stdout"].as_str().unwrap().trim_end(),
        "42"
    );
    // tinker-cookbook's SandboxFusionClient: its body, success iff `status == "Success"`.
    let tinker = post(
        &server,
        "/run_code",
        json!({"code": "open('out','w').write(open('in').read())", "language": "python",
               "run_timeout": 5, "files": {"in": STANDARD.encode("x")}}),
        200,
    );
    assert_eq!(tinker["status"], "Success", "{tinker}");
    let (status, raw) = get(&server, "/v1/ping");
    assert_eq!((status, json_of(&raw)), (200, json!("pong")));
    post(
        &server,
        "/run_code",
        json!({"code": "x", "language": "cpp"}),
        422,
    );
}

#[test]
fn nemo_gym_verify_answers_as_gym_s_server_and_never_scores_the_harness() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[], &[]);
    let t19 = task(19);
    // Built as NeMo Gym's simple_agent builds it: the JSONL row (responses_create_params,
    // verifier_metadata and Gym's own keys) with the model's Responses object added.
    let row = |text: &str, task: &assay_tasks::bigcodebench::Task| {
        json!({
            "responses_create_params": {
                "background": null, "include": null, "instructions": null, "max_output_tokens": null,
                "max_tool_calls": null, "metadata": null, "model": null, "parallel_tool_calls": true,
                "previous_response_id": null, "prompt": null, "reasoning": null, "service_tier": null,
                "store": null, "temperature": null, "text": null, "tool_choice": "auto", "tools": [],
                "top_logprobs": null, "top_p": null, "truncation": null, "user": null, "stream": null,
                "input": [{"role": "user", "content": format!("Generate an executable Python function generated from the given prompt.\n\n{}", task.instruct_prompt)}]
            },
            "response": {
                "id": "resp_1", "object": "response", "created_at": 0, "model": "m",
                "parallel_tool_calls": false, "tool_choice": "auto", "tools": [],
                "output": [
                    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "```python\nwrong\n```"}]},
                    {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                     "content": [{"type": "output_text", "text": text, "annotations": []}]}
                ],
                "usage": {"input_tokens": 10, "output_tokens": 20, "total_tokens": 30,
                          "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}
            },
            "verifier_metadata": {"task_id": task.task_id, "test": task.test, "entry_point": task.entry_point,
                                  "code_prompt": task.code_prompt, "split": "hard"},
            "agent_ref": {"type": "responses_api_agents", "name": "bigcodebench_simple_agent"},
            "_ng_task_index": 0, "_ng_rollout_index": 0
        })
    };
    let answer = format!("```python\n{}\n```", t19.reference_solution());
    let body = row(&answer, &t19);
    let passed = post(&server, "/verify", body.clone(), 200);
    assert_eq!(
        (&passed["reward"], &passed["status"]),
        (&json!(1.0), &json!("pass")),
        "{passed}"
    );
    assert_eq!(passed["extracted_model_output"], answer);
    assert!(passed["extracted_model_code"]
        .as_str()
        .unwrap()
        .contains("def task_func"));
    assert_eq!(passed["task_id"], "BigCodeBench/19");
    assert_eq!(passed["mask_sample"], false);
    assert_eq!(passed["assay"]["version"], "v0.1.4");
    for echoed in [
        "responses_create_params",
        "response",
        "verifier_metadata",
        "agent_ref",
    ] {
        assert_eq!(passed[echoed], body[echoed], "{echoed} is echoed");
    }
    let failed = post(&server, "/verify", row(WRONG_19, &t19), 200);
    assert_eq!(
        (&failed["reward"], &failed["status"]),
        (&json!(0.0), &json!("fail"))
    );
    assert!(!failed["details"].as_object().unwrap().is_empty());
    let empty = post(&server, "/verify", row("  ", &t19), 200);
    assert_eq!(
        (&empty["status"], &empty["extracted_model_code"]),
        (&json!("empty_output"), &Value::Null)
    );

    // NeMo's own extraction on request: a bare fence gives no code, as in NeMo.
    let mut nemo = row(&format!("```\n{}\n```", t19.reference_solution()), &t19);
    nemo["verifier_metadata"]["extraction"] = json!("nemo");
    let none = post(&server, "/verify", nemo, 200);
    assert_eq!(
        (&none["status"], &none["reward"]),
        (&json!("no_code_block"), &json!(0.0))
    );

    // A test assay does not have runs as given, under the official limit.
    let mut own = row("```python\ndef task_func(x):\n    return x + 1\n```", &t19);
    own["verifier_metadata"] = json!({"test": "import unittest\nclass TestCases(unittest.TestCase):\n    def test_one(self):\n        self.assertEqual(task_func(1), 2)\n", "entry_point": "task_func", "code_prompt": "def task_func(x):\n"});
    let own = post(&server, "/verify", own, 200);
    assert_eq!(
        (&own["status"], &own["reward"]),
        (&json!("pass"), &json!(1.0)),
        "{own}"
    );

    // The environment lacks scikit-learn: the harness's failure, masked, never a 0 counted.
    let t37 = task(37);
    let masked = post(
        &server,
        "/verify",
        row(
            &format!("```python\n{}\n```", t37.reference_solution()),
            &t37,
        ),
        200,
    );
    assert_eq!(masked["mask_sample"], true, "{masked}");
    assert_eq!(masked["failure_kind"], "assay:infra");
    assert!(
        masked["failure_reason"]
            .as_str()
            .unwrap()
            .contains("sklearn"),
        "{masked}"
    );
    assert_eq!(masked["status"], "error");

    // Gym's summary of a collection: the masked sample is no measurement.
    let summary = post(
        &server,
        "/aggregate_metrics",
        json!({"verify_responses": [passed, failed, masked]}),
        200,
    );
    assert_eq!(summary["key_metrics"]["pass@1[avg-of-2]"], 0.5, "{summary}");
    assert_eq!(summary["key_metrics"]["pass@2"], 1.0);
    assert_eq!(summary["key_metrics"]["mean/output_tokens"], 20.0);
    assert_eq!(summary["agent_metrics"]["masked_samples"], 1);
    assert_eq!(summary["group_level_metrics"][0]["samples"], 2);
    let (status, raw) = get(&server, "/reverify_mode");
    assert_eq!((status, json_of(&raw)), (200, json!("unknown")));

    // NeMo Evaluator's envelope (`gym://...?protocol=native`): output_text beside output.
    let mut evaluator = row("", &t19);
    evaluator["response"] = json!({"id": "eval-synthetic", "object": "response", "created_at": 0,
        "status": "completed", "model": "evaluator", "output_text": answer});
    assert_eq!(post(&server, "/verify", evaluator, 200)["reward"], 1.0);

    // What Gym calls around /verify.
    assert_eq!(
        post(&server, "/seed_session", row("", &t19), 200),
        json!({})
    );
    assert_eq!(post(&server, "/close_session", json!({}), 200), json!({}));
    for probe in ["/", "/healthz", "/readyz", "/livez"] {
        let (status, raw) = get(&server, probe);
        assert_eq!(
            (status, json_of(&raw)),
            (200, json!({"status": "ok"})),
            "{probe}"
        );
    }
    let missing = post(
        &server,
        "/verify",
        json!({"response": {}, "verifier_metadata": {"entry_point": "f"}}),
        400,
    );
    assert!(missing["error"]
        .as_str()
        .unwrap()
        .contains("verifier_metadata.test"));
}

#[test]
fn sessions_keep_state_return_figures_and_expire() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(
        dir.path(),
        &["--max-sessions", "2", "--session-idle", "2"],
        &[],
    );
    let (status, _, raw) = http(
        server.addr(),
        "POST",
        "/v1/sessions",
        &[("X-Session-ID", "mine-1")],
        Some(&json!({"files": {"data.csv": STANDARD.encode("a,b\n1,2\n")}})),
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&raw));
    assert_eq!(json_of(&raw)["session_id"], "mine-1");
    let cell = |code: &str| {
        post(
            &server,
            "/v1/sessions/mine-1/execute",
            json!({"code": code}),
            200,
        )
    };
    let first = cell("import pandas as pd\ndf = pd.read_csv('data.csv')\ndf.a.sum() + 41");
    assert_eq!(
        (&first["status"], &first["result"]),
        (&json!("pass"), &json!("42")),
        "{first}"
    );
    let figure = cell("import matplotlib.pyplot as plt\nplt.plot(df.a, df.b)\nplt.savefig('plot.png')\nplt.show()\nprint('drawn')");
    assert_eq!(figure["output"]["text"], "drawn\n");
    let png = STANDARD
        .decode(figure["figures"][0]["data"].as_str().unwrap())
        .unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG figure");
    let error = cell("undefined_name");
    assert_eq!(error["error"]["name"], "NameError");
    assert!(
        error["text"]
            .as_str()
            .unwrap()
            .contains("There are some errors in the code"),
        "{error}"
    );
    let (status, raw) = get(&server, "/v1/sessions/mine-1/files");
    assert_eq!(status, 200);
    let files = json_of(&raw);
    assert!(
        files["files"]["plot.png"].is_string() && files["files"]["data.csv"].is_string(),
        "{files}"
    );

    // At most two open; a taken id is refused.
    post(
        &server,
        "/v1/sessions",
        json!({"session_id": "mine-1"}),
        409,
    );
    let second = post(&server, "/v1/sessions", json!({}), 200)["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(second.len(), 32, "a random id");
    let full = post(&server, "/v1/sessions", json!({}), 409);
    assert!(full["error"]
        .as_str()
        .unwrap()
        .contains("2 sessions are open"));
    let (_, raw) = get(&server, "/v1/sessions");
    assert_eq!(json_of(&raw)["sessions"].as_array().unwrap().len(), 2);
    let (status, _, _) = http(
        server.addr(),
        "DELETE",
        &format!("/v1/sessions/{second}"),
        &[],
        None,
    );
    assert_eq!(status, 200);
    post(
        &server,
        &format!("/v1/sessions/{second}/execute"),
        json!({"code": "1"}),
        404,
    );
    post(
        &server,
        "/v1/sessions",
        json!({"profile": "bigcodebench"}),
        400,
    );

    // Unused past --session-idle, a session is closed.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, _, _) = http(
            server.addr(),
            "POST",
            "/v1/sessions/mine-1/execute",
            &[],
            Some(&json!({"code": "1"})),
        );
        if status == 404 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the idle session was never closed"
        );
        std::thread::sleep(Duration::from_secs(3));
    }
}

#[test]
fn the_secret_guards_every_route_and_no_job_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "s3cret-token-31337-abcdef";
    let server = serve(dir.path(), &[], &[("ASSAY_SERVE_TOKEN", secret)]);
    let body = json!({"code": "print('hi')", "language": "python"});
    let (status, _, _) = http(server.addr(), "POST", "/run_code", &[], Some(&body));
    assert_eq!(status, 401);
    let (status, _, _) = http(
        server.addr(),
        "GET",
        "/health",
        &[("Authorization", "Bearer wrong-secret-000000")],
        None,
    );
    assert_eq!(status, 401);
    let bearer = format!("Bearer {secret}");
    let (status, _, _) = http(
        server.addr(),
        "GET",
        "/health",
        &[("Authorization", &bearer)],
        None,
    );
    assert_eq!(status, 200);
    // In the path, for clients that send no header.
    let (status, _, raw) = http(
        server.addr(),
        "POST",
        &format!("/{secret}/run_code"),
        &[],
        Some(&body),
    );
    assert_eq!(
        (status, json_of(&raw)["status"].clone()),
        (200, json!("Success"))
    );
    // No job finds it: not in its environment, nor in any process's it can see.
    let hunt = format!(
        "import os, glob\nfound = [k for k, v in os.environ.items() if '{secret}' in v]\nfor p in glob.glob('/proc/*/environ'):\n    try:\n        found += [p] if b'{secret}' in open(p, 'rb').read() else []\n    except OSError:\n        pass\nprint(found)\n"
    );
    let (status, _, raw) = http(
        server.addr(),
        "POST",
        &format!("/{secret}/v1/run"),
        &[],
        Some(&json!({"code": hunt})),
    );
    assert_eq!(status, 200);
    assert_eq!(json_of(&raw)["stdout"]["text"], "[]\n");
    // Nor do the metrics name it.
    let (_, _, raw) = http(
        server.addr(),
        "GET",
        "/metrics",
        &[("Authorization", &bearer)],
        None,
    );
    let metrics = String::from_utf8(raw).unwrap();
    assert!(metrics.contains("route=\"/run_code\""));
    assert!(!metrics.contains(secret));
    drop(server);

    // Another address needs a secret, or --open (with a warning).
    let refused = assay_command(dir.path())
        .args([
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
            "--profile",
            "test",
        ])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--token-file"));
    let open = serve(dir.path(), &["--host", "0.0.0.0", "--open"], &[]);
    assert!(open.log().contains("WARNING"), "{}", open.log());
}

#[test]
fn a_full_queue_refuses_and_a_departed_client_takes_its_job_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--max-jobs", "2", "--queue", "0"], &[]);
    let sleeper = json!({"code": "import time\ntime.sleep(100)", "timeout": 120});
    // Two requests fill both places; their clients wait...
    let mut waiting: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
            let body = sleeper.to_string();
            write!(stream, "POST /v1/run HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len()).unwrap();
            stream
        })
        .collect();
    let health = || json_of(&get(&server, "/health").1);
    let deadline = Instant::now() + Duration::from_secs(30);
    while health()["queue"]["running"] != 2 {
        assert!(
            Instant::now() < deadline,
            "two jobs never ran: {}",
            health()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // ...so a third is refused, with when to come back.
    let (status, headers, _) = http(
        server.addr(),
        "POST",
        "/v1/run",
        &[],
        Some(&json!({"code": "1"})),
    );
    assert_eq!(status, 503);
    assert!(headers
        .iter()
        .any(|(k, v)| k == "retry-after" && v.parse::<u64>().is_ok()));
    // The clients go away: their jobs are killed, their places free.
    waiting.clear();
    let deadline = Instant::now() + Duration::from_secs(20);
    while health()["queue"]["running"] != 0 || health()["queue"]["admitted"] != 0 {
        assert!(
            Instant::now() < deadline,
            "the departed clients' jobs still run: {}",
            health()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        post(&server, "/v1/run", json!({"code": "print(1)"}), 200)["status"],
        "pass"
    );
}

#[test]
fn hostile_code_through_every_route_leaves_the_server_and_others_unaffected() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(
        dir.path(),
        &["--max-timeout", "10", "--max-memory", "512"],
        &[],
    );
    // The hostile suite's attacks (crates/assay-sandbox/tests/hostile.rs), as scripts.
    let attacks = [
        ("infinite loop", "while True:\n    pass\n"),
        ("memory bomb", "hog = []\nwhile True:\n    hog.append(bytearray(8 << 20))\n"),
        ("fork bomb", "import os, time\nfor _ in range(10000):\n    try:\n        os.fork()\n    except OSError:\n        break\ntime.sleep(30)\n"),
        ("stdout flood", "import sys\nwhile True:\n    sys.stdout.write('flood ' * 1000)\n"),
        ("disk fill", "with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * (1 << 20))\n"),
        ("killing the parent", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill(-1, signal.SIGKILL)\n"),
        ("escapee", "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)'], start_new_session=True)\n"),
        ("writing outside", "open('/etc/owned', 'w').write('x')\n"),
        ("network", "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=3)\n"),
        ("closing descriptors", "import os\nfor fd in range(3, 1024):\n    try:\n        os.close(fd)\n    except OSError:\n        pass\nprint('closed')\n"),
        ("recursion bomb", "import sys\nsys.setrecursionlimit(10**8)\ndef f(n):\n    return f(n + 1)\nf(0)\n"),
        ("blocked signals", "import signal, time\nsignal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals))\ntime.sleep(1000)\n"),
    ];
    let hostile: Vec<std::thread::JoinHandle<(String, Value)>> = attacks
        .iter()
        .enumerate()
        .map(|(i, (name, code))| {
            let (addr, name, code) = (server.addr(), name.to_string(), code.to_string());
            std::thread::spawn(move || {
                let route = ["/v1/run", "/run_code", "/v1/unittest"][i % 3];
                let body = match route {
                    "/run_code" => json!({"code": code, "language": "python"}),
                    "/v1/unittest" => json!({"code": code, "test": "import unittest\nclass TestCases(unittest.TestCase):\n    def test_x(self):\n        pass\n"}),
                    _ => json!({"code": code}),
                };
                let (status, _, raw) = http(addr, "POST", route, &[], Some(&body));
                assert_eq!(status, 200, "{name} via {route}: {}", String::from_utf8_lossy(&raw));
                (format!("{name} via {route}"), json_of(&raw))
            })
        })
        .collect();
    // Meanwhile, honest requests get their right answers.
    for n in 0..6 {
        let ran = post(
            &server,
            "/v1/run",
            json!({"code": format!("print({n} * 7)")}),
            200,
        );
        assert_eq!(ran["stdout"]["text"], format!("{}\n", n * 7), "{ran}");
    }
    for attack in hostile {
        let (name, result) = attack.join().expect("the attack's request");
        let status = result["status"]
            .as_str()
            .or(result["run_result"]["status"].as_str());
        assert!(status.is_some(), "{name}: {result}");
        assert_ne!(
            result["status"], "SandboxError",
            "{name}: the code's doing is not the harness's: {result}"
        );
        assert_ne!(result["status"], "infra", "{name}: {result}");
    }
    assert!(!Path::new("/etc/owned").exists());
    // A session attacked too: the session dies, the server does not.
    let id = post(&server, "/v1/sessions", json!({}), 200)["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let killed = post(
        &server,
        &format!("/v1/sessions/{id}/execute"),
        json!({"code": "import os, signal\nos.kill(-1, signal.SIGKILL)", "timeout": 5}),
        200,
    );
    assert!(killed["status"].is_string(), "{killed}");
    let (status, raw) = get(&server, "/health");
    assert_eq!(
        (status, json_of(&raw)["status"].clone()),
        (200, json!("ok"))
    );
    let after = post(
        &server,
        "/v1/bigcodebench/verify",
        json!({"task_id": "BigCodeBench/19", "solution": task(19).reference_solution()}),
        200,
    );
    assert_eq!(after["status"], "pass", "{after}");
}
