//! What a PyBench episode can touch that its checks trust (docs/pybench.md, "What the agent
//! can touch"): its `./output/` folder, which it may remove, replace by a link or a file, fill
//! with names the run directory cannot hold or with more than a check reads, and the files
//! themselves, of which a pickle runs the episode's code inside the check job. Each is judged
//! on what the checks read, never set apart as `infra` by the episode's doing, and an output
//! that tampers with the check job fails it.

mod common;

use std::collections::BTreeMap;

use common::{assay_command, lines, pybench_data, pybench_env, text};
use serde_json::{json, Value};

/// A recorded episode: one cell running `code`, then a final answer.
fn episode(index: &str, code: &str) -> Value {
    json!({"index": index, "messages": [
        {"role": "assistant", "content": format!("Analyse: do it\n```python\n{code}\n```")},
        {"role": "assistant", "content": "Finished: done"},
    ]})
}

/// Task 3's deduplicated table, as an honest episode writes it.
const TABLE: &str = "import pandas as pd\npd.DataFrame({'a': [1, 2]}).to_csv(OUT, index=False)\n";

/// Each episode: its task, its code, the status both checks must give, and what the reason
/// (of a failure) or the record's outputs (of a pass) must say.
fn episodes() -> Vec<(&'static str, String, &'static str, &'static str)> {
    let table = |out: &str| TABLE.replace("OUT", &format!("{out:?}"));
    vec![
        (
            "60",
            "import shutil\nshutil.rmtree('output')".into(),
            "fail",
            "output/60.png does not exist",
        ),
        (
            "62",
            "import os\nos.rename('output', 'o2')\nos.symlink('/etc', 'output')".into(),
            "fail",
            "output/62.png does not exist",
        ),
        (
            "61",
            "import os\nos.rename('output', 'o2')\nopen('output', 'w').write('x')".into(),
            "fail",
            "output/61.png does not exist",
        ),
        // A name longer than the run directory holds once decoded (every byte of it invalid
        // UTF-8), beside the table the check reads.
        (
            "5",
            format!(
                "import os\nopen(os.path.join(b'output', b'\\xff' * 250), 'w').write('x')\n{}",
                table("output/5.csv")
            ),
            "pass",
            "(not kept: File name too long",
        ),
        // Folders nested deeper than a path the run directory can name.
        (
            "3",
            format!(
                "import os\nhome = os.getcwd()\nos.chdir('output')\nfor _ in range(30):\n    os.mkdir('d' * 250)\n    \
                 os.chdir('d' * 250)\nopen('f', 'w').write('x')\nos.chdir(home)\n{}",
                table("output/3.csv")
            ),
            "pass",
            "/f (not kept: File name too long",
        ),
        // A file and a folder whose names decode the same.
        (
            "141",
            "import os\nos.makedirs('output/141')\n\
             open(os.path.join(b'output/141', b'a\\xff.html'), 'w').write('x')\n\
             os.makedirs(os.path.join(b'output/141', b'a\\xfe.html'))"
                .into(),
            "pass",
            "(not kept: Is a directory",
        ),
        // A pickle whose loading rewrites an assertion of unittest's in the check job.
        (
            "41",
            "import pickle\nclass P:\n    def __reduce__(self):\n        return (exec, \
             ('import unittest\\nunittest.TestCase.assertTrue = lambda *a, **k: None',))\n\
             pickle.dump(P(), open('output/41.pkl', 'wb'))"
                .into(),
            "fail",
            "the outputs gamed the check: the code tampered with unittest: TestCase.assertTrue",
        ),
        // An honest pickle loads and passes.
        (
            "47",
            "import pickle, pandas as pd\npickle.dump(pd.DataFrame({'a': [1]}), open('output/47.pkl', 'wb'))"
                .into(),
            "pass",
            "47.pkl",
        ),
    ]
}

#[test]
fn episodes_that_attack_their_outputs_are_judged_on_what_the_checks_read() {
    pybench_env();
    let dir = tempfile::tempdir().unwrap();
    let cases = episodes();
    let recorded: Vec<String> = cases
        .iter()
        .map(|(index, code, _, _)| {
            // Each cell's code ends by saying it ran, so that a cell that failed shows.
            episode(index, &format!("{code}\nprint('ran')")).to_string()
        })
        .collect();
    let trajectories = dir.path().join("episodes.jsonl");
    std::fs::write(&trajectories, recorded.join("\n") + "\n").unwrap();
    let tasks: Vec<&str> = cases.iter().map(|c| c.0).collect();
    let output = assay_command(dir.path())
        .args(["run", "pybench", "--model"])
        .arg(format!("replay:{}", trajectories.display()))
        .arg("--data")
        .arg(pybench_data())
        .args(["--tasks", &tasks.join(","), "--jobs", "2", "--out", "run"])
        .output()
        .expect("run assay");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let records: BTreeMap<String, Value> = lines(&dir.path().join("run/results.jsonl"))
        .into_iter()
        .map(|r| (r["task_id"].as_str().unwrap().to_string(), r))
        .collect();
    for (index, _, status, says) in &cases {
        let record = &records[&format!("PyBench/{index}")];
        for cell in record["cells"].as_array().unwrap() {
            assert_eq!(cell["status"], "pass", "task {index}'s cell: {cell}");
        }
        for way in ["faithful", "fixed"] {
            assert_eq!(
                record["verdicts"][way]["status"], *status,
                "task {index} ({way}): {record}"
            );
        }
        let evidence = if *status == "pass" {
            record["outputs"].to_string()
        } else {
            record["reason"].to_string()
        };
        assert!(
            evidence.contains(says),
            "task {index}: {says:?} in {record}"
        );
    }
}

#[test]
fn outputs_beyond_what_a_check_reads_fail_it() {
    pybench_env();
    let dir = tempfile::tempdir().unwrap();
    // Recorded outputs as upstream's runs leave them: one folder for every task. The check of
    // task 141 lists its folder, here one sparse file larger than a check job is given.
    let outputs = dir.path().join("output");
    std::fs::create_dir_all(outputs.join("141")).unwrap();
    let big = std::fs::File::create(outputs.join("141/site.html")).unwrap();
    big.set_len(600 << 20).unwrap();
    let trajectories = dir.path().join("episodes.jsonl");
    std::fs::write(
        &trajectories,
        episode("141", "print('ran')").to_string() + "\n",
    )
    .unwrap();
    let output = assay_command(dir.path())
        .args(["eval", "pybench", "--trajectories"])
        .arg(&trajectories)
        .arg("--outputs")
        .arg(&outputs)
        .arg("--data")
        .arg(pybench_data())
        .args(["--tasks", "141", "--out", "eval"])
        .output()
        .expect("run assay");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let record = &lines(&dir.path().join("eval/results.jsonl"))[0];
    assert_eq!(record["status"], "fail", "{record}");
    assert_eq!(
        record["reason"],
        "the episode's outputs the check reads exceed 512 MiB"
    );
}
