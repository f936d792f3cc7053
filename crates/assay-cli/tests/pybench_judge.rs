//! `assay judge pybench` against a judge on loopback (a real HTTP server): the requests are
//! upstream's byte for byte (system prompts by digest of upstream's YAML, user messages as
//! upstream's scripts build them, computed here by Python), every shape of reply is counted
//! as upstream counts it (a verdict, a refusal, a field missing, a 429 first), the figures
//! equal the ones worked out by hand for the small case, a rerun asks nothing, a `kill -9`
//! resumes without asking twice, and bad input is refused by name. Replies as real judges
//! write them (a ```json fence, a trailing comma) are read and counted as read leniently;
//! one that cannot be read is asked again, within a bound, and each ask is kept. An
//! `--extra-body` reaches every request and the judging's settings.

mod common;
#[path = "../../assay-models/tests/mock/mod.rs"]
mod mock;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{assay_command, judge_case, lines, pybench_data, pybench_env, read_json, text};
use mock::{MockServer, Reply, Route};
use serde_json::{json, Value};

const KEY: &str = "sk-judge-canary-31";
/// SHA-256 of the system prompts of upstream's `config/evaluator_winlose_rate.yaml` and
/// `config/evaluator.yaml` (Mercury7353/PyBench at 4096d69, read with PyYAML).
const WINLOSE_SHA256: &str = "459ec9c7ffba14539d1bafa4a20f265a0b92d4d83d26a1c6e9310fbb8fbfb07e";
const SCORES_SHA256: &str = "e1e71b40d8e9192f5af9ce0edfc99307eafd5797b899096013aacacb2ead689c";
/// The tasks of the case (`common::judge_case`).
const TASKS: &str = "7,28,29,32,113,132";

/// The user messages upstream's scripts build for `tasks`, in both orders: the winlose
/// script's raw lines, the scores script's `json.dumps(..., indent=4)`, and `AgentN Failed`
/// for a side that lacks the task.
const EXPECTED: &str = r#"
import json, sys
TEMPLATE = "Now decide which agent's solution is better and give the reason\nAgent 1's solution:\n{line1}\n\nAgent 2's solution:\n{line2}\n"
def read_lines(path):
    m = {}
    for line in open(path, encoding="utf-8").readlines():
        m[json.loads(line)["index"]] = line
    return m
run, ref, prompt = read_lines(sys.argv[1]), read_lines(sys.argv[2]), sys.argv[3]
show = (lambda l: l) if prompt == "winlose" else (lambda l: json.dumps(json.loads(l), ensure_ascii=False, indent=4))
out = []
for index in sys.argv[4].split(","):
    r = show(run[index]) if index in run else None
    f = show(ref[index]) if index in ref else None
    out.append({"task": index, "order": "paper", "user": TEMPLATE.format(line1=f or "Agent1 Failed", line2=r or "Agent2 Failed")})
    out.append({"task": index, "order": "swapped", "user": TEMPLATE.format(line1=r or "Agent1 Failed", line2=f or "Agent2 Failed")})
print(json.dumps(out))
"#;

fn expected_requests(run: &Path, reference: &Path, prompt: &str) -> Vec<Value> {
    #[allow(clippy::disallowed_methods)]
    let done = std::process::Command::new("python3")
        .args(["-c", EXPECTED])
        .args([run, reference])
        .args([prompt, TASKS])
        .output()
        .expect("run python3");
    assert!(done.status.success(), "{}", text(&done.stderr));
    serde_json::from_slice::<Value>(&done.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn sha256(text: &str) -> String {
    #[allow(clippy::disallowed_methods)]
    let done = std::process::Command::new("python3")
        .args([
            "-c",
            "import hashlib,sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(text.as_bytes())?;
            child.wait_with_output()
        })
        .expect("run python3");
    String::from_utf8(done.stdout).unwrap().trim().to_string()
}

/// The task a judge request is about: the first `"index": "N"` in its user message.
fn task_of(body: &Value) -> String {
    let user = body["messages"][1]["content"].as_str().unwrap_or_default();
    user.split("\"index\": \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default()
        .to_string()
}

/// A verdict in upstream's format, in a ``` block after some reasoning.
fn verdict(pass: [&str; 2], fields: Value) -> String {
    let mut body = json!({"Pass": {"Agent1": pass[0], "Agent2": pass[1]}});
    for (k, v) in fields.as_object().unwrap() {
        body[k] = v.clone();
    }
    format!(
        "Agent1 reasoned well.\n```\n{}\n```",
        serde_json::to_string_pretty(&body).unwrap()
    )
}

fn decision(a1: i64, a2: i64) -> Value {
    json!({"Decision": {"Agent1": a1, "Agent2": a2}})
}

/// A judge for the winlose prompt that answers each task of the case in its own shape (with
/// `rate_limit`, task 29's first request gets a 429).
fn winlose_judge(server: &MockServer, rate_limit: bool) {
    let refused = Arc::new(AtomicBool::new(!rate_limit));
    server.respond_with(Route::Chat, move |body| {
        let user = body["messages"][1]["content"].as_str().unwrap();
        let text = match task_of(body).as_str() {
            "7" => verdict(["Failed", "Pass"], decision(0, 1)),
            "28" => "```json\n{\"Pass\": {\"Agent1\": \"Pass\", \"Agent2\": \"Pass\"}}\n```".into(),
            "29" if !refused.swap(true, Ordering::SeqCst) => {
                return Reply::openai_error(429, "rate_limit", "rate_limit", "slow down")
            }
            "29" => verdict(["Pass", "Pass"], decision(1, 0)),
            "32" => verdict(["Pass", "Failed"], decision(1, 0)),
            "113" => "I'm sorry, but I can't help with assessing these.".into(),
            _ if user.contains("Agent 2's solution:\nAgent2 Failed") => {
                verdict(["Pass", "Failed"], decision(1, 0))
            }
            _ => verdict(["Failed", "Pass"], decision(0, 1)),
        };
        Reply::chat(&[&text])
    });
}

/// `assay judge pybench RUN` with `server` as the judge, and `rest`.
fn judge_command(run: &Path, server: &MockServer, rest: &[&str], dir: &Path) -> Command {
    let mut command = assay_command(dir);
    command
        .args(["judge", "pybench"])
        .arg(run)
        .args(["--judge", "openai:judge-model", "--base-url"])
        .arg(server.openai_base())
        .args(rest)
        .env("OPENAI_API_KEY", KEY);
    command
}

fn judge(run: &Path, server: &MockServer, rest: &[&str], dir: &Path) -> Output {
    judge_command(run, server, rest, dir)
        .output()
        .expect("run assay")
}

/// `assay eval pybench` of the case's run file, into `dir/eval`.
fn evaluated(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    pybench_env();
    let (run, reference) = judge_case(dir);
    let out = dir.join("eval");
    let done = assay_command(dir)
        .args(["eval", "pybench", "--trajectories"])
        .arg(&run)
        .arg("--data")
        .arg(pybench_data())
        .args(["--tasks", TASKS, "--out"])
        .arg(&out)
        .output()
        .expect("run assay");
    assert!(done.status.success(), "{}", text(&done.stderr));
    (out, run, reference)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn a_judge_gets_upstreams_requests_and_every_reply_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let (eval, run, reference) = evaluated(dir.path());
    let statuses: Vec<(String, String)> = lines(&eval.join("results.jsonl"))
        .iter()
        .map(|r| {
            (
                r["task_id"].as_str().unwrap().into(),
                r["status"].as_str().unwrap().into(),
            )
        })
        .collect();
    let status = |task: &str| statuses.iter().find(|(t, _)| t == task).unwrap().1.clone();
    // The case is as it says: the checks pass 7 and 28, fail 29 and 32; 132 has no trajectory.
    assert_eq!(
        [7, 28, 29, 32, 132].map(|t| status(&format!("PyBench/{t}"))),
        ["pass", "pass", "fail", "fail", "infra"]
    );

    let server = MockServer::start_on_thread();
    winlose_judge(&server, true);
    let reference_arg = format!("replay:{}", reference.display());
    // Upstream asks nothing again within a run: neither does this judging.
    let priced = [
        "--reasks",
        "0",
        "--reference",
        &reference_arg,
        "--price-in",
        "2",
        "--price-out",
        "8",
    ];
    let done = judge(&eval, &server, &priced, dir.path());
    assert!(done.status.success(), "{}", text(&done.stderr));
    let printed = text(&done.stdout);

    // Upstream's requests, byte for byte: each distinct one asked once (task 7's two orders are
    // one request: its sides are the same line), the 429 asked again; none for 132, which the
    // run has no trajectory of (set apart).
    let requests = server.requests_to(Route::Chat);
    let expected: Vec<Value> = expected_requests(&run, &reference, "winlose")
        .into_iter()
        .filter(|e| e["task"] != "132")
        .collect();
    let mut distinct: Vec<String> = expected
        .iter()
        .map(|e| e["user"].as_str().unwrap().to_string())
        .collect();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 9);
    assert_eq!(
        requests.len(),
        10,
        "9 requests and the one refused with 429"
    );
    let mut sent: Vec<String> = Vec::new();
    for request in &requests {
        let body = &request.body;
        assert_eq!(body["model"], "judge-model");
        assert_eq!(body["temperature"], 0.2);
        assert_eq!(body["top_p"], 0.5);
        assert_eq!(body["max_tokens"], 1000);
        assert_eq!(body["frequency_penalty"], 1.02);
        assert_eq!(body["presence_penalty"], 1.0);
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(
            sha256(body["messages"][0]["content"].as_str().unwrap()),
            WINLOSE_SHA256
        );
        assert_eq!(body["messages"][1]["role"], "user");
        assert_eq!(body["messages"].as_array().unwrap().len(), 2);
        sent.push(body["messages"][1]["content"].as_str().unwrap().into());
    }
    sent.sort();
    sent.dedup();
    assert_eq!(sent, distinct, "the user messages are upstream's");

    // Every request and reply kept; the figures worked out by hand.
    let kept = lines(&eval.join("judgements.jsonl"));
    assert_eq!(kept.len(), 9);
    assert!(kept.iter().all(|r| r["request"]["user"].is_string()
        && r["reply"].is_string()
        && r["error"].is_null()));
    let summary = read_json(&eval.join("summary.json"));
    let judges = summary["judges"].as_array().unwrap();
    assert_eq!(judges.len(), 1);
    let f = &judges[0];
    assert_eq!(f["tasks"], 6);
    assert!(f["set_apart"]["PyBench/132"]
        .as_str()
        .unwrap()
        .contains("no trajectory"));
    assert_eq!(f["read"], 3, "7, 29 and 32 read");
    let unreadable = f["unreadable"].as_object().unwrap();
    // Its ```json fence is read; the verdict lacks the prompt's Decision.
    assert!(unreadable["PyBench/28"]
        .as_str()
        .unwrap()
        .contains("no Decision.Agent1"));
    assert!(unreadable["PyBench/113"]
        .as_str()
        .unwrap()
        .contains("no ``` block"));
    assert_eq!(unreadable.len(), 2);
    assert!(f["failed"].as_object().unwrap().is_empty());
    assert_eq!(f["passed"], 2);
    assert!(close(f["pass_rate"].as_f64().unwrap(), 2.0 / 3.0));
    assert!(close(f["pass_rate_all"].as_f64().unwrap(), 2.0 / 6.0));
    assert!(close(f["reference_pass_rate"].as_f64().unwrap(), 2.0 / 3.0));
    assert_eq!(
        f["win_tie_lose"],
        json!({"win": 1, "tie": 0, "lose": 2, "by": "decision"})
    );
    // 7 and 29 passed in one reply each; 32 failed: 10.
    assert!(close(f["average_turns"].as_f64().unwrap(), 4.0));
    let agreement = &f["agreement"];
    assert_eq!(
        [
            &agreement["tasks"],
            &agreement["both_pass"],
            &agreement["judge_only"],
            &agreement["checks_only"],
            &agreement["both_fail"]
        ],
        [&json!(3), &json!(1), &json!(1), &json!(0), &json!(1)]
    );
    // Observed 2/3; by chance 2/3·1/3 + 1/3·2/3 = 4/9; kappa (2/3 - 4/9) / (5/9) = 0.4.
    assert!(close(agreement["observed"].as_f64().unwrap(), 2.0 / 3.0));
    assert!(close(agreement["kappa"].as_f64().unwrap(), 0.4));
    assert_eq!(agreement["judge_only_tasks"], json!(["PyBench/29"]));
    let position = &f["position"];
    assert_eq!(position["pairs"], 3);
    assert_eq!(position["consistent"], 0);
    assert_eq!(position["follows_first"], 2, "29 and 32");
    assert_eq!(position["follows_second"], 1, "7");
    assert!(close(position["rate"].as_f64().unwrap(), 1.0));
    assert_eq!(
        position["changed_tasks"],
        json!(["PyBench/7", "PyBench/29", "PyBench/32"])
    );
    assert_eq!(
        [
            &position["pass_same"],
            &position["pass_only_second"],
            &position["pass_only_first"]
        ],
        [&json!(1), &json!(1), &json!(1)]
    );
    assert_eq!(f["requests"], 9);
    // Which answers the figures read: task 7's one request stands for both orders.
    let answers = f["answers"].as_object().unwrap();
    assert_eq!(answers.len(), 5);
    assert_eq!(
        answers["PyBench/7"]["paper"],
        answers["PyBench/7"]["swapped"]
    );
    assert_ne!(
        answers["PyBench/29"]["paper"],
        answers["PyBench/29"]["swapped"]
    );
    let keys: Vec<&Value> = kept.iter().map(|r| &r["key"]).collect();
    assert!(answers
        .values()
        .all(|a| keys.contains(&&a["paper"]) && keys.contains(&&a["swapped"])));
    // Ten prompt tokens and five completion tokens a reply, at $2 and $8 a million.
    assert_eq!(f["tokens"]["prompt_tokens"], 90);
    assert!(close(
        f["cost_usd"].as_f64().unwrap(),
        (90.0 * 2.0 + 45.0 * 8.0) / 1e6
    ));
    assert!(printed.contains("Pass Rate (LLM) 66.7% (2/3"), "{printed}");
    assert!(printed.contains("Cohen's kappa 0.40"), "{printed}");
    assert!(printed.contains("win/tie/lose against the reference (by decision): 1/0/2"));

    // The same command again asks nothing and writes the same figures once.
    let again = judge(&eval, &server, &priced, dir.path());
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(server.requests_to(Route::Chat).len(), 10);
    let rewritten = read_json(&eval.join("summary.json"));
    assert_eq!(rewritten["judges"], summary["judges"]);

    // The scores prompt, in the paper's order, against the default reference (the data
    // folder's recordings): its own figures beside the first.
    let scores = MockServer::start_on_thread();
    scores.respond_with(Route::Chat, |body| {
        let quality = json!({
            "ReasoningQuality": {"Agent1": 5, "Agent2": 7},
            "CodeQuality": {"Agent1": "6", "Agent2": 6.5},
        });
        let text = if task_of(body) == "113" {
            verdict(
                ["Pass", "Pass"],
                json!({"ReasoningQuality": quality["ReasoningQuality"]}),
            )
        } else {
            verdict(["Pass", "Pass"], quality)
        };
        Reply::chat(&[&text])
    });
    let data = pybench_data().display().to_string();
    let done = judge(
        &eval,
        &scores,
        &[
            "--prompt", "scores", "--orders", "paper", "--data", &data, "--reasks", "0",
        ],
        dir.path(),
    );
    assert!(done.status.success(), "{}", text(&done.stderr));
    let shared = pybench_data().join("trajectory.jsonl");
    let expected: Vec<String> = expected_requests(&run, &shared, "scores")
        .iter()
        .filter(|e| e["order"] == "paper" && e["task"] != "132")
        .map(|e| e["user"].as_str().unwrap().to_string())
        .collect();
    let mut sent: Vec<String> = scores
        .requests_to(Route::Chat)
        .iter()
        .map(|r| {
            assert_eq!(
                sha256(r.body["messages"][0]["content"].as_str().unwrap()),
                SCORES_SHA256
            );
            // What upstream's client sent where the config named none.
            assert_eq!(r.body["frequency_penalty"], 1.0);
            assert_eq!(r.body["presence_penalty"], 1.0);
            r.body["messages"][1]["content"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    sent.sort();
    let mut expected = expected;
    expected.sort();
    assert_eq!(sent, expected, "the scores script's indented records");
    let summary = read_json(&eval.join("summary.json"));
    let judges = summary["judges"].as_array().unwrap();
    assert_eq!(judges.len(), 2, "both judgings kept");
    let s = &judges[1];
    assert_eq!(s["settings"]["prompt"], "scores");
    assert_eq!(s["settings"]["reference"], "data:trajectory.jsonl");
    assert_eq!(s["read"], 4);
    assert!(s["unreadable"]["PyBench/113"]
        .as_str()
        .unwrap()
        .contains("no CodeQuality.Agent1"));
    assert!(close(s["pass_rate"].as_f64().unwrap(), 1.0));
    // Upstream's Score: 7 + int("6") against 5 + int(6.5), the run ahead on every task read.
    assert_eq!(
        s["win_tie_lose"],
        json!({"win": 4, "tie": 0, "lose": 0, "by": "score"})
    );
    assert!(s["position"].is_null());
    assert!(close(s["agreement"]["kappa"].as_f64().unwrap(), 0.0));

    // The evaluation run again (it resumes, its episodes the same) keeps both judgings.
    let (rerun, _, _) = evaluated(dir.path());
    assert_eq!(rerun, eval);
    assert_eq!(
        read_json(&eval.join("summary.json"))["judges"],
        summary["judges"]
    );
}

/// A judge as GPT-4o and Claude answer: a ```json fence (7), upstream's example's trailing
/// commas (29), both (32); a refusal the first time only (113); a refusal every time (28).
fn real_judge(server: &MockServer) {
    let asked: Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>> = Arc::default();
    server.respond_with(Route::Chat, move |body| {
        let task = task_of(body);
        let times = {
            let mut asked = asked.lock().unwrap();
            let n = asked.entry(task.clone()).or_default();
            *n += 1;
            *n
        };
        let commas = "```\n{\"Pass\": {\"Agent1\": \"Pass\", \"Agent2\": \"Pass\",},\n\
                      \"Decision\": {\"Agent1\": 1, \"Agent2\": 0,},}\n```";
        let text = match (task.as_str(), times) {
            ("7", _) => verdict(["Failed", "Pass"], decision(0, 1)).replace("```\n", "```json\n"),
            ("29", _) => format!("My verdict:\n{commas}"),
            ("32", _) => commas.replacen("```", "```json", 1),
            ("113", 2..) => verdict(["Pass", "Failed"], decision(1, 0)),
            _ => "I'm sorry, but I can't help with assessing these.".into(),
        };
        Reply::chat(&[&text])
    });
}

#[test]
fn replies_as_real_judges_write_them_are_read_and_an_unread_one_is_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let (eval, _, reference) = evaluated(dir.path());
    let server = MockServer::start_on_thread();
    real_judge(&server);
    let reference_arg = format!("replay:{}", reference.display());
    let args = [
        "--reference",
        &reference_arg,
        "--orders",
        "paper",
        "--extra-body",
        r#"{"seed": 3}"#,
    ];
    let done = judge(&eval, &server, &args, dir.path());
    assert!(done.status.success(), "{}", text(&done.stderr));
    let printed = text(&done.stdout);

    // Five requests; 113 asked twice, 28 three times (the default: asked again twice), each
    // with the extra body.
    let requests = server.requests_to(Route::Chat);
    assert_eq!(requests.len(), 8);
    assert!(requests.iter().all(|r| r.body["seed"] == 3));
    let kept = lines(&eval.join("judgements.jsonl"));
    let asks = |task: &str| -> Vec<Value> {
        kept.iter()
            .filter(|r| r["task_id"] == format!("PyBench/{task}"))
            .map(|r| r["ask"].clone())
            .collect()
    };
    assert_eq!(asks("28"), [Value::Null, json!(1), json!(2)]);
    assert_eq!(asks("113"), [Value::Null, json!(1)]);
    assert!(kept.iter().all(|r| r["reply"].is_string()));
    let f = &read_json(&eval.join("summary.json"))["judges"][0];
    assert_eq!(f["settings"]["reasks"], 2);
    assert_eq!(f["settings"]["extra_body"], json!({"seed": 3}));
    assert_eq!(f["read"], 4, "7, 29, 32 leniently, and 113 asked again");
    assert_eq!(
        f["lenient"],
        json!({
            "PyBench/7": ["language_tag"],
            "PyBench/29": ["trailing_comma"],
            "PyBench/32": ["language_tag", "trailing_comma"],
        })
    );
    assert_eq!(f["reasked"], json!({"PyBench/28": 2, "PyBench/113": 1}));
    let unreadable = f["unreadable"].as_object().unwrap();
    assert_eq!(unreadable.len(), 1);
    assert!(unreadable["PyBench/28"]
        .as_str()
        .unwrap()
        .contains("no ``` block"));
    // 7: the run passes; 29 and 32: both pass, the reference decided better; 113: the run
    // failed.
    assert_eq!(f["passed"], 3);
    assert_eq!(f["requests"], 8, "asks again included");
    assert_eq!(f["tokens"]["prompt_tokens"], 80, "every ask's tokens");
    assert!(
        printed.contains(
            "4 verdicts read (3 only leniently: language tag 2, trailing comma 2), 1 \
             unreadable, 0 not answered; 2 asked again (3 asks)"
        ),
        "{printed}"
    );

    // A rerun asks nothing it has: not even 28, asked as often as the bound allows.
    let again = judge(&eval, &server, &args, dir.path());
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(server.requests_to(Route::Chat).len(), 8);
    // A wider bound asks 28 once more, and only 28.
    let wider = [&args[..], &["--reasks", "3"]].concat();
    let done = judge(&eval, &server, &wider, dir.path());
    assert!(done.status.success(), "{}", text(&done.stderr));
    let requests = server.requests_to(Route::Chat);
    assert_eq!(requests.len(), 9);
    assert_eq!(task_of(&requests[8].body), "28");
    // The wider judging is the same judging, replaced: one entry.
    let judges = read_json(&eval.join("summary.json"))["judges"].clone();
    assert_eq!(judges.as_array().unwrap().len(), 1, "{judges}");
    let wide = &judges[0];
    assert_eq!(wide["settings"]["reasks"], 3);
    assert_eq!(wide["reasked"]["PyBench/28"], 3);
    assert_eq!(wide["read"], 4);

    // An ask again that fails for good is a failure, not an unreadable reply: named, exit 1,
    // and a rerun asks it again.
    let failing = MockServer::start_on_thread();
    failing.respond_with(Route::Chat, |_| {
        Reply::openai_error(500, "server_error", "server_error", "down")
    });
    let wider = [&args[..], &["--reasks", "4", "--retries", "0"]].concat();
    let done = judge(&eval, &failing, &wider, dir.path());
    assert_eq!(done.status.code(), Some(1), "{}", text(&done.stderr));
    assert_eq!(failing.requests_to(Route::Chat).len(), 1, "28 only");
    let f = &read_json(&eval.join("summary.json"))["judges"][0];
    assert!(f["failed"]["PyBench/28"].is_string(), "{f}");
    assert!(f["unreadable"].as_object().unwrap().is_empty(), "{f}");
}

#[test]
fn a_killed_judging_resumes_without_asking_twice() {
    let dir = tempfile::tempdir().unwrap();
    let (eval, _, reference) = evaluated(dir.path());
    let whole = dir.path().join("whole");
    copy_dir(&eval, &whole);
    let reference_arg = format!("replay:{}", reference.display());
    let args = [
        "--reference",
        &reference_arg,
        "--concurrency",
        "1",
        "--reasks",
        "0",
    ];

    let server = MockServer::start_on_thread();
    winlose_judge(&server, false);
    server.delay_answers(Duration::from_millis(300));
    let mut child = judge_command(&eval, &server, &args, dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let journal = eval.join("judgements.jsonl");
    let started = Instant::now();
    while std::fs::read_to_string(&journal).map_or(0, |t| t.lines().count()) < 3 {
        assert!(started.elapsed() < Duration::from_secs(60), "no answers");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let kept = lines(&journal).len();
    assert!((3..9).contains(&kept), "{kept}");
    let before = server.requests_to(Route::Chat).len();

    let done = judge(&eval, &server, &args, dir.path());
    assert!(done.status.success(), "{}", text(&done.stderr));
    let asked = server.requests_to(Route::Chat).len() - before;
    assert_eq!(asked, 9 - kept, "only what the journal lacked");
    assert_eq!(lines(&journal).len(), 9);

    let uninterrupted = MockServer::start_on_thread();
    winlose_judge(&uninterrupted, false);
    let done = judge(&whole, &uninterrupted, &args, dir.path());
    assert!(done.status.success(), "{}", text(&done.stderr));
    let resumed = read_json(&eval.join("summary.json"))["judges"].clone();
    let straight = read_json(&whole.join("summary.json"))["judges"].clone();
    assert_eq!(resumed, straight);
}

#[test]
fn bad_input_is_refused_by_name_and_a_bad_key_stops_the_judging() {
    let dir = tempfile::tempdir().unwrap();
    let (eval, _, reference) = evaluated(dir.path());
    let server = MockServer::start_on_thread();
    winlose_judge(&server, false);

    let nothing = dir.path().join("nothing");
    std::fs::create_dir(&nothing).unwrap();
    let done = judge(&nothing, &server, &[], dir.path());
    assert!(!done.status.success());
    assert!(text(&done.stderr).contains("is not a run directory"));

    // A run that has not ended (no summary) is not judged yet.
    let unended = dir.path().join("unended");
    copy_dir(&eval, &unended);
    std::fs::remove_file(unended.join("summary.json")).unwrap();
    let done = judge(&unended, &server, &[], dir.path());
    assert!(!done.status.success());
    assert!(text(&done.stderr).contains("the run has not ended"));

    let bad = dir.path().join("bad.jsonl");
    let mut lines_of = std::fs::read_to_string(&reference).unwrap();
    lines_of.push_str("{\"index\": \"140\", \"messages\": [\n");
    std::fs::write(&bad, lines_of).unwrap();
    let bad_arg = format!("replay:{}", bad.display());
    let done = judge(&eval, &server, &["--reference", &bad_arg], dir.path());
    assert!(!done.status.success());
    let said = text(&done.stderr);
    assert!(said.contains("bad.jsonl:6"), "{said}");
    assert!(server.requests_to(Route::Chat).is_empty());

    let refusing = MockServer::start_on_thread();
    refusing.respond_with(Route::Chat, |_| {
        Reply::openai_error(401, "invalid_request_error", "invalid_api_key", "bad key")
    });
    let reference_arg = format!("replay:{}", reference.display());
    let done = judge(
        &eval,
        &refusing,
        &["--reference", &reference_arg, "--concurrency", "1"],
        dir.path(),
    );
    assert!(!done.status.success());
    let said = text(&done.stderr);
    assert!(said.contains("the judge cannot answer"), "{said}");
    assert!(!said.contains(KEY));
    assert_eq!(
        refusing.requests_to(Route::Chat).len(),
        1,
        "stopped at once"
    );
    let kept = lines(&eval.join("judgements.jsonl"));
    assert_eq!(kept.len(), 1);
    assert!(kept[0]["error"].as_str().unwrap().contains("bad key"));
    assert!(read_json(&eval.join("summary.json"))["judges"].is_null());
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
