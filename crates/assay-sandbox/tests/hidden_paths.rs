//! The harness's own files stay out of sight when they happen to lie inside a tree the sandbox
//! shows: a stand-in harness (run directory, samples file, ground-truth cache, home) lives in
//! a directory bound into the view, and a job can read the bound directory's other files but
//! none of the harness's.

mod common;

use std::path::{Path, PathBuf};

use assay_sandbox::{Engine, EngineConfig, IsolationMode, ScriptJob};
use common::{json_report, run};
use serde_json::Value;

const CANARY: &str = "harness-canary-8d41f2";

/// A harness laid out under one directory (not under /tmp, which the sandbox replaces).
fn stand_in_harness(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hidden-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for dir in ["run", "cache/ground-truth/x", "home"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    for file in [
        "run/results.jsonl",
        "samples.jsonl",
        "cache/ground-truth/x/results.jsonl",
        "home/.netrc",
    ] {
        std::fs::write(root.join(file), CANARY).unwrap();
    }
    std::fs::write(root.join("visible.txt"), "a library's data file").unwrap();
    root
}

/// Reads each argv path; prints `{path: text or error name}` as JSON.
const READER: &str = r#"
import json, sys
seen = {}
for path in sys.argv[1:]:
    try:
        with open(path) as f:
            seen[path] = f.read()
    except OSError as e:
        seen[path] = type(e).__name__
print(json.dumps(seen))
"#;

fn config(root: &Path) -> EngineConfig {
    let mut config = common::config();
    config.extra_readonly = vec![root.to_path_buf()];
    config.hidden = [
        "run",
        "samples.jsonl",
        "cache/ground-truth",
        "home",
        // Holds a visible tree (itself): left alone rather than hiding what jobs may read.
        "",
    ]
    .iter()
    .map(|p| root.join(p))
    .collect();
    config
}

/// What a job could read of the harness, and whether the engine masks there.
async fn snoop(config: EngineConfig, root: &Path) -> (Value, bool) {
    let engine = Engine::start(config).await.expect("engine");
    let layers = engine.isolation().layers.clone();
    let mut job = ScriptJob::new(READER);
    job.argv = [
        "visible.txt",
        "run/results.jsonl",
        "samples.jsonl",
        "cache/ground-truth/x/results.jsonl",
        "home/.netrc",
    ]
    .iter()
    .map(|p| root.join(p).display().to_string())
    .collect();
    let out = engine.run_script(job).await;
    (json_report(&out), layers.mount_ns)
}

fn assert_hidden(seen: &Value, root: &Path) {
    let visible = root.join("visible.txt").display().to_string();
    assert_eq!(seen[&visible], "a library's data file", "{seen}");
    let text = seen.to_string();
    assert!(!text.contains(CANARY), "the harness's files leaked: {seen}");
}

#[test]
fn harness_files_inside_a_bound_tree_are_masked() {
    let root = stand_in_harness("full");
    let (seen, _) = run(snoop(config(&root), &root));
    assert_hidden(&seen, &root);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn without_namespaces_a_job_started_as_root_masks_them_too() {
    let root = stand_in_harness("degraded");
    let mut config = config(&root);
    config.namespaces = false;
    config.isolation = IsolationMode::Auto;
    let (seen, masked) = run(snoop(config, &root));
    let _ = std::fs::remove_dir_all(&root);
    // Only a job that starts as root can mount without namespaces; the report says whether it
    // did, and what the job saw must agree with it.
    assert_eq!(masked, rustix::process::geteuid().is_root(), "{seen}");
    if masked {
        assert_hidden(&seen, &root);
    } else {
        assert!(seen.to_string().contains(CANARY), "{seen}");
    }
}
