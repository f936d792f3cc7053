//! The Kubernetes recipe (`deploy/kubernetes`), held to what it needs, since no cluster here
//! can run it: an Indexed Job whose shard count is its completions, retried per index, with
//! the security context the sandbox needs in a pod, that checks strict isolation before
//! anything runs; and a merge Job over the same shards. The pods' shell commands are run, with
//! a stand-in `assay` that records its arguments, as a pod would run them.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn manifest(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/kubernetes")
        .join(name)
}

/// Every document of a YAML file, as JSON values.
fn documents(name: &str) -> Vec<Value> {
    let path = manifest(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_norway::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap_or_else(|e| panic!("{name}: {e}")))
        .collect()
}

/// The document of `kind` named `name`.
fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

/// A container's environment variable.
fn env<'a>(container: &'a Value, name: &str) -> &'a str {
    container["env"]
        .as_array()
        .and_then(|vars| vars.iter().find(|v| v["name"] == name))
        .and_then(|v| v["value"].as_str())
        .unwrap_or_else(|| panic!("{} has no {name}", container["name"]))
}

/// What running `container`'s command did, as a pod would run it (its `command` and `args`,
/// its environment, and `extra`), with a stand-in `assay` on `PATH` that records each call's
/// arguments and whose `sandbox` calls exit with `check_exit`: the calls, and whether the
/// command succeeded.
fn run_pod(container: &Value, extra: &[(&str, &str)], check_exit: u8) -> (Vec<String>, bool) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls");
    let fake = dir.path().join("assay");
    std::fs::write(
        &fake,
        "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"$FAKE_LOG\"\n\
         case \"$1\" in sandbox) exit \"$FAKE_CHECK_EXIT\";; esac\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let words: Vec<&str> = container["command"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(container["args"].as_array().into_iter().flatten())
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(words[..2], ["/bin/sh", "-c"], "{}", container["name"]);
    // The pod's shell, with only the pod's environment (and the stand-in first on PATH).
    #[allow(clippy::disallowed_methods)]
    let mut command = Command::new("sh");
    command
        .args(&words[1..])
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", dir.path().display()))
        .env("FAKE_LOG", &log)
        .env("FAKE_CHECK_EXIT", check_exit.to_string());
    for var in container["env"].as_array().into_iter().flatten() {
        if let Some(value) = var["value"].as_str() {
            command.env(var["name"].as_str().unwrap(), value);
        }
    }
    command.envs(extra.iter().copied());
    let status = command.status().unwrap();
    let calls = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    (calls, status.success())
}

#[test]
fn the_indexed_job_shards_by_completion_index_and_checks_isolation_first() {
    let docs = documents("indexed-job.yaml");
    let job = find(&docs, "Job", "assay-shards");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let completions = spec["completions"].as_u64().expect("completions");
    assert_eq!(spec["parallelism"].as_u64(), Some(completions));
    assert!(spec["backoffLimitPerIndex"]
        .as_u64()
        .is_some_and(|n| n >= 1));
    // The other shards finish when one fails for good: only that one needs running again.
    assert_eq!(spec["maxFailedIndexes"].as_u64(), Some(completions));

    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    // What the sandbox needs of a pod: its own user namespace (for an unmasked /proc), no
    // runtime seccomp or AppArmor profile in the way of unshare and mount, no privilege.
    assert_eq!(pod["hostUsers"], false);
    let context = &pod["securityContext"];
    assert_eq!(context["seccompProfile"]["type"], "Unconfined");
    assert_eq!(context["appArmorProfile"]["type"], "Unconfined");
    assert_eq!(context["runAsNonRoot"], true);

    let container = &pod["containers"][0];
    let security = &container["securityContext"];
    assert_eq!(security["procMount"], "Unmasked");
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["capabilities"]["drop"][0], "ALL");
    assert_eq!(security.get("privileged"), None);
    assert_eq!(
        env(container, "ASSAY_SHARD_COUNT"),
        completions.to_string(),
        "ASSAY_SHARD_COUNT must be the Job's completions"
    );

    // Volumes: the run directories and the cache, each a claim this file makes.
    let claims: Vec<&str> = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["persistentVolumeClaim"]["claimName"].as_str().unwrap())
        .collect();
    for claim in &claims {
        let pvc = find(&docs, "PersistentVolumeClaim", claim);
        assert_eq!(pvc["spec"]["accessModes"][0], "ReadWriteMany", "{claim}");
    }
    let mounts: Vec<&str> = container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["mountPath"].as_str().unwrap())
        .collect();
    assert_eq!(mounts, ["/runs", "/cache"]);
    assert_eq!(env(container, "ASSAY_CACHE_DIR"), "/cache");

    // The environment is set up once, before the shard, on the cache volume.
    let init = &pod["initContainers"][0];
    let setup: Vec<&str> = init["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(setup[..3], ["assay", "env", "setup"]);
    assert_eq!(env(init, "ASSAY_CACHE_DIR"), "/cache");
    assert_eq!(init["volumeMounts"][0]["mountPath"], "/cache");

    // Pod 3 checks strict isolation, then runs shard 3 into its directory, strict too.
    let (calls, ok) = run_pod(container, &[("JOB_COMPLETION_INDEX", "3")], 0);
    assert!(ok, "{calls:?}");
    assert_eq!(
        calls,
        [
            "sandbox check --isolation strict --profile bigcodebench".to_string(),
            format!(
                "eval bigcodebench-hard --samples /runs/samples.jsonl --profile bigcodebench \
                 --isolation strict --out /runs/bcb-hard-shard-3-of-{completions}"
            ),
        ]
    );
    // A node below full isolation: the check fails, and nothing else runs.
    let (calls, ok) = run_pod(container, &[("JOB_COMPLETION_INDEX", "3")], 1);
    assert!(!ok);
    assert_eq!(calls.len(), 1, "{calls:?}");
}

#[test]
fn the_merge_job_joins_every_shard_of_the_indexed_job() {
    let shards = documents("indexed-job.yaml");
    let job = find(&shards, "Job", "assay-shards");
    let shard_container = &job["spec"]["template"]["spec"]["containers"][0];
    let completions = job["spec"]["completions"].as_u64().unwrap();

    let docs = documents("merge-job.yaml");
    let merge = find(&docs, "Job", "assay-merge");
    let pod = &merge["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let container = &pod["containers"][0];
    for name in ["ASSAY_SHARD_COUNT", "ASSAY_NAME"] {
        assert_eq!(env(container, name), env(shard_container, name), "{name}");
    }
    assert_eq!(
        pod["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "assay-runs"
    );
    let (calls, ok) = run_pod(container, &[], 0);
    assert!(ok, "{calls:?}");
    let name = env(container, "ASSAY_NAME");
    let dirs: Vec<String> = (0..completions)
        .map(|i| format!("/runs/{name}-shard-{i}-of-{completions}"))
        .collect();
    assert_eq!(
        calls,
        [format!("merge {} --out /runs/{name}", dirs.join(" "))]
    );
}
