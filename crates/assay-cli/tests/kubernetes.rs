//! The Kubernetes recipe (`deploy/kubernetes`), held to what it needs, since no cluster here
//! can run it: an Indexed Job whose shard count is its completions, retried per index, with
//! the security context the sandbox needs in a pod, that checks strict isolation before
//! anything runs; and a merge Job over the same shards. The pods' shell commands are run, with
//! a stand-in `assay` that records its arguments, as a pod would run them; and the `kubectl`
//! steps of docs/scale.md are run with a stand-in `kubectl`.

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

/// What running `container`'s command did, as a pod would run it (its command and args, its
/// environment, and `extra`), with a stand-in `assay` on `PATH` that records each call's
/// arguments and whose `sandbox` calls exit with `check_exit`.
struct Pod {
    /// Each call's arguments.
    calls: Vec<String>,
    /// Each call's shard as assay would read it from its environment:
    /// `$JOB_COMPLETION_INDEX/$ASSAY_SHARD_COUNT`.
    shards: Vec<String>,
    /// Whether the command succeeded.
    ok: bool,
}

/// Runs `container`'s command as a pod would: see [`Pod`].
fn run_pod(container: &Value, extra: &[(&str, &str)], check_exit: u8) -> Pod {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls");
    let fake = dir.path().join("assay");
    std::fs::write(
        &fake,
        "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"$FAKE_LOG\"\n\
         printf '%s/%s\\n' \"$JOB_COMPLETION_INDEX\" \"$ASSAY_SHARD_COUNT\" >> \"$FAKE_LOG.shards\"\n\
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
    let read = |path: &Path| {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    };
    Pod {
        calls: read(&log),
        shards: read(&log.with_extension("shards")),
        ok: status.success(),
    }
}

/// The `sh` block of step `step` of docs/scale.md's Kubernetes recipe, unindented.
fn doc_step(step: u32) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scale.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("docs/scale.md: {e}"));
    let recipe = &doc[doc.find("\n## Kubernetes\n").expect("a Kubernetes section")..];
    let start = recipe
        .find(&format!("\n{step}. **"))
        .unwrap_or_else(|| panic!("no step {step}"));
    let rest = &recipe[start + 1..];
    let end = rest
        .find(&format!("\n{}. **", step + 1))
        .unwrap_or(rest.len());
    let body = &rest[..end];
    let block = body
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap_or_else(|| panic!("step {step} has no sh block"));
    block
        .lines()
        .map(|l| l.strip_prefix("   ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `script` with `sh` and a stand-in `kubectl` first on `PATH`, which records each call's
/// arguments and whose `wait --for=condition=C` exits with the code `waits` gives for C (1, as
/// a timed-out wait, for any other); any other call exits with the code `waits` gives for its
/// first word, or 0. The calls, each its arguments, and whether the script succeeded.
fn run_kubectl(script: &str, waits: &[(&str, u8)]) -> (Vec<Vec<String>>, bool) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls");
    let fake = dir.path().join("kubectl");
    // Arguments end with \x1f, calls with \x1e: an argument may hold newlines.
    std::fs::write(
        &fake,
        "#!/bin/sh\n\
         for a in \"$@\"; do printf '%s\\037' \"$a\"; done >> \"$FAKE_LOG\"\n\
         printf '\\036' >> \"$FAKE_LOG\"\n\
         [ \"$1\" = wait ] || { eval \"code=\\${FAKE_EXIT_$1:-0}\"; exit \"$code\"; }\n\
         for a in \"$@\"; do case \"$a\" in --for=condition=*)\n\
         eval \"code=\\${FAKE_WAIT_${a#--for=condition=}:-1}\"; exit \"$code\";; esac; done\n\
         exit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    #[allow(clippy::disallowed_methods)]
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(script)
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", dir.path().display()))
        .env("FAKE_LOG", &log);
    for (condition, code) in waits {
        command.env(format!("FAKE_WAIT_{condition}"), code.to_string());
        command.env(format!("FAKE_EXIT_{condition}"), code.to_string());
    }
    // What the script prints is for its user; the calls are what it did.
    let status = command.output().unwrap().status;
    let calls = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .split('\x1e')
        .filter(|c| !c.is_empty())
        .map(|c| {
            c.split('\x1f')
                .filter(|a| !a.is_empty())
                .map(str::to_string)
                .collect()
        })
        .collect();
    (calls, status.success())
}

/// The first word of each call.
fn verbs(calls: &[Vec<String>]) -> Vec<&str> {
    calls.iter().map(|c| c[0].as_str()).collect()
}

#[test]
fn the_indexed_job_shards_by_completion_index_and_checks_isolation_first() {
    let docs = documents("indexed-job.yaml");
    let job = find(&docs, "Job", "assay-shards");
    let spec = &job["spec"];
    // Applying the file makes the runs claim and the Job at once: suspended, no pod runs
    // before the samples are on that claim (docs/scale.md, steps 3 and 4).
    assert_eq!(spec["suspend"], true);
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
    // The environment set up is the one the shard runs in.
    let profile = setup
        .iter()
        .position(|w| *w == "--profile")
        .and_then(|i| setup.get(i + 1))
        .expect("env setup --profile");
    assert_eq!(*profile, env(container, "ASSAY_PROFILE"));
    assert_eq!(env(init, "ASSAY_CACHE_DIR"), "/cache");
    assert_eq!(init["volumeMounts"][0]["mountPath"], "/cache");

    // Pod 3 checks strict isolation, then runs shard 3 into its directory, strict too.
    let Pod { calls, shards, ok } = run_pod(container, &[("JOB_COMPLETION_INDEX", "3")], 0);
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
    // No --shard: assay reads shard 3 of N (3/8 as shipped) from the pod's environment.
    assert_eq!(shards[1], format!("3/{completions}"));
    assert!(!calls[1].contains("--shard"), "{}", calls[1]);
    // A node below full isolation: the check fails, and nothing else runs.
    let Pod { calls, ok, .. } = run_pod(container, &[("JOB_COMPLETION_INDEX", "3")], 1);
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
    let Pod { calls, ok, .. } = run_pod(container, &[], 0);
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

#[test]
fn the_samples_go_onto_the_runs_claim_before_the_suspended_job_is_resumed() {
    let docs = documents("indexed-job.yaml");
    let job = find(&docs, "Job", "assay-shards");
    assert_eq!(job["spec"]["suspend"], true);
    let pod = &job["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let runs_mount = container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "runs")
        .expect("a runs mount");
    let runs_claim = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "runs")
        .expect("a runs volume")["persistentVolumeClaim"]["claimName"]
        .as_str()
        .unwrap();
    // Where the shards read their samples.
    let calls = run_pod(container, &[("JOB_COMPLETION_INDEX", "0")], 0).calls;
    let samples = calls[1]
        .split_once("--samples ")
        .and_then(|(_, rest)| rest.split(' ').next())
        .expect("the shard command's --samples")
        .to_string();
    assert!(
        samples.starts_with(&format!("{}/", runs_mount["mountPath"].as_str().unwrap())),
        "{samples}"
    );

    // Step 3 applies the file; step 4 copies the samples in, then resumes the Job.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scale.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let recipe = &doc[doc.find("\n## Kubernetes\n").unwrap()..];
    let step3 = &recipe[recipe.find("\n3. **").unwrap()..recipe.find("\n4. **").unwrap()];
    assert!(
        step3.contains("`kubectl apply -f deploy/kubernetes/indexed-job.yaml`"),
        "{step3}"
    );
    let (calls, ok) = run_kubectl(&doc_step(4), &[("ready", 0)]);
    assert!(ok, "{calls:?}");
    assert_eq!(verbs(&calls), ["run", "wait", "cp", "delete", "patch"]);
    let copier = &calls[0][1];
    let overrides: Value = calls[0]
        .iter()
        .find_map(|a| a.strip_prefix("--overrides="))
        .map(|o| serde_json::from_str(o).expect("the overrides are JSON"))
        .expect("the copying pod's --overrides");
    let volume = &overrides["spec"]["volumes"][0];
    assert_eq!(volume["persistentVolumeClaim"]["claimName"], runs_claim);
    let mount = &overrides["spec"]["containers"][0]["volumeMounts"][0];
    assert_eq!(mount["name"], volume["name"]);
    assert_eq!(mount["mountPath"], runs_mount["mountPath"]);
    // The same user as the shards, so that the file is theirs.
    assert_eq!(
        overrides["spec"]["securityContext"]["runAsUser"],
        pod["securityContext"]["runAsUser"]
    );
    assert!(
        calls[1].contains(&format!("pod/{copier}")),
        "{:?}",
        calls[1]
    );
    assert_eq!(calls[2][2], format!("{copier}:{samples}"));
    assert_eq!(calls[3][1..], ["pod".to_string(), copier.clone()]);
    assert_eq!(
        calls[4][1..],
        ["job", "assay-shards", "-p", r#"{"spec":{"suspend":false}}"#]
    );
}

#[test]
fn the_merge_waits_for_the_shards_job_to_end_complete_or_failed() {
    let step = doc_step(7);
    let merge = |calls: &[Vec<String>]| -> Vec<String> {
        calls[calls.len() - 3..]
            .iter()
            .map(|c| c.join(" "))
            .collect()
    };
    let merged = [
        "delete job assay-merge --ignore-not-found",
        "apply -f deploy/kubernetes/merge-job.yaml",
        "logs -f job/assay-merge --pod-running-timeout=10m",
    ];
    let is_wait_for = |call: &Vec<String>, condition: &str| {
        call[0] == "wait"
            && call.contains(&format!("--for=condition={condition}"))
            && call.contains(&"job/assay-shards".to_string())
            && call.iter().any(|a| a.starts_with("--timeout="))
    };

    // Every index succeeded: the Job is Complete.
    let (calls, ok) = run_kubectl(&step, &[("complete", 0)]);
    assert!(ok, "{calls:?}");
    assert_eq!(
        verbs(&calls),
        ["get", "wait", "get", "delete", "apply", "logs"]
    );
    assert!(is_wait_for(&calls[1], "complete"), "{calls:?}");
    assert_eq!(merge(&calls), merged);

    // An index failed for good: the Job ends Failed (FailedIndexes), never Complete, and the
    // merge runs all the same, to name the failed shards and their rerun commands.
    let (calls, ok) = run_kubectl(&step, &[("failed", 0)]);
    assert!(ok, "{calls:?}");
    assert_eq!(
        verbs(&calls),
        ["get", "wait", "wait", "get", "delete", "apply", "logs"]
    );
    assert!(is_wait_for(&calls[1], "complete"), "{calls:?}");
    assert!(is_wait_for(&calls[2], "failed"), "{calls:?}");
    assert!(calls[3].join(" ").contains("{.status.failedIndexes}"));
    assert_eq!(merge(&calls), merged);

    // Neither yet: it waits again, a turn at a time.
    let (calls, _) = run_kubectl(&format!("{}\n", step.replace("$(seq 1440)", "1 2 3")), &[]);
    assert!(step.contains("$(seq 1440)"), "{step}");
    assert_eq!(
        verbs(&calls)[..9],
        ["get", "wait", "wait", "get", "wait", "wait", "get", "wait", "wait"]
    );
    assert_eq!(merge(&calls), merged);

    // No such Job: it stops waiting at once.
    let (calls, _) = run_kubectl(&step, &[("get", 1)]);
    assert_eq!(verbs(&calls), ["get", "get", "delete", "apply", "logs"]);
}
