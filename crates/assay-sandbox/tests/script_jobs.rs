//! Script jobs: exit codes, output capture and caps, input files, collected outputs.

mod common;

use std::time::Duration;

use assay_sandbox::{InputFile, Limits, ScriptJob, Status};
use common::{engine, run};

#[test]
fn a_script_runs_as_main_with_its_arguments() {
    let engine = engine();
    let mut job = ScriptJob::new("import sys\nprint(__name__, sys.argv[1:])\n");
    job.argv = vec!["--n".into(), "3".into()];
    let out = run(engine.run_script(job));
    assert_eq!(out.status, Status::Pass, "{}", out.reason);
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.stdout.text, "__main__ ['--n', '3']\n");
}

#[test]
fn stdin_is_what_the_script_and_its_children_read() {
    let engine = engine();
    // Past a pipe's 64 KiB; read by the script, or by a program it starts (fd 0 itself is
    // the input, as with `python main.py < file`).
    let text = format!("{}\nsecond line\n", "x".repeat(100_000));
    let mut job = ScriptJob::new(
        "import sys\nlines = sys.stdin.readlines()\nprint(len(lines[0]), repr(lines[1]))\n",
    );
    job.stdin = Some(text.clone());
    let out = run(engine.run_script(job));
    assert_eq!(
        out.status,
        Status::Pass,
        "{} {}",
        out.reason,
        out.stderr.text
    );
    assert_eq!(out.stdout.text, "100001 'second line\\n'\n");
    let mut job = ScriptJob::new(
        "import subprocess\nprint(len(subprocess.run(['cat'], capture_output=True).stdout))\n",
    );
    job.stdin = Some(text);
    let out = run(engine.run_script(job));
    assert_eq!(out.stdout.text, "100013\n", "{}", out.stderr.text);
    // Without one, stdin is empty.
    let out = run(engine.run_script(ScriptJob::new(
        "import sys\nprint(repr(sys.stdin.read()))\n",
    )));
    assert_eq!(out.stdout.text, "''\n");
}

#[test]
fn exit_codes_and_exceptions_are_errors() {
    let engine = engine();
    let out = run(engine.run_script(ScriptJob::new("import sys\nsys.exit(3)\n")));
    assert_eq!((out.status, out.exit_code), (Status::Error, Some(3)));
    let out = run(engine.run_script(ScriptJob::new("x = {}\nx['missing']\n")));
    assert_eq!(out.status, Status::Error);
    assert_eq!(out.error.as_ref().unwrap().name, "KeyError");
    assert!(
        out.stderr.text.contains("KeyError: 'missing'"),
        "{}",
        out.stderr.text
    );
}

#[test]
fn input_files_are_there_and_written_files_come_back() {
    let engine = engine();
    let code = r#"
import os, pandas as pd
df = pd.read_csv("data/in.csv")
os.makedirs("output/plots", exist_ok=True)
df.assign(total=df.a + df.b).to_csv("output/out.csv", index=False)
with open("output/plots/fig.png", "wb") as f:
    f.write(b"\x89PNG fake")
os.symlink("/etc/passwd", "output/passwd-link")
"#;
    let mut job = ScriptJob::new(code);
    job.files = vec![InputFile {
        path: "data/in.csv".into(),
        data: b"a,b\n1,2\n3,4\n".to_vec(),
    }];
    let out = run(engine.run_script(job));
    assert_eq!(
        out.status,
        Status::Pass,
        "{} {}",
        out.reason,
        out.stderr.text
    );
    let paths: Vec<_> = out.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        ["data/in.csv", "output/out.csv", "output/plots/fig.png"]
    );
    assert_eq!(out.files[1].data, b"a,b,total\n1,2,3\n3,4,7\n");
}

#[test]
fn output_beyond_the_cap_is_counted_not_kept() {
    let engine = engine();
    let mut job = ScriptJob::new("import sys\nsys.stdout.write('x' * 5_000_000)\n");
    job.limits = Some(Limits {
        output_bytes: 1000,
        ..common::limits(20)
    });
    let out = run(engine.run_script(job));
    assert_eq!(out.status, Status::Pass);
    assert_eq!(out.stdout.text.len(), 1000);
    assert_eq!(out.stdout.total_bytes, 5_000_000);
    assert!(out.stdout.truncated);
}

#[test]
fn a_script_that_never_ends_times_out() {
    let engine = engine();
    let mut job = ScriptJob::new("import time\nwhile True:\n    time.sleep(0.1)\n");
    job.limits = Some(Limits {
        wall: Duration::from_millis(1500),
        ..common::limits(2)
    });
    let out = run(engine.run_script(job));
    assert_eq!(out.status, Status::Timeout);
    assert_eq!(out.exit_code, None);
}

#[test]
fn malformed_jobs_are_refused_up_front() {
    let engine = engine();
    let mut job = ScriptJob::new("print(1)");
    job.workdir = "../escape".into();
    let out = run(engine.run_script(job));
    assert_eq!(out.status, Status::Infra);
    assert!(out.reason.contains("invalid job"), "{}", out.reason);
    let mut job = ScriptJob::new("print(1)");
    job.files = vec![InputFile {
        path: "/etc/passwd".into(),
        data: vec![],
    }];
    assert_eq!(run(engine.run_script(job)).status, Status::Infra);
}

#[test]
fn output_written_just_before_the_end_is_never_lost() {
    let engine = engine();
    let outcomes = run(async move {
        let jobs: Vec<_> = (0..40)
            .map(|i| {
                let engine = engine.clone();
                tokio::spawn(async move {
                    let job = ScriptJob::new(format!("print('line {i}')"));
                    (i, engine.run_script(job).await)
                })
            })
            .collect();
        let mut outcomes = Vec::new();
        for job in jobs {
            outcomes.push(job.await.unwrap());
        }
        outcomes
    });
    for (i, out) in outcomes {
        assert_eq!(
            out.stdout.text,
            format!("line {i}\n"),
            "job {i}: {}",
            out.reason
        );
    }
}

#[test]
fn nltk_looks_for_data_inside_the_environment_jobs_can_read() {
    // `assay env setup` puts NLTK data in <environment>/nltk_data: NLTK must search there
    // from inside the sandbox, and the directory must be readable.
    let engine = engine();
    let code = r#"
import os, sys, nltk.data
here = os.path.join(sys.prefix, "nltk_data")
print(here in nltk.data.path, os.path.realpath(sys.prefix) == os.path.realpath(os.path.dirname(os.path.dirname(sys.executable))))
"#;
    let out = run(engine.run_script(ScriptJob::new(code)));
    assert_eq!(
        out.status,
        Status::Pass,
        "{} {}",
        out.reason,
        out.stderr.text
    );
    assert_eq!(out.stdout.text, "True True\n");
}
