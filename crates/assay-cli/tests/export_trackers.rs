//! `assay export --to mlflow|wandb` on run directories made here for real (a BigCodeBench-Hard
//! run against a model on loopback, a PyBench replay of the shared recordings), each read back
//! with the tracker's own tooling: a real `mlflow server` on loopback, started from the
//! `mlflow-server` profile's environment and read through its `MlflowClient` (the export
//! itself installs and uses the `mlflow` profile, the client alone); W&B offline (no account),
//! its run files read with wandb's own reader of them. Exporting again must update the same
//! tracker run, not add one.

mod common;
#[path = "../../assay-models/tests/mock/mod.rs"]
mod mock;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use assay_pyenv::child_env::{self, Inherit};
use common::{assay_command, mlflow_server_env, pybench_data, pybench_env, text, wandb_env};
use common::{fenced, hard_task as task};
use mock::{MockServer, Reply, Route};
use serde_json::Value;

/// Answered right.
const RIGHT: &str = "BigCodeBench/120";
/// Answered wrong.
const WRONG: &str = "BigCodeBench/19";
/// Needs scikit-learn, which the small `test` environment lacks: `infra`.
const NEEDS_SKLEARN: &str = "BigCodeBench/752";

/// How long the MLflow server may take to answer `/health`.
const SERVER_WAIT: Duration = Duration::from_secs(90);

fn assay(args: &[&str], dir: &Path) -> Output {
    assay_command(dir)
        .args(args)
        .env("OPENAI_API_KEY", "sk-export-test")
        .output()
        .expect("run assay")
}

/// A BigCodeBench-Hard run in `dir/name` of a model on loopback, with prices: a pass, a
/// failure and an `infra` task.
fn bigcodebench_run(dir: &Path, name: &str) -> PathBuf {
    // Each task's prompt and answer, found once (the embedded dataset is slow to read in a
    // debug build).
    let answers: Vec<(String, String)> = [RIGHT, WRONG, NEEDS_SKLEARN]
        .into_iter()
        .map(|id| {
            let task = task(id);
            let answer = match id {
                WRONG => fenced("def task_func(directory):\n    return None\n"),
                _ => fenced(&task.reference_solution()),
            };
            (task.complete_prompt.trim().to_string(), answer)
        })
        .collect();
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, move |body| {
        let message = body["messages"][0]["content"].as_str().unwrap_or_default();
        let (_, answer) = answers
            .iter()
            .find(|(prompt, _)| message.contains(prompt.as_str()))
            .unwrap_or(&answers[1]);
        Reply::chat(&[answer])
    });
    let tasks = [RIGHT, WRONG, NEEDS_SKLEARN].join(",");
    let ran = assay(
        &[
            "run",
            "bigcodebench-hard",
            "--model",
            "openai:mock-model",
            "--base-url",
            &server.openai_base(),
            "--tasks",
            &tasks,
            "--price-in",
            "2.5",
            "--price-out",
            "10",
            "--profile",
            "test",
            "--jobs",
            "2",
            "--out",
            name,
        ],
        dir,
    );
    assert!(
        ran.status.success(),
        "{}\n{}",
        text(&ran.stdout),
        text(&ran.stderr)
    );
    dir.join(name)
}

/// A PyBench replay in `dir/name` of two shared recordings: 44 passes, 18 fails its check.
fn pybench_run(dir: &Path, name: &str) -> PathBuf {
    pybench_env();
    let data = pybench_data();
    let ran = assay(
        &[
            "run",
            "pybench",
            "--model",
            &format!("replay:{}", data.join("trajectory.jsonl").display()),
            "--data",
            &data.display().to_string(),
            "--tasks",
            "44,18",
            "--jobs",
            "2",
            "--out",
            name,
        ],
        dir,
    );
    assert!(ran.status.success(), "{}", text(&ran.stderr));
    dir.join(name)
}

/// What `assay report --json` says of `run`: the figures the metrics must equal.
fn report(run: &Path) -> Value {
    let out = assay(&["report", &run.display().to_string(), "--json"], run);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    report["runs"][0].clone()
}

/// Runs `script` in `python` (a tracker's environment) with `args`, and parses what it prints
/// as JSON.
fn python_json(python: &Path, script: &str, args: &[&str]) -> Value {
    let out = child_env::command(python, Inherit::Tools)
        .args(["-I", "-c", script])
        .args(args)
        .output()
        .expect("run the reader");
    assert!(
        out.status.success(),
        "the reader failed:\n{}",
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("the reader printed no JSON ({e}):\n{}", text(&out.stdout)))
}

/// Every `(assay directory -> run id)` an export printed, in order, with `new` or `updated`.
fn exported(stderr: &str, tracker: &str) -> Vec<(String, String, String)> {
    stderr
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("assay: ")?;
            let (dir, rest) = rest.split_once(&format!(" -> {tracker} run "))?;
            let (id, rest) = rest.split_once(' ')?;
            let how = rest.split_once("\" (")?.1.split(',').next()?;
            Some((dir.to_string(), id.to_string(), how.to_string()))
        })
        .collect()
}

/// The real MLflow tracking server of the `mlflow` profile on a loopback port, its store and
/// artifacts in a folder of the test's; killed, with its workers, when dropped.
struct MlflowServer {
    child: Child,
    uri: String,
    log: PathBuf,
}

impl MlflowServer {
    fn start(dir: &Path) -> MlflowServer {
        let env = mlflow_server_env();
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let log = dir.join("mlflow-server.log");
        let output = std::fs::File::create(&log).unwrap();
        let mut command = child_env::command(env.dir.join("bin/mlflow"), Inherit::Tools);
        command
            .args(["server", "--host", "127.0.0.1", "--port", &port.to_string()])
            .arg("--backend-store-uri")
            .arg(format!("sqlite:///{}", dir.join("mlflow.db").display()))
            .arg("--artifacts-destination")
            .arg(dir.join("mlflow-artifacts"))
            .args(["--workers", "1"])
            .stdin(Stdio::null())
            .stdout(output.try_clone().unwrap())
            .stderr(output);
        // Its own process group: the server starts its web workers as children, and the whole
        // group goes when the test ends.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command.spawn().expect("start mlflow server");
        let mut server = MlflowServer {
            child,
            uri: format!("http://127.0.0.1:{port}"),
            log,
        };
        let deadline = Instant::now() + SERVER_WAIT;
        while !healthy(port) {
            if let Some(status) = server.child.try_wait().unwrap() {
                panic!(
                    "mlflow server exited ({status}) before it was healthy:\n{}",
                    server.log_text()
                );
            }
            assert!(
                Instant::now() < deadline,
                "mlflow server was not healthy within {SERVER_WAIT:?}:\n{}",
                server.log_text()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        server
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for MlflowServer {
    fn drop(&mut self) {
        let group = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        let _ = self.child.wait();
    }
}

/// Whether `GET /health` on `port` answers `OK`.
fn healthy(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!("GET /health HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    let mut answer = String::new();
    stream.write_all(request.as_bytes()).is_ok()
        && stream.read_to_string(&mut answer).is_ok()
        && answer.starts_with("HTTP/1.1 200")
        && answer.trim_end().ends_with("OK")
}

/// Reads every run of the experiment argv[2] on the server argv[1] with MLflow's own client:
/// its info, parameters, tags, metrics (with each metric's history length) and artifacts.
const MLFLOW_READER: &str = r#"
import json, sys
from mlflow.entities import ViewType
from mlflow.tracking import MlflowClient
client = MlflowClient(tracking_uri=sys.argv[1])
experiment = client.get_experiment_by_name(sys.argv[2])
runs = client.search_runs([experiment.experiment_id], run_view_type=ViewType.ALL)
out = []
for run in runs:
    run_id = run.info.run_id
    out.append({
        "run_id": run_id,
        "name": run.info.run_name,
        "status": run.info.status,
        "start_time": run.info.start_time,
        "params": run.data.params,
        "tags": {k: v for k, v in run.data.tags.items() if not k.startswith("mlflow.")},
        "metrics": run.data.metrics,
        "history": len(client.get_metric_history(run_id, "pass_at_1")),
        "artifacts": sorted(a.path for a in client.list_artifacts(run_id)),
        "report": open(client.download_artifacts(run_id, "report.html")).read()[:2000],
    })
print(json.dumps(out))
"#;

/// Makes a deleted run in the experiment argv[2] on the server argv[1] with the run key argv[3]
/// (as a run deleted by hand and made again by another export would be); prints its id.
const DUPLICATE: &str = r#"
import json, sys
from mlflow.tracking import MlflowClient
client = MlflowClient(tracking_uri=sys.argv[1])
experiment = client.get_experiment_by_name(sys.argv[2])
run = client.create_run(experiment.experiment_id, tags={"assay.run_key": sys.argv[3]})
client.delete_run(run.info.run_id)
print(json.dumps(run.info.run_id))
"#;

/// The run of `runs` (as [`MLFLOW_READER`] prints them) whose `assay.run_dir` tag ends `name`.
fn run_named<'a>(runs: &'a Value, name: &str) -> &'a Value {
    runs.as_array()
        .unwrap()
        .iter()
        .find(|r| {
            r["tags"]["assay.run_dir"]
                .as_str()
                .is_some_and(|d| d.ends_with(name))
        })
        .unwrap_or_else(|| panic!("no run of {name} in {runs:#}"))
}

fn metric(run: &Value, name: &str) -> f64 {
    run["metrics"][name]
        .as_f64()
        .unwrap_or_else(|| panic!("no metric {name} in {:#}", run["metrics"]))
}

#[test]
fn mlflow_gets_one_run_per_assay_run_with_its_figures_and_files_and_a_second_export_updates_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = MlflowServer::start(dir.path());
    let bigcodebench = bigcodebench_run(dir.path(), "bcb");
    let pybench = pybench_run(dir.path(), "pyb");
    // A generation alone holds no verdicts: refused, naming its manifest, and the other runs
    // still go.
    let generated = dir.path().join("generated");
    std::fs::create_dir(&generated).unwrap();
    let manifest = std::fs::read_to_string(bigcodebench.join("manifest.json")).unwrap();
    let manifest = manifest.replace("\"bigcodebench-run\"", "\"bigcodebench-generate\"");
    std::fs::write(generated.join("manifest.json"), manifest).unwrap();

    let export = |runs: &[&str]| {
        let mut args = vec![
            "export",
            "--to",
            "mlflow",
            "--tracking-uri",
            &server.uri,
            "--experiment",
            "assay-tests",
        ];
        args.extend(runs);
        assay(&args, dir.path())
    };
    let first = export(&["bcb", "pyb", "generated"]);
    let said = text(&first.stderr);
    assert_eq!(first.status.code(), Some(1), "{said}");
    assert!(
        said.contains(
            "generated/manifest.json:0: a bigcodebench-generate directory holds no judged samples"
        ),
        "{said}"
    );
    let first_runs = exported(&said, "mlflow");
    assert_eq!(first_runs.len(), 2, "{said}");
    assert!(first_runs.iter().all(|(_, _, how)| how == "new"), "{said}");
    assert!(
        said.contains(&format!("{}/#/experiments/", server.uri)),
        "{said}"
    );

    let python = mlflow_server_env().python();
    let read = python_json(&python, MLFLOW_READER, &[&server.uri, "assay-tests"]);
    assert_eq!(read.as_array().unwrap().len(), 2, "{read:#}");

    // The BigCodeBench run: the identity as parameters, report's figures as metrics.
    let bcb = run_named(&read, "/bcb");
    let figures = report(&bigcodebench);
    assert_eq!(bcb["status"], "FINISHED");
    let name = bcb["name"].as_str().unwrap();
    assert!(
        name.starts_with("bigcodebench-hard-complete openai:mock-model "),
        "{name}"
    );
    assert_eq!(bcb["params"]["benchmark"], "bigcodebench-hard");
    assert_eq!(bcb["params"]["split"], "complete");
    assert_eq!(bcb["params"]["model"], "openai:mock-model");
    assert_eq!(bcb["params"]["kind"], "bigcodebench-run");
    assert_eq!(bcb["params"]["identity.model"], "openai:mock-model");
    assert_eq!(bcb["params"]["identity.dataset"], "v0.1.4");
    assert!(
        bcb["params"]["identity.tasks"]
            .as_str()
            .unwrap()
            .contains(NEEDS_SKLEARN),
        "{:#}",
        bcb["params"]
    );
    let manifest = common::read_json(&bigcodebench.join("manifest.json"));
    assert_eq!(bcb["tags"]["assay.version"], manifest["assay_version"]);
    assert_eq!(
        bcb["start_time"].as_u64(),
        manifest["started_at"].as_u64().map(|s| s * 1000)
    );
    let pass_at_1 = &figures["pass_at_k"]["1"];
    assert_eq!(metric(bcb, "pass_at_1"), 0.5, "one of the two judged tasks");
    for (field, name) in [
        ("value", "pass_at_1"),
        ("low", "pass_at_1_low"),
        ("high", "pass_at_1_high"),
    ] {
        assert_eq!(
            metric(bcb, name),
            pass_at_1[field].as_f64().unwrap(),
            "{name}"
        );
    }
    assert_eq!(metric(bcb, "samples.pass"), 1.0);
    assert_eq!(metric(bcb, "samples.fail"), 1.0);
    assert_eq!(metric(bcb, "samples.infra"), 1.0);
    // All six statuses, those no sample has as 0 (so that one going to 0 shows).
    for status in ["error", "timeout", "oom"] {
        assert_eq!(metric(bcb, &format!("samples.{status}")), 0.0, "{status}");
    }
    assert_eq!(metric(bcb, "tasks"), 3.0);
    assert_eq!(metric(bcb, "tasks_judged"), 2.0);
    assert_eq!(metric(bcb, "tasks_set_apart"), 1.0);
    for (domain, figure) in figures["by_group"].as_object().unwrap() {
        assert_eq!(
            metric(bcb, &format!("domain.{domain}.pass_at_1")),
            figure["pass_at_1"].as_f64().unwrap()
        );
    }
    assert!(
        metric(bcb, "library.os.tasks") >= 1.0,
        "{:#}",
        bcb["metrics"]
    );
    let summary = common::read_json(&bigcodebench.join("summary.json"));
    assert_eq!(
        metric(bcb, "tokens.prompt"),
        summary["tokens"]["prompt_tokens"].as_f64().unwrap()
    );
    assert!(metric(bcb, "tokens.completion") > 0.0);
    assert_eq!(
        metric(bcb, "cost_usd"),
        summary["cost_usd"].as_f64().unwrap()
    );
    assert!(metric(bcb, "cost_usd") > 0.0);
    assert_eq!(
        metric(bcb, "pass_at_1_infra_as_fail"),
        summary["pass_at_k_infra_as_fail"]["pass@1"]
            .as_f64()
            .unwrap()
    );
    assert_eq!(
        metric(bcb, "wall_seconds"),
        summary["wall_seconds"].as_f64().unwrap()
    );
    assert_eq!(
        bcb["artifacts"],
        serde_json::json!([
            "manifest.json",
            "report.html",
            "results.jsonl",
            "summary.json"
        ])
    );
    assert!(
        bcb["report"].as_str().unwrap().contains("assay report"),
        "{}",
        bcb["report"]
    );

    // The PyBench replay: its categories and both ways of checking.
    let pyb = run_named(&read, "/pyb");
    let summary = common::read_json(&pybench.join("summary.json"));
    assert_eq!(pyb["params"]["benchmark"], "pybench");
    assert_eq!(pyb["params"]["model"], "replay:trajectory");
    assert!(pyb["name"]
        .as_str()
        .unwrap()
        .starts_with("pybench replay:trajectory "));
    assert_eq!(metric(pyb, "pass_at_1"), 0.5);
    assert_eq!(
        metric(pyb, "faithful.pass_rate"),
        summary["faithful"]["pass_rate"].as_f64().unwrap()
    );
    assert_eq!(
        metric(pyb, "fixed.pass_rate_judged"),
        summary["fixed"]["pass_rate_judged"].as_f64().unwrap()
    );
    for (category, figure) in summary["faithful"]["categories"].as_object().unwrap() {
        assert_eq!(
            metric(pyb, &format!("faithful.category.{category}.pass_rate")),
            figure["pass_rate"].as_f64().unwrap()
        );
    }
    assert!(
        pyb["metrics"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with("category.")),
        "{:#}",
        pyb["metrics"]
    );
    assert_eq!(
        pyb["artifacts"],
        serde_json::json!([
            "manifest.json",
            "report.html",
            "results.jsonl",
            "summary.json"
        ])
    );

    // Again: the same two MLflow runs, updated, their figures the same and no metric point
    // added.
    let second = export(&["bcb", &pybench.display().to_string()]);
    let said = text(&second.stderr);
    assert!(second.status.success(), "{said}");
    let second_runs = exported(&said, "mlflow");
    assert_eq!(
        second_runs
            .iter()
            .map(|(_, id, how)| (id, how.as_str()))
            .collect::<Vec<_>>(),
        first_runs
            .iter()
            .map(|(_, id, _)| (id, "updated"))
            .collect::<Vec<_>>(),
        "{said}"
    );
    let again = python_json(&python, MLFLOW_READER, &[&server.uri, "assay-tests"]);
    assert_eq!(again.as_array().unwrap().len(), 2, "{again:#}");
    for name in ["/bcb", "/pyb"] {
        let (before, after) = (run_named(&read, name), run_named(&again, name));
        assert_eq!(after["run_id"], before["run_id"]);
        assert_eq!(after["params"], before["params"]);
        assert_eq!(after["metrics"], before["metrics"]);
        assert_eq!(after["artifacts"], before["artifacts"]);
        assert_eq!(after["history"], 1, "{name}: no second point");
    }

    // The PyBench run's summary rewritten with a lower figure and its time kept, as `assay
    // judge pybench` rewrites it: the lower value is what MLflow shows after a third export
    // (MLflow's latest of two points at one time is the larger), in the same run.
    let summary_path = pybench.join("summary.json");
    let modified = std::fs::metadata(&summary_path)
        .unwrap()
        .modified()
        .unwrap();
    let mut summary = common::read_json(&summary_path);
    let before = summary["faithful"]["pass_rate"].as_f64().unwrap();
    assert!(before > 0.0, "{summary:#}");
    summary["faithful"]["pass_rate"] = Value::from(0.0);
    // And a figure gone: MLflow keeps its last value, the export says so.
    assert!(summary["average_turns_raw"].is_number(), "{summary:#}");
    summary["average_turns_raw"] = Value::Null;
    std::fs::write(&summary_path, summary.to_string()).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&summary_path)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    let third = export(&["pyb"]);
    let said = text(&third.stderr);
    assert!(third.status.success(), "{said}");
    assert!(
        said.contains("cannot delete a metric: average_turns_raw"),
        "{said}"
    );
    assert_eq!(exported(&said, "mlflow")[0].2, "updated", "{said}");
    let last = python_json(&python, MLFLOW_READER, &[&server.uri, "assay-tests"]);
    assert_eq!(last.as_array().unwrap().len(), 2, "{last:#}");
    let pyb = run_named(&last, "/pyb");
    assert_eq!(pyb["run_id"], run_named(&read, "/pyb")["run_id"]);
    assert_eq!(
        metric(pyb, "faithful.pass_rate"),
        0.0,
        "the new, lower value"
    );
    assert_eq!(pyb["history"], 1, "an unchanged metric is not logged again");
    let listed: Vec<String> =
        serde_json::from_str(pyb["tags"]["assay.metrics"].as_str().unwrap()).unwrap();
    assert!(
        listed.iter().any(|m| m == "faithful.pass_rate"),
        "{listed:?}"
    );
    assert!(
        !listed.iter().any(|m| m == "average_turns_raw"),
        "{listed:?}"
    );

    // A second MLflow run with the run's key, deleted: the active one is updated, and the
    // export says there are two.
    let key = pyb["tags"]["assay.run_key"].as_str().unwrap();
    let other = python_json(&python, DUPLICATE, &[&server.uri, "assay-tests", key]);
    let fourth = export(&["pyb"]);
    let said = text(&fourth.stderr);
    assert!(fourth.status.success(), "{said}");
    assert_eq!(
        exported(&said, "mlflow")[0].1,
        pyb["run_id"].as_str().unwrap(),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "2 MLflow runs carry the tag assay.run_key = {key}"
        )) && said.contains(other.as_str().unwrap()),
        "{said}"
    );
    drop(server);
}

#[test]
fn mlflow_without_a_tracking_server_is_a_clear_error_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = assay_command(dir.path())
        .args(["export", "--to", "mlflow", "missing-run"])
        .env_remove("MLFLOW_TRACKING_URI")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let said = text(&out.stderr);
    assert!(
        said.contains(
            "no MLflow tracking server: give --tracking-uri URI or set MLFLOW_TRACKING_URI"
        ),
        "{said}"
    );
}

#[test]
fn an_mlflow_server_that_is_down_is_said_in_a_line_within_the_retries_the_user_set() {
    let dir = tempfile::tempdir().unwrap();
    // The reference solutions of one task: a run without a model.
    let ran = assay(
        &[
            "run",
            "bigcodebench-hard",
            "--tasks",
            RIGHT,
            "--profile",
            "test",
            "--jobs",
            "1",
            "--out",
            "reference",
        ],
        dir.path(),
    );
    assert!(ran.status.success(), "{}", text(&ran.stderr));
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let started = Instant::now();
    // A URI with a user name and password: neither is printed.
    let out = assay_command(dir.path())
        .args(["export", "--to", "mlflow", "reference", "--tracking-uri"])
        .arg(format!("http://someone:pass-5e1c@127.0.0.1:{port}"))
        .env("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
        .output()
        .unwrap();
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("the mlflow uploader exited with exit status: 1")
            && said.contains("Connection refused"),
        "{said}"
    );
    assert!(
        said.contains("reference: not answered: the mlflow uploader exited with"),
        "{said}"
    );
    assert!(!said.contains("pass-5e1c"), "{said}");
    assert!(!said.contains("Traceback"), "{said}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "no retries asked for, yet it took {:?}",
        started.elapsed()
    );

    // A server that wants a token gets the one assay was started with: assay keeps it out of
    // its own environment (as it keeps the providers' keys) and hands it to the uploader alone.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = heads.clone();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            seen.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&head).to_lowercase());
            let _ = stream.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    let out = assay_command(dir.path())
        .args(["export", "--to", "mlflow", "reference", "--tracking-uri"])
        .arg(format!("http://127.0.0.1:{port}"))
        .env("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
        .env("MLFLOW_TRACKING_TOKEN", "Tracker-Token-3f9a")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let heads = heads.lock().unwrap();
    assert!(!heads.is_empty(), "the uploader asked the server nothing");
    assert!(
        heads
            .iter()
            .all(|h| h.contains("authorization: bearer tracker-token-3f9a")),
        "{heads:?}"
    );
}

/// What wandb's own reader of offline runs (`wandb leet inspect`, over the run's `.wandb`
/// transaction log) finds in the run directory `run`: the run's state, name, project, config
/// and summary (`--summary --json`), and the files of each artifact it logged (from the
/// records, `--json`).
fn wandb_read(run: &Path) -> Value {
    let wandb = wandb_env().dir.join("bin/wandb");
    let inspect = |args: &[&str]| {
        let out = child_env::command(&wandb, Inherit::Tools)
            .args(["leet", "inspect"])
            .args(args)
            .arg(run)
            .stdin(Stdio::null())
            .output()
            .expect("run wandb leet inspect");
        assert!(
            out.status.success(),
            "wandb could not read {}:\n{}",
            run.display(),
            text(&out.stderr)
        );
        text(&out.stdout)
    };
    let mut read: Value = serde_json::from_str(&inspect(&["--summary", "--json"]))
        .expect("wandb leet inspect --summary --json prints JSON");
    let artifacts: Vec<Value> = inspect(&["--json"])
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a record as JSON"))
        .filter(|r| r["type"] == "artifact")
        .map(|r| {
            let files: Vec<&Value> = r["artifact"]["manifest"]["contents"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| &f["path"])
                .collect();
            serde_json::json!({"name": r["artifact"]["name"], "type": r["artifact"]["type"],
                               "files": files})
        })
        .collect();
    read["artifacts"] = Value::from(artifacts);
    read
}

#[test]
fn wandb_offline_gets_one_run_per_assay_run_and_a_second_export_keeps_its_id() {
    let dir = tempfile::tempdir().unwrap();
    let bigcodebench = bigcodebench_run(dir.path(), "bcb");
    let pybench = pybench_run(dir.path(), "pyb");
    // W&B's folders all in the test's: its runs, and the copies of the files it stages for a
    // later `wandb sync`.
    let wandb_dir = dir.path().join("wandb-runs");
    std::fs::create_dir(&wandb_dir).unwrap();
    let export = || {
        let out = assay_command(dir.path())
            .args([
                "export",
                "--to",
                "wandb",
                "bcb",
                "pyb",
                "--project",
                "assay-tests",
            ])
            .env("WANDB_MODE", "offline")
            .env("WANDB_DIR", &wandb_dir)
            .env("WANDB_DATA_DIR", dir.path().join("wandb-data"))
            .env("WANDB_CACHE_DIR", dir.path().join("wandb-cache"))
            .env("WANDB_CONFIG_DIR", dir.path().join("wandb-config"))
            .env_remove("WANDB_API_KEY")
            .output()
            .unwrap();
        let said = text(&out.stderr);
        assert!(out.status.success(), "{said}");
        let runs = exported(&said, "wandb");
        assert_eq!(runs.len(), 2, "{said}");
        assert!(runs.iter().all(|(_, _, how)| how == "offline"), "{said}");
        // Offline, each export is a run directory to `wandb sync`, named where it went.
        let dirs: Vec<String> = said
            .lines()
            .filter(|l| l.contains(" -> wandb run "))
            .map(|l| l.rsplit(": ").next().unwrap().to_string())
            .collect();
        (runs, dirs)
    };
    let (first, first_dirs) = export();
    let read: Vec<Value> = first_dirs
        .iter()
        .map(|d| wandb_read(Path::new(d)))
        .collect();
    let [bcb, pyb] = [&read[0], &read[1]];
    assert_eq!(bcb["run_id"], first[0].1.as_str());
    assert_eq!(pyb["run_id"], first[1].1.as_str());
    assert_eq!(bcb["state"], "finished");
    assert_eq!(bcb["project"], "assay-tests");
    assert!(
        bcb["name"]
            .as_str()
            .unwrap()
            .starts_with("bigcodebench-hard-complete openai:mock-model "),
        "{bcb:#}"
    );
    // The parameters and the tags, in the config.
    assert_eq!(bcb["config"]["benchmark"], "bigcodebench-hard");
    assert_eq!(bcb["config"]["identity.model"], "openai:mock-model");
    assert_eq!(bcb["config"]["assay.run_key"], first[0].1.as_str());
    assert_eq!(pyb["config"]["benchmark"], "pybench");
    assert_eq!(bcb["config"]["identity.dataset"], "v0.1.4");
    // The figures, in the summary, as the report computes them.
    let figures = report(&bigcodebench);
    for (field, name) in [
        ("value", "pass_at_1"),
        ("low", "pass_at_1_low"),
        ("high", "pass_at_1_high"),
    ] {
        assert_eq!(
            bcb["summary"][name].as_f64(),
            figures["pass_at_k"]["1"][field].as_f64(),
            "{name}"
        );
    }
    // W&B's names: `_` for `.`, `:` and spaces.
    assert_eq!(bcb["summary"]["samples_infra"], 1.0);
    assert_eq!(bcb["summary"]["samples_oom"], 0.0);
    assert!(bcb["summary"].get("samples.infra").is_none(), "{bcb:#}");
    assert!(bcb["summary"]["cost_usd"].as_f64().unwrap() > 0.0);
    let summary = common::read_json(&pybench.join("summary.json"));
    assert_eq!(
        pyb["summary"]["fixed_pass_rate"].as_f64(),
        summary["fixed"]["pass_rate"].as_f64()
    );
    // The files, as an artifact of the run.
    for run in [bcb, pyb] {
        assert_eq!(
            run["artifacts"][0]["files"],
            serde_json::json!([
                "manifest.json",
                "report.html",
                "results.jsonl",
                "summary.json"
            ]),
            "{run:#}"
        );
        assert_eq!(run["artifacts"][0]["type"], "assay-run");
    }

    // Again: the same run ids, so that `wandb sync` of both exports makes one run of each.
    let (second, second_dirs) = export();
    assert_eq!(
        second.iter().map(|(_, id, _)| id).collect::<Vec<_>>(),
        first.iter().map(|(_, id, _)| id).collect::<Vec<_>>()
    );
    assert_ne!(
        second_dirs, first_dirs,
        "offline, each export is a run directory of its own"
    );
    for (dir, before) in second_dirs.iter().zip(&read) {
        let after = wandb_read(Path::new(dir));
        assert_eq!(after["run_id"], before["run_id"]);
        assert_eq!(after["name"], before["name"]);
        assert_eq!(after["config"], before["config"]);
        for (name, value) in before["summary"].as_object().unwrap() {
            if !name.starts_with('_') {
                assert_eq!(&after["summary"][name], value, "{name}");
            }
        }
    }

    // W&B disabled: nothing logged, and said so.
    let out = assay_command(dir.path())
        .args(["export", "--to", "wandb", "bcb", "--project", "assay-tests"])
        .env("WANDB_MODE", "disabled")
        .env("WANDB_DIR", &wandb_dir)
        .env("WANDB_CONFIG_DIR", dir.path().join("wandb-config"))
        .output()
        .unwrap();
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("W&B is disabled (WANDB_MODE=disabled): nothing was logged"),
        "{said}"
    );
    assert!(
        said.contains("bcb: not answered: the wandb uploader exited with"),
        "{said}"
    );
}
