//! `--extra-body` against a real HTTP server on loopback: its fields reach every request of
//! `assay generate` and `assay run pybench` (inline and from a file), beside what assay sends;
//! a field assay sends itself is refused unless named on purpose, and then replaces it; the
//! body is part of the run's identity, so a resume with another is refused and asks nothing;
//! bad JSON is named before anything is asked.

mod common;
#[path = "../../assay-models/tests/mock/mod.rs"]
mod mock;

use std::path::Path;
use std::process::Output;

use common::{asked_about, assay_command, hard, read_json, run_pybench, text};
use mock::{MockServer, Reply, Route};
use serde_json::{json, Value};

const TASKS: &str = "BigCodeBench/19,BigCodeBench/120";

fn assay(args: &[&str], dir: &Path) -> Output {
    assay_command(dir).args(args).output().expect("run assay")
}

/// A model that answers each task with its reference solution.
fn answering(server: &MockServer) {
    server.respond_with(Route::Chat, |body| {
        let code = hard().get(&asked_about(body)).unwrap().reference_solution();
        Reply::chat(&[&format!("```python\n{code}\n```")])
    });
}

/// `assay generate` of the two tasks from `server` into `dir/out`, with `rest`.
fn generate(server: &MockServer, out: &str, rest: &[&str], dir: &Path) -> Output {
    let base = server.openai_base();
    let mut args = vec![
        "generate",
        "bigcodebench-hard",
        "--model",
        "openai:m",
        "--base-url",
        &base,
        "--tasks",
        TASKS,
        "--out",
        out,
    ];
    args.extend_from_slice(rest);
    assay(&args, dir)
}

#[test]
fn an_extra_body_reaches_every_request_and_is_part_of_the_runs_identity() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    answering(&server);
    let body = r#"{"top_k": 1, "min_p": 0, "chat_template_kwargs": {"enable_thinking": false}}"#;
    let done = generate(&server, "pinned", &["--extra-body", body], dir.path());
    assert!(done.status.success(), "{}", text(&done.stderr));
    let asked = server.requests_to(Route::Chat);
    assert_eq!(asked.len(), 2);
    for request in &asked {
        let sent = &request.body;
        assert_eq!(sent["top_k"], 1);
        assert_eq!(sent["min_p"], 0);
        assert_eq!(
            sent["chat_template_kwargs"],
            json!({"enable_thinking": false})
        );
        // What assay sends is still sent: a greedy run's temperature and token limit.
        assert_eq!(sent["temperature"], 0.0);
        assert_eq!(sent["max_tokens"], 1280);
        assert_eq!(sent["model"], "m");
    }
    let manifest = read_json(&dir.path().join("pinned/manifest.json"));
    assert_eq!(
        manifest["identity"]["extra_body"],
        serde_json::from_str::<Value>(body).unwrap()
    );

    // The same body (its keys in another order) resumes and asks nothing; another body is
    // another run, refused by name before anything is asked.
    let reordered =
        r#"{"chat_template_kwargs": {"enable_thinking": false}, "min_p": 0, "top_k": 1}"#;
    let again = generate(&server, "pinned", &["--extra-body", reordered], dir.path());
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(server.requests_to(Route::Chat).len(), 2);
    for other in [vec!["--extra-body", r#"{"top_k": 20}"#], vec![]] {
        let refused = generate(&server, "pinned", &other, dir.path());
        assert!(!refused.status.success());
        let said = text(&refused.stderr);
        assert!(
            said.contains("holds a different evaluation (extra_body:"),
            "{said}"
        );
    }
    assert_eq!(server.requests_to(Route::Chat).len(), 2);

    // A field assay sends itself: refused unless named, and then it replaces assay's.
    let file = dir.path().join("body.json");
    std::fs::write(&file, "{\n  \"temperature\": 0.6,\n  \"seed\": 11\n}\n").unwrap();
    let from_file = format!("@{}", file.display());
    let refused = generate(&server, "warm", &["--extra-body", &from_file], dir.path());
    assert!(!refused.status.success());
    let said = text(&refused.stderr);
    assert!(
        said.contains("--extra-body sets `temperature`, which assay sends itself")
            && said.contains("--extra-body-replaces temperature"),
        "{said}"
    );
    assert!(!dir.path().join("warm").exists(), "nothing was started");
    let named = [
        "--extra-body",
        &from_file,
        "--extra-body-replaces",
        "temperature",
    ];
    let done = generate(&server, "warm", &named, dir.path());
    assert!(done.status.success(), "{}", text(&done.stderr));
    let asked = server.requests_to(Route::Chat);
    assert_eq!(asked.len(), 4);
    assert!(asked[2..]
        .iter()
        .all(|r| r.body["temperature"] == 0.6 && r.body["seed"] == 11));
    let manifest = read_json(&dir.path().join("warm/manifest.json"));
    assert_eq!(
        manifest["identity"]["extra_body"],
        json!({"temperature": 0.6, "seed": 11})
    );

    // What breaks how replies are read is refused even when named; bad JSON names where.
    for (extra, says) in [
        (
            vec![
                "--extra-body",
                r#"{"stream": true}"#,
                "--extra-body-replaces",
                "stream",
            ],
            "which assay must set itself",
        ),
        (
            vec![
                "--extra-body",
                r#"{"seed": 1}"#,
                "--extra-body-replaces",
                "top_p",
            ],
            "--extra-body has no `top_p` field",
        ),
        (vec!["--extra-body", "[1, 2]"], "expected a JSON object"),
        (
            vec!["--extra-body", r#"{"seed": 1,}"#],
            "not JSON: trailing comma at line 1 column 12",
        ),
    ] {
        let refused = generate(&server, "refused", &extra, dir.path());
        assert!(!refused.status.success(), "{extra:?}");
        let said = text(&refused.stderr);
        assert!(said.contains(says), "{extra:?}: {said}");
    }
    std::fs::write(&file, "{\"seed\": 1,\n \"top_k\" 2}\n").unwrap();
    let refused = generate(
        &server,
        "refused",
        &["--extra-body", &from_file],
        dir.path(),
    );
    let said = text(&refused.stderr);
    assert!(
        said.contains(&format!("{}: not JSON", file.display())) && said.contains("line 2"),
        "{said}"
    );
    assert_eq!(server.requests_to(Route::Chat).len(), 4, "nothing asked");
}

#[test]
fn a_pybench_run_sends_the_extra_body_with_every_turn() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, |_| Reply::chat(&["Finished: done"]));
    let out = dir.path().join("run");
    let extra = ["--extra-body", r#"{"seed": 5, "repetition_penalty": 1.0}"#];
    let done = run_pybench(
        "openai:mock",
        &server.openai_base(),
        "7",
        &out,
        &extra,
        ("OPENAI_API_KEY", "sk-extra-body"),
        dir.path(),
    );
    assert!(done.status.success(), "{}", text(&done.stderr));
    let asked = server.requests_to(Route::Chat);
    assert!(!asked.is_empty());
    assert!(asked
        .iter()
        .all(|r| r.body["seed"] == 5 && r.body["repetition_penalty"] == 1.0));
    let manifest = read_json(&out.join("manifest.json"));
    assert_eq!(
        manifest["identity"]["extra_body"],
        json!({"seed": 5, "repetition_penalty": 1.0})
    );
    // A replayed trajectory asks no model: an extra body for it is a mistake, said.
    let replay = format!(
        "replay:{}",
        common::pybench_data().join("trajectory.jsonl").display()
    );
    let refused = assay(
        &[
            "run",
            "pybench",
            "--model",
            &replay,
            "--data",
            &common::pybench_data().display().to_string(),
            "--tasks",
            "7",
            "--out",
            &dir.path().join("replayed").display().to_string(),
            "--extra-body",
            r#"{"seed": 5}"#,
        ],
        dir.path(),
    );
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("--extra-body is for model APIs"),
        "{}",
        text(&refused.stderr)
    );
}
