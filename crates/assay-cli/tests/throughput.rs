//! `assay generate` and `assay run` at a provider's limits, against a real HTTP server on
//! loopback: a server refusing beyond two requests in flight (429 with Retry-After) gets
//! fewer at once until it copes, then the full concurrency again, and every answer; `--rpm`
//! holds the rate the server sees; `--price-in`/`--price-out` turn the usage the server
//! reports into the cost in the manifest, the summary and the report.

mod common;
#[path = "../../assay-models/tests/mock/mod.rs"]
mod mock;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use assay_tasks::bigcodebench::{Dataset, Subset};
use common::{assay_command, lines, read_json, text};
use mock::{most_in_flight, most_within, MockServer, Recorded, Reply};

/// The first `n` task ids of BigCodeBench-Hard, comma-separated.
fn tasks(n: usize) -> String {
    let hard = Dataset::embedded("v0.1.4", Subset::Hard).unwrap();
    let ids: Vec<&str> = hard.tasks[..n].iter().map(|t| t.task_id.as_str()).collect();
    ids.join(",")
}

/// `assay COMMAND bigcodebench-hard --model openai:m --base-url BASE` and `rest`, in `dir`.
fn assay(command: &str, server: &MockServer, rest: &[&str], dir: &Path) -> Output {
    let base = server.openai_base();
    let mut args = vec![
        command,
        "bigcodebench-hard",
        "--model",
        "openai:m",
        "--base-url",
        &base,
    ];
    args.extend_from_slice(rest);
    if command == "run" {
        args.extend_from_slice(&["--profile", "test", "--jobs", "2"]);
    }
    assay_command(dir).args(&args).output().expect("run assay")
}

#[test]
fn a_server_at_its_limit_gets_fewer_requests_then_the_full_concurrency_again() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    server.delay_answers(Duration::from_millis(200));
    // Two at once, for the first 16 requests; 429s take a moment too, as over a network.
    let wait = Duration::from_secs(1);
    server.limit_in_flight(
        2,
        Reply::openai_error(429, "requests", "rate_limit_exceeded", "Rate limit reached")
            .with_header("retry-after", &wait.as_secs().to_string())
            .after(Duration::from_millis(100)),
    );
    let limited = 16;
    server.unlimit_after(limited);
    let tasks = tasks(48);
    let args = [
        "--tasks",
        &tasks,
        "--concurrency",
        "8",
        "--retries",
        "10",
        "--out",
        "gen",
    ];
    let out = assay("generate", &server, &args, dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    // Every answer, some after retries.
    let gen = dir.path().join("gen");
    assert_eq!(lines(&gen.join("samples.jsonl")).len(), 48);
    let manifest = read_json(&gen.join("manifest.json"));
    let totals = &manifest["generation"]["totals"];
    assert_eq!(totals["requests"], 48);
    assert!(totals["retries"].as_u64().unwrap() > 0, "{totals}");

    let requests = server.requests();
    let (busy, calm) = requests.split_at(limited);
    assert!(busy.iter().any(|r| r.refused) && calm.iter().all(|r| !r.refused));
    // It starts at --concurrency; once the server's first wait is over, it sends half or
    // fewer at once while the server refuses.
    let first_refusal = busy.iter().find(|r| r.refused).unwrap().received;
    let (first, after) = busy
        .iter()
        .partition::<Vec<&Recorded>, _>(|r| r.received < first_refusal + wait);
    assert_eq!(most_in_flight(first), 8);
    assert!(!after.is_empty());
    assert!(most_in_flight(after.iter().copied()) <= 4, "{busy:?}");
    // Then it climbs back to eight at once.
    assert_eq!(most_in_flight(calm), 8, "{calm:?}");
}

#[test]
fn rpm_holds_the_rate_the_server_sees() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    let tasks = tasks(8);
    // 240 a minute: one every 250 ms, though eight may be in flight.
    let args = [
        "--tasks", &tasks, "--rpm", "240", "--tpm", "1000000", "--out", "gen",
    ];
    let out = assay("generate", &server, &args, dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let received: Vec<_> = server.requests().iter().map(|r| r.received).collect();
    assert_eq!(received.len(), 8);
    let span = received[7] - received[0];
    assert!(span >= Duration::from_millis(1700), "{span:?}");
    // No second holds more than its four (one more for a send the machine delayed).
    let within = most_within(&received, Duration::from_secs(1));
    assert!(within <= 5, "{within} requests within a second");
    let access = &read_json(&dir.path().join("gen/manifest.json"))["model_access"];
    assert_eq!(access["requests_per_minute"], 240);
    assert_eq!(access["tokens_per_minute"], 1_000_000);
    assert!(access.get("prices").is_none(), "{access}");

    // Zero is no budget: refused, naming the option.
    let out = assay("generate", &server, &["--rpm", "0"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--rpm"), "{}", text(&out.stderr));
    let out = assay("generate", &server, &["--price-in", "1"], dir.path());
    assert!(
        text(&out.stderr).contains("--price-out"),
        "{}",
        text(&out.stderr)
    );
    let out = assay(
        "generate",
        &server,
        &["--price-in=-1", "--price-out", "1"],
        dir.path(),
    );
    assert!(
        text(&out.stderr).contains("--price-in"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn cost_is_the_usage_the_server_reported_times_the_prices() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_on_thread();
    // Each answer: 10 prompt tokens, 5 completion tokens (the mock's usage).
    let tasks = tasks(2);
    let args = [
        "--tasks",
        &tasks,
        "--price-in",
        "1000",
        "--price-out",
        "2000",
        "--out",
        "run",
    ];
    let out = assay("run", &server, &args, dir.path());
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    // 20 prompt tokens at $1,000 a million and 10 completion tokens at $2,000: $0.04.
    let cost = (20.0 * 1000.0 + 10.0 * 2000.0) / 1e6;
    let run = dir.path().join("run");
    let manifest = read_json(&run.join("manifest.json"));
    assert_eq!(
        manifest["model_access"]["prices"],
        serde_json::json!({"prompt_usd_per_million": 1000.0, "completion_usd_per_million": 2000.0})
    );
    let totals = &manifest["generation"]["totals"];
    assert_eq!(totals["usage"]["prompt_tokens"], 20);
    assert_eq!(totals["usage"]["completion_tokens"], 10);
    assert_eq!(totals["cost_usd"].as_f64(), Some(cost));
    let summary = read_json(&run.join("summary.json"));
    assert_eq!(summary["tokens"], totals["usage"]);
    assert_eq!(summary["cost_usd"].as_f64(), Some(cost));
    assert!(
        stdout.contains("model tokens: 20 prompt, 10 completion, $0.0400"),
        "{stdout}"
    );
    assert!(
        stdout.contains("tokens: 20 prompt, 10 completion, $0.0400;"),
        "{stdout}"
    );

    // Prices are no part of a run's identity: a rerun without them resumes the directory,
    // and its figures no longer claim a cost.
    let args = ["--tasks", &tasks, "--out", "run"];
    let out = assay("run", &server, &args, dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let manifest = read_json(&run.join("manifest.json"));
    assert!(manifest["generation"]["totals"].get("cost_usd").is_none());
    assert!(read_json(&run.join("summary.json"))
        .get("cost_usd")
        .is_none());
}
