//! `assay run pybench` and `assay eval pybench` as a user runs them, on the shared PyBench data,
//! with upstream's own tests.py (run in the sandbox) as the oracle for the faithful verdicts.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use assay_sandbox::{Engine, EngineConfig, InputFile, IsolationMode, Limits, ScriptJob, Status};
use common::{assay_command, lines, pybench_data, pybench_env, text};
use serde_json::Value;

fn assay(args: &[&str], dir: &Path) -> Output {
    pybench_env();
    assay_command(dir).args(args).output().expect("run assay")
}

fn index(record: &Value) -> String {
    record["task_id"]
        .as_str()
        .unwrap()
        .trim_start_matches("PyBench/")
        .to_string()
}

/// Everything under `dir`, as (path relative to `dir`, bytes): files, and folders as their
/// path with a trailing `/` (and no bytes), so that empty ones are kept.
fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            if path.is_dir() {
                found.push((format!("{rel}/"), Vec::new()));
                stack.push(path);
            } else {
                found.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    found
}

/// Upstream's tests.py on `indices`, over `trajectories` and `outputs` (each `output/...`),
/// run in the sandbox (it unpickles what the episodes wrote): index → "pass" or "fail".
fn oracle(
    trajectories: &Path,
    outputs: Vec<(String, Vec<u8>)>,
    indices: &[String],
) -> BTreeMap<String, String> {
    let data = pybench_data();
    let env = pybench_env();
    let mut files = vec![
        InputFile {
            path: "tests.py".into(),
            data: std::fs::read(data.join("data/unit_test/tests.py")).unwrap(),
        },
        InputFile {
            path: "trajectory.jsonl".into(),
            data: std::fs::read(trajectories).unwrap(),
        },
    ];
    // The reference inputs the image checks read: data/<n>.jpeg.
    for entry in std::fs::read_dir(data.join("data")).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".jpeg") {
            files.push(InputFile {
                path: format!("data/{name}"),
                data: std::fs::read(entry.path()).unwrap(),
            });
        }
    }
    // Folders (empty ones too) are made by the oracle script from dirs.json.
    let (dirs, outputs): (Vec<_>, Vec<_>) =
        outputs.into_iter().partition(|(p, _)| p.ends_with('/'));
    let dirs: Vec<String> = dirs.into_iter().map(|(p, _)| p).collect();
    files.push(InputFile {
        path: "dirs.json".into(),
        data: serde_json::to_vec(&dirs).unwrap(),
    });
    files.extend(
        outputs
            .into_iter()
            .map(|(path, data)| InputFile { path, data }),
    );
    let mut job = ScriptJob::new(include_str!("data/pybench_oracle.py"));
    job.argv = vec![indices.join(",")];
    job.files = files;
    job.limits = Some(Limits {
        wall: std::time::Duration::from_secs(600),
        ..Limits::default()
    });
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let outcome = runtime.block_on(async {
        let mut config = EngineConfig::new(env.python());
        config.preload = env.profile.preload_modules();
        config.isolation = IsolationMode::Strict;
        config.runtime_dir = Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("assay-runtime"));
        let engine = Engine::start(config).await.expect("engine");
        engine.run_script(job).await
    });
    assert_eq!(
        outcome.status,
        Status::Pass,
        "{}: {}",
        outcome.reason,
        outcome.stderr.text
    );
    let verdicts = outcome
        .files
        .iter()
        .find(|f| f.path == "verdicts.json")
        .expect("the oracle wrote its verdicts");
    serde_json::from_slice(&verdicts.data).unwrap()
}

#[test]
fn replayed_trajectories_get_upstreams_verdicts_on_the_same_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let data = pybench_data();
    let shared = data.join("trajectory.jsonl");
    let out = dir.path().join("replay");
    let done = assay(
        &[
            "run",
            "pybench",
            "--model",
            &format!("replay:{}", shared.display()),
            "--data",
            &data.display().to_string(),
            "--jobs",
            "2",
            "--out",
            &out.display().to_string(),
        ],
        dir.path(),
    );
    assert!(done.status.success(), "{}", text(&done.stderr));
    let stdout = text(&done.stdout);
    assert!(stdout.contains("pybench: 143 tasks"), "{stdout}");
    let records = lines(&out.join("results.jsonl"));
    assert_eq!(records.len(), 143);
    // Infra: exactly the tasks whose inputs are missing here, that need the internet, or
    // that the recording lacks; each says why.
    let infra: BTreeMap<String, String> = records
        .iter()
        .filter(|r| r["status"] == "infra")
        .map(|r| (index(r), r["reason"].as_str().unwrap().to_string()))
        .collect();
    for (task, cause) in [
        ("13", "input data/action.csv is missing"),
        ("142", "input data/Geoffrey Hinton.pdf is missing"),
        ("128", "needs the internet"),
        ("129", "needs the internet"),
        ("98", "no trajectory for this task"),
        ("113", "no trajectory for this task"),
    ] {
        assert!(
            infra.get(task).is_some_and(|r| r.contains(cause)),
            "{task}: {:?}",
            infra.get(task)
        );
    }
    assert_eq!(infra.len(), 23, "{infra:?}");
    let trajectories = lines(&out.join("trajectory.jsonl"));
    assert_eq!(trajectories.len(), 143 - 23);
    assert!(trajectories[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .starts_with("You are an AI Agent"));

    // Upstream's tests over the same messages and the same files, merged into one ./output/.
    let mut outputs = Vec::new();
    for entry in std::fs::read_dir(out.join("tasks")).unwrap().flatten() {
        for (path, bytes) in files_under(&entry.path().join("output")) {
            outputs.push((format!("output/{path}"), bytes));
        }
    }
    let judged: Vec<String> = records
        .iter()
        .filter(|r| r["status"] != "infra")
        .map(index)
        .collect();
    // The same folder given to `assay eval pybench --outputs`, as upstream's ./output/ is.
    let merged = dir.path().join("merged");
    for (path, bytes) in &outputs {
        let target = merged.join(path.trim_start_matches("output/"));
        if path.ends_with('/') {
            std::fs::create_dir_all(&target).unwrap();
            continue;
        }
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, bytes).unwrap();
    }
    let upstream = oracle(&out.join("trajectory.jsonl"), outputs, &judged);
    let differ: Vec<String> = records
        .iter()
        .filter(|r| r["status"] != "infra")
        .filter(|r| r["verdicts"]["faithful"]["status"] != upstream[&index(r)].as_str())
        .map(|r| format!("{}: {}", index(r), r["verdicts"]["faithful"]))
        .collect();
    assert!(
        differ.is_empty(),
        "faithful verdicts unlike upstream's: {differ:?}"
    );
    let passed = upstream.values().filter(|v| *v == "pass").count();
    assert!(passed > 40, "{passed} of {} passed", judged.len());
    // Figures the cells displayed are files, named in their cells' records.
    let named: Vec<String> = records
        .iter()
        .flat_map(|r| r["cells"].as_array().unwrap().clone())
        .flat_map(|c| c["figures"].as_array().cloned().unwrap_or_default())
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    assert!(!named.is_empty());
    for figure in &named {
        let bytes = std::fs::read(out.join(figure)).unwrap();
        assert!(bytes.starts_with(b"\x89PNG"), "{figure}");
    }
}

#[test]
fn recorded_answers_get_upstreams_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let data = pybench_data();
    let shared = data.join("trajectory.jsonl");
    let out = dir.path().join("recorded");
    let done = assay(
        &[
            "eval",
            "pybench",
            "--trajectories",
            &shared.display().to_string(),
            "--data",
            &data.display().to_string(),
            "--out",
            &out.display().to_string(),
        ],
        dir.path(),
    );
    assert!(done.status.success(), "{}", text(&done.stderr));
    let records = lines(&out.join("results.jsonl"));
    assert_eq!(records.len(), 143);
    let checks: Value =
        serde_json::from_str(include_str!("../../assay-agent/data/pybench-checks.json")).unwrap();
    let recorded: Vec<String> = lines(&shared)
        .iter()
        .map(|t| t["index"].as_str().unwrap().to_string())
        .collect();
    let answer_only: Vec<String> = checks["tasks"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, c)| {
            c["faithful"]["kind"]
                .as_str()
                .unwrap()
                .starts_with("answer")
        })
        .map(|(i, _)| i.clone())
        .filter(|i| recorded.contains(i))
        .collect();
    assert_eq!(answer_only.len(), 34);
    let upstream = oracle(&shared, Vec::new(), &answer_only);
    let by_index: BTreeMap<String, &Value> = records.iter().map(|r| (index(r), r)).collect();
    for task in &answer_only {
        assert_eq!(
            by_index[task]["verdicts"]["faithful"]["status"],
            upstream[task].as_str(),
            "task {task}"
        );
    }
    assert_eq!(upstream.values().filter(|v| *v == "pass").count(), 15);
    // Without --outputs, a check that reads files cannot be made.
    let png = &by_index["16"];
    assert_eq!(png["status"], "infra");
    assert!(
        png["reason"].as_str().unwrap().contains("--outputs"),
        "{png}"
    );
    assert_eq!(by_index["98"]["status"], "infra", "no trajectory");
}

#[test]
fn bad_input_is_named_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let data = pybench_data();
    let shared = format!("replay:{}", data.join("trajectory.jsonl").display());
    let data_arg = data.display().to_string();
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(empty.join("data/meta")).unwrap();
    let broken = dir.path().join("broken");
    std::fs::create_dir_all(broken.join("data/meta")).unwrap();
    std::fs::write(
        broken.join("data/meta/task.json"),
        "[\n  {\"index\": \"2\", \"user\": \"q\"\n",
    )
    .unwrap();
    let bad_lines = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad_lines,
        "{\"index\": \"2\", \"messages\": []}\n{\"messages\": []}\n",
    )
    .unwrap();
    let twice = dir.path().join("twice.jsonl");
    std::fs::write(
        &twice,
        "{\"index\": \"2\", \"messages\": []}\n{\"index\": \"2\", \"messages\": []}\n",
    )
    .unwrap();
    let empty_arg = empty.display().to_string();
    let broken_arg = broken.display().to_string();
    let bad_arg = bad_lines.display().to_string();
    let twice_arg = twice.display().to_string();
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["run", "pybench", "--model", &shared, "--data", &empty_arg],
            format!("--data {empty_arg} holds no PyBench data (no data/meta/task.json there)"),
        ),
        (
            vec!["run", "pybench", "--model", &shared, "--data", &broken_arg],
            "task.json:3: not a JSON array of tasks".into(),
        ),
        (
            vec![
                "run", "pybench", "--model", &shared, "--data", &data_arg, "--tasks", "1000",
            ],
            "no task \"1000\"".into(),
        ),
        (
            vec![
                "eval",
                "pybench",
                "--trajectories",
                &bad_arg,
                "--data",
                &data_arg,
            ],
            "bad.jsonl:2: field `index` is missing".into(),
        ),
        (
            vec![
                "eval",
                "pybench",
                "--trajectories",
                &twice_arg,
                "--data",
                &data_arg,
            ],
            "twice.jsonl:2: field `index`: \"2\" appears again (first on line 1)".into(),
        ),
        (
            vec![
                "run",
                "pybench",
                "--model",
                &shared,
                "--protocol",
                "tools",
                "--data",
                &data_arg,
            ],
            "cannot be used with --protocol tools".into(),
        ),
    ];
    for (args, wanted) in cases {
        let done = assay(&args, dir.path());
        let stderr = text(&done.stderr);
        assert!(!done.status.success(), "{args:?} succeeded");
        assert!(stderr.contains(&wanted), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(
            !dir.path().join("runs").exists(),
            "{args:?} made a run directory"
        );
    }
    // Another run's directory is refused, naming what differs.
    let one = dir.path().join("one.jsonl");
    std::fs::write(
        &one,
        "{\"index\": \"2\", \"messages\": [{\"role\": \"assistant\", \"content\": \"Finished\"}]}\n",
    )
    .unwrap();
    let out = dir.path().join("one").display().to_string();
    let one_arg = one.display().to_string();
    let first = assay(
        &[
            "eval",
            "pybench",
            "--trajectories",
            &one_arg,
            "--data",
            &data_arg,
            "--tasks",
            "2",
            "--out",
            &out,
        ],
        dir.path(),
    );
    assert!(first.status.success(), "{}", text(&first.stderr));
    let other = assay(
        &[
            "run", "pybench", "--model", &shared, "--data", &data_arg, "--tasks", "2", "--out",
            &out,
        ],
        dir.path(),
    );
    let stderr = text(&other.stderr);
    assert!(!other.status.success());
    assert!(stderr.contains(&out), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
