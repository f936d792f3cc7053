//! The `assay` binary as the tests run it: on a cache root of the test process's own, so that
//! a test neither depends on what a user's cache (`~/.cache/assay`) holds nor changes it.
//!
//! The root lives under the build's scratch space (`CARGO_TARGET_TMPDIR`), not under `/tmp`,
//! which jobs see replaced by their own: the sandbox refuses an interpreter or a worker runtime
//! there. The ground-truth cache and the worker runtime are written in it. The Python
//! environments are the user's, shared read-only: `envs` is a symlink to the user's `envs`
//! directory, where the `test` environment is set up first (as the other crates' tests do), so
//! that `assay` finds it complete and never installs anything. Through the symlink the
//! interpreter's `sys.prefix` is the symlink's path, which the sandbox binds like any other.

#![allow(dead_code)]

pub mod browser;
pub mod llama;
pub mod service;
pub mod viewer;

use std::fs::File;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use assay_pyenv::{Environment, Interpreter, Profile, SilentObserver};
use assay_tasks::bigcodebench::{Dataset, Subset, Task};
use serde_json::{json, Value};

/// `assay`, to be run in `dir` with this test process's cache root, and without the variables
/// a surrounding cluster job sets ([`CLUSTER_VARS`]): a test that wants one sets it after.
pub fn assay_command(dir: &Path) -> Command {
    // Started as a user starts it, with the test's environment (assay's own children are what
    // `child_env` governs).
    #[allow(clippy::disallowed_methods)]
    let mut command = Command::new(env!("CARGO_BIN_EXE_assay"));
    command
        .current_dir(dir)
        .env("ASSAY_CACHE_DIR", cache_root());
    without_cluster_vars(&mut command);
    command
}

/// The engine most tests judge on: the small `test` environment, two CPU slots.
pub const TEST_ENGINE: &[&str] = &["--profile", "test", "--jobs", "2"];

/// What assay takes its shard from when `--shard` is not given: a Slurm array task's
/// variables, a Kubernetes Indexed Job's index, and the shard count. Tests run inside such a
/// job (CI on a cluster) would otherwise run every `assay` as one shard of it.
pub const CLUSTER_VARS: [&str; 7] = [
    "ASSAY_SHARD_COUNT",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_MAX",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_STEP",
    "JOB_COMPLETION_INDEX",
];

/// `command` without [`CLUSTER_VARS`] (an `.env(...)` after this still sets one).
pub fn without_cluster_vars(command: &mut Command) -> &mut Command {
    for var in CLUSTER_VARS {
        command.env_remove(var);
    }
    command
}

/// `<CARGO_TARGET_TMPDIR>/assay-cli-cache/<pid>`, made on first use (roots of test processes
/// that have ended are removed then).
pub fn cache_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let env = set_up("test");
        let shared = env.dir.parent().expect("the environments directory");

        let parent = Path::new(env!("CARGO_TARGET_TMPDIR")).join("assay-cli-cache");
        for entry in std::fs::read_dir(&parent).into_iter().flatten().flatten() {
            let pid = entry.file_name().to_string_lossy().into_owned();
            if !Path::new("/proc").join(&pid).exists() {
                // Removes the `envs` and `agents` symlinks, never what they point to.
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let root = parent.join(std::process::id().to_string());
        let _ = std::fs::remove_dir_all(&root); // a reused pid's leftovers
        std::fs::create_dir_all(&root).expect("create the tests' cache root");
        std::os::unix::fs::symlink(shared, root.join("envs")).expect("link the environments");
        // Installed coding agents are shared the same way (hundreds of MB from npm and PyPI).
        let agents = shared.with_file_name("agents");
        std::fs::create_dir_all(&agents).expect("create the agents directory");
        std::os::unix::fs::symlink(&agents, root.join("agents")).expect("link the agents");
        root
    })
}

/// The `pybench` environment, set up in the shared environments directory first (once, under
/// its lock), so that `assay run pybench` finds it complete.
pub fn pybench_env() -> Environment {
    static ENV: OnceLock<Environment> = OnceLock::new();
    ENV.get_or_init(|| set_up("pybench")).clone()
}

/// The `inspect` environment (inspect_ai, pinned), set up in the shared environments directory
/// first: the reader every export is checked with.
pub fn inspect_env() -> Environment {
    static ENV: OnceLock<Environment> = OnceLock::new();
    ENV.get_or_init(|| set_up("inspect")).clone()
}

/// The `mlflow-server` environment (the whole of MLflow, pinned), set up in the shared
/// environments directory first: the tracking server every MLflow export is checked against,
/// and the client it is read back with.
pub fn mlflow_server_env() -> Environment {
    static ENV: OnceLock<Environment> = OnceLock::new();
    ENV.get_or_init(|| set_up("mlflow-server")).clone()
}

/// The `wandb` environment (the Weights & Biases client, pinned), set up in the shared
/// environments directory first: the reader every offline W&B export is checked with.
pub fn wandb_env() -> Environment {
    static ENV: OnceLock<Environment> = OnceLock::new();
    ENV.get_or_init(|| set_up("wandb")).clone()
}

/// The environment of `profile` in the user's environments directory, set up if it is not.
fn set_up(profile: &str) -> Environment {
    let profile = Profile::by_name(profile).expect("a known profile");
    let interpreter = Interpreter::discover(None).expect("a Python 3.11 interpreter");
    let env = Environment::locate(profile, interpreter).expect("locate the environment");
    env.ensure(&SilentObserver)
        .unwrap_or_else(|e| panic!("set up the `{}` environment: {e}", profile.name));
    env
}

/// The shared PyBench data (`../shared/data/pybench`, read in place: its license is unknown).
pub fn pybench_data() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/pybench");
    assert!(
        dir.join("data/meta/task.json").is_file(),
        "the shared PyBench data is missing: expected it at {}",
        dir.display()
    );
    dir
}

/// A JSON file, read (a panic names the file).
/// BigCodeBench-Hard as embedded (v0.1.4).
pub fn hard() -> Dataset {
    Dataset::embedded("v0.1.4", Subset::Hard).unwrap()
}

/// The Hard task `id`.
pub fn hard_task(id: &str) -> Task {
    hard().get(id).unwrap().clone()
}

/// `code` as a chat model answers it: in a fenced block after a sentence.
pub fn fenced(code: &str) -> String {
    format!("Here it is:\n\n```python\n{code}\n```\n")
}

/// The Hard task a chat request is about, found by its Complete or Instruct prompt in the
/// first message ("" when none is).
pub fn asked_about(body: &Value) -> String {
    let message = body["messages"][0]["content"].as_str().unwrap_or_default();
    hard()
        .tasks
        .iter()
        .find(|t| {
            message.contains(t.complete_prompt.trim()) || message.contains(t.instruct_prompt.trim())
        })
        .map(|t| t.task_id.clone())
        .unwrap_or_default()
}

/// The query of a PyBench request: its third message (system, [INFO], query).
pub fn query(body: &Value) -> String {
    body["messages"][2]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// PyBench task 3's answer: it dedups the CSV into ./output/3.csv.
pub const PYBENCH_DEDUP: &str = "import pandas as pd\ndf = pd.read_csv('./data/Week 40 - US Christmas Tree Sales - 2010 to 2016.csv')\ndf.drop_duplicates().to_csv('./output/3.csv', index=False)\nprint('rows', len(df))";

/// `assay run pybench --model MODEL --base-url BASE` on the shared data for `tasks`, into
/// `out`, with `rest`, the provider's key (`key`: variable and value) in its environment; the
/// `pybench` environment is set up first.
pub fn run_pybench(
    model: &str,
    base: &str,
    tasks: &str,
    out: &Path,
    rest: &[&str],
    key: (&str, &str),
    dir: &Path,
) -> Output {
    pybench_env();
    let data = pybench_data().display().to_string();
    let out = out.display().to_string();
    let mut args = vec![
        "run",
        "pybench",
        "--model",
        model,
        "--base-url",
        base,
        "--data",
        &data,
        "--tasks",
        tasks,
        "--out",
        &out,
    ];
    args.extend_from_slice(rest);
    assay_command(dir)
        .args(&args)
        .env(key.0, key.1)
        .output()
        .expect("run assay")
}

pub fn read_json(path: &Path) -> serde_json::Value {
    let content =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&content).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Two run directories hold the same judging (a merge of shards and the single run, a run and
/// the evaluation of its answers): the same official verdicts (`eval_results.json`'s `eval`),
/// `pass_at_k.json`, `samples.jsonl`, and each sample's task and status in order.
pub fn assert_same_judging(merged: &Path, whole: &Path) {
    assert_eq!(
        read_json(&merged.join("eval_results.json"))["eval"],
        read_json(&whole.join("eval_results.json"))["eval"],
        "the merged verdicts differ from the single run's"
    );
    assert_eq!(
        read_json(&merged.join("pass_at_k.json")),
        read_json(&whole.join("pass_at_k.json"))
    );
    assert_eq!(
        std::fs::read_to_string(merged.join("samples.jsonl")).unwrap(),
        std::fs::read_to_string(whole.join("samples.jsonl")).unwrap()
    );
    let indexes = |dir: &Path| -> Vec<u64> {
        lines(&dir.join("results.jsonl"))
            .iter()
            .map(|r| r["index"].as_u64().unwrap_or(u64::MAX))
            .collect()
    };
    assert_eq!(indexes(merged), indexes(whole));
    let statuses = |dir: &Path| task_statuses(&dir.join("results.jsonl"));
    assert_eq!(statuses(merged), statuses(whole));
}

/// Bytes as text, for messages.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Each record's task and status in a `results.jsonl`, in file order.
pub fn task_statuses(results: &Path) -> Vec<(String, String)> {
    lines(results)
        .iter()
        .map(|r| {
            let field = |k: &str| r[k].as_str().unwrap_or_default().to_string();
            (field("task_id"), field("status"))
        })
        .collect()
}

/// A JSON-lines file's records.
pub fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// One of the official BigCodeBench-Hard Complete results files of the shared data
/// (`checkpoint-200` or `checkpoint-400`).
pub fn official_results(checkpoint: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/bigcodebench/official-runs")
        .join(format!(
            "{checkpoint}--main--bigcodebench-hard-complete--vllm-0-1-sanitized_calibrated_eval_results.json"
        ))
}

/// BigCodeBench/`number` of dataset v0.1.4.
pub fn task(number: u32) -> Task {
    Dataset::embedded("v0.1.4", Subset::Full)
        .unwrap()
        .get(&format!("BigCodeBench/{number}"))
        .unwrap()
        .clone()
}

/// `rows` (`{task_id, solution}`) as a samples file in `dir`, named as the official harness
/// names one (`model--bigcodebench-complete--x.jsonl`).
pub fn write_answers(dir: &Path, rows: &[Value]) -> PathBuf {
    let path = dir.join("model--bigcodebench-complete--x.jsonl");
    let lines: Vec<String> = rows.iter().map(Value::to_string).collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// `samples.jsonl` in `dir`: for each BigCodeBench task numbered in `tasks`, its reference
/// solution and a wrong answer (its prompt, returning `None`). The task ids, as `--tasks` takes
/// them.
pub fn write_samples(dir: &Path, tasks: &[u32]) -> String {
    let data = Dataset::embedded("v0.1.4", Subset::Full).unwrap();
    let mut samples = Vec::new();
    for n in tasks {
        let id = format!("BigCodeBench/{n}");
        let task = data.get(&id).unwrap();
        samples.push(json!({"task_id": id, "solution": task.reference_solution()}));
        samples.push(json!({"task_id": id, "solution": format!("{}\n    return None\n", task.complete_prompt)}));
    }
    let rows: Vec<String> = samples.iter().map(Value::to_string).collect();
    std::fs::write(dir.join("samples.jsonl"), rows.join("\n") + "\n").unwrap();
    tasks
        .iter()
        .map(|n| format!("BigCodeBench/{n}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Runs `command` to its end within `limit`, its output gathered in files (so that nothing
/// blocks on a full pipe); `None` when it did not end in time (it is killed then).
pub fn run_bounded(command: &mut Command, limit: Duration) -> Option<Output> {
    let (stdout, stderr) = (tempfile::tempfile().unwrap(), tempfile::tempfile().unwrap());
    let mut child = command
        .stdin(Stdio::null())
        .stdout(stdout.try_clone().unwrap())
        .stderr(stderr.try_clone().unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("start {command:?}: {e}"));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |mut file: File| {
        let mut bytes = Vec::new();
        file.rewind().unwrap();
        file.read_to_end(&mut bytes).unwrap();
        bytes
    };
    Some(Output {
        status,
        stdout: read(stdout),
        stderr: read(stderr),
    })
}

/// Where `program` is on `PATH` (daemons live in `/usr/sbin`, which a user's `PATH` may lack,
/// so that is searched too, with `/usr/bin` and `/sbin`).
pub fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/bin".into(), "/sbin".into()])
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// How long `apt-get install` may take.
const APT_INSTALL_WAIT: Duration = Duration::from_secs(600);
/// How long `apt-get update` may take.
const APT_UPDATE_WAIT: Duration = Duration::from_secs(300);

/// Makes sure every one of `programs` is there ([`find_program`]): when one is not, installs
/// Debian's `packages` with apt-get (as root, as CI runs), the package lists refreshed first
/// when the install fails without them, each step bounded in time. Panics naming what is
/// still missing and what apt-get said. How long the install took, if one was needed.
pub fn apt_install(packages: &[&str], programs: &[&str]) -> Option<Duration> {
    let missing = || -> Vec<&str> {
        programs
            .iter()
            .copied()
            .filter(|p| find_program(p).is_none())
            .collect()
    };
    if missing().is_empty() {
        return None;
    }
    let started = Instant::now();
    // A system package manager, run as a user runs it.
    #[allow(clippy::disallowed_methods)]
    let apt_get = || Command::new(find_program("apt-get").unwrap_or_else(|| "apt-get".into()));
    let install = || {
        run_bounded(
            apt_get()
                .args(["install", "-y", "--no-install-recommends"])
                .args(packages)
                .env("DEBIAN_FRONTEND", "noninteractive"),
            APT_INSTALL_WAIT,
        )
    };
    let mut installed = install();
    if installed.as_ref().is_none_or(|o| !o.status.success()) {
        let _ = run_bounded(apt_get().arg("update"), APT_UPDATE_WAIT);
        installed = install();
    }
    let still = missing();
    assert!(
        still.is_empty(),
        "{still:?} could not be had: not on PATH, and `apt-get install {}` (as root) did not \
         provide them: {}",
        packages.join(" "),
        installed.map_or(
            format!("apt-get did not finish within {APT_INSTALL_WAIT:?}"),
            |o| format!("{}{}", text(&o.stdout), text(&o.stderr))
        )
    );
    Some(started.elapsed())
}

/// Writes the small PyBench case the LLM-judge tests judge into `dir`, with Python as
/// upstream's runner writes trajectories (`json.dumps(record, ensure_ascii=False)`, keys in
/// upstream's order): `run.jsonl`, short trajectories of tasks 7, 28, 29, 32 and 113 (the
/// shared data's opening messages and one final reply each, so the checks say: 7 and 28
/// pass, 29 and 32 fail), none for 132; and `reference.jsonl`, the same line for 7, the
/// shared recordings of 28, 29, 32 and 132, none for 113. Gives both paths.
pub fn judge_case(dir: &Path) -> (PathBuf, PathBuf) {
    const CRAFT: &str = r#"
import json, sys
shared, out = sys.argv[1], sys.argv[2]
lines = {json.loads(l)["index"]: l for l in open(shared, encoding="utf-8")}
def short(index, final, like=None):
    record = json.loads(lines[like or index])
    record["messages"] = record["messages"][:3] + [{"role": "assistant", "content": final}]
    record["index"] = index
    return json.dumps(record, ensure_ascii=False) + "\n"
run = [short("7", "Finished: 48 38 32 26 23 15 10 2 1"), short("28", "Finished: the year is 2017"),
       short("29", "Finished: M"), short("32", "Finished: 12"), short("113", "Finished: done", like="28")]
reference = [run[0], lines["28"], lines["29"], lines["32"], lines["132"]]
open(out + "/run.jsonl", "w", encoding="utf-8").write("".join(run))
open(out + "/reference.jsonl", "w", encoding="utf-8").write("".join(reference))
"#;
    let shared = pybench_data().join("trajectory.jsonl");
    #[allow(clippy::disallowed_methods)]
    let done = Command::new("python3")
        .args(["-c", CRAFT])
        .arg(&shared)
        .arg(dir)
        .output()
        .expect("run python3");
    assert!(done.status.success(), "{}", text(&done.stderr));
    (dir.join("run.jsonl"), dir.join("reference.jsonl"))
}
