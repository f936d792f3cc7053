//! The Kubernetes recipe (`deploy/kubernetes`), held to what it needs, since no cluster here
//! can run it: an Indexed Job whose shard count is its completions, retried per index, with
//! the security context the sandbox needs in a pod, that checks strict isolation before
//! anything runs; and a merge Job over the same shards. The pods' shell commands are run, with
//! a stand-in `assay` that records its arguments, as a pod would run them; and the `kubectl`
//! steps of docs/scale.md are run with a stand-in `kubectl`.
//!
//! `serve.yaml` (`assay serve` on N replicas) is held to what a service needs: flags that
//! parse with the real `assay serve`, a non-loopback address and the secret from a Secret's
//! file (never a variable or a literal), probes that pass against a real server with the
//! secret and fail without it, ports, labels and services that agree, and an Ingress that
//! hashes sessions by `X-Session-ID` apart from the stateless routes.

mod common;

use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::service::{http, Server};
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

// `assay serve` on N replicas: deploy/kubernetes/serve.yaml.

/// The header that names a session: the clients send it, `assay serve` reads it, and the
/// sessions' Ingress hashes it.
const SESSION_HEADER: &str = "X-Session-ID";
/// `assay serve`'s defaults, which the recipe keeps unless its arguments say otherwise: a
/// job's memory (MiB), a job's time (s), a request body (MiB).
const SERVE_DEFAULTS: [(&str, u64); 3] = [
    ("--max-memory", 8192),
    ("--max-timeout", 240),
    ("--max-body", 64),
];
/// How long one probe may take, run as the kubelet would.
const PROBE_WAIT: Duration = Duration::from_secs(60);

/// The serve Deployment's pod spec.
fn serve_pod(docs: &[Value]) -> &Value {
    &find(docs, "Deployment", "assay-serve")["spec"]["template"]["spec"]
}

/// The container that runs `assay serve`.
fn serve_container(pod: &Value) -> &Value {
    pod["containers"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "assay"))
        .expect("a container named assay")
}

/// A CPU quantity in whole CPUs, rounded up as the downward API gives it with divisor 1.
fn whole_cpus(quantity: &Value) -> u64 {
    let text = match quantity {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match text.strip_suffix('m') {
        Some(milli) => milli.parse::<u64>().expect("a CPU quantity").div_ceil(1000),
        None => text.parse().expect("a CPU quantity"),
    }
}

/// A memory quantity (`18Gi`, `512Mi`) in MiB.
fn mebibytes(quantity: &Value) -> u64 {
    let text = quantity.as_str().expect("a memory quantity");
    if let Some(gi) = text.strip_suffix("Gi") {
        gi.parse::<u64>().expect("a memory quantity") * 1024
    } else if let Some(mi) = text.strip_suffix("Mi") {
        mi.parse().expect("a memory quantity")
    } else {
        panic!("a memory quantity in Gi or Mi: {text}")
    }
}

/// `container`'s command and args, each `$(NAME)` replaced as the kubelet expands it from
/// the container's environment: a literal value, or the CPU limit through the downward API.
fn expanded_words(container: &Value) -> Vec<String> {
    let vars: Vec<(String, String)> = container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|var| {
            let name = var["name"].as_str().unwrap().to_string();
            if let Some(value) = var["value"].as_str() {
                return (name, value.to_string());
            }
            let field = &var["valueFrom"]["resourceFieldRef"];
            assert_eq!(field["resource"], "limits.cpu", "{name}: {var}");
            assert_eq!(field["divisor"], "1", "{name}: whole CPUs");
            assert_eq!(field["containerName"], container["name"], "{name}");
            let cpus = whole_cpus(&container["resources"]["limits"]["cpu"]);
            (name, cpus.to_string())
        })
        .collect();
    container["command"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(container["args"].as_array().into_iter().flatten())
        .map(|word| {
            let mut word = word.as_str().expect("words are strings").to_string();
            for (name, value) in &vars {
                word = word.replace(&format!("$({name})"), value);
            }
            assert!(
                !word.contains("$("),
                "{word}: a variable the container lacks"
            );
            word
        })
        .collect()
}

/// The value after `name` in `args`, if it is there.
fn flag_value<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().position(|a| a == name).map(|i| {
        args.get(i + 1)
            .unwrap_or_else(|| panic!("{name} has no value"))
            .as_str()
    })
}

/// A setting of `assay serve`: its argument in `args`, else its default ([`SERVE_DEFAULTS`]).
fn serve_setting(args: &[String], name: &str) -> u64 {
    flag_value(args, name).map_or_else(
        || SERVE_DEFAULTS.iter().find(|(n, _)| *n == name).unwrap().1,
        |v| v.parse().unwrap_or_else(|e| panic!("{name} {v}: {e}")),
    )
}

/// The script of an exec probe run as `python3 -c SCRIPT`.
fn probe_script<'a>(container: &'a Value, probe: &str) -> &'a str {
    let words: Vec<&str> = container[probe]["exec"]["command"]
        .as_array()
        .unwrap_or_else(|| panic!("{probe} is not an exec probe: {}", container[probe]))
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(words[..2], ["python3", "-c"], "{probe}");
    words[2]
}

/// The probes the serve container has.
const SERVE_PROBES: [&str; 3] = ["startupProbe", "readinessProbe", "livenessProbe"];

#[test]
fn the_serve_deployment_runs_assay_serve_for_other_pods_with_its_secret_from_a_file() {
    let docs = documents("serve.yaml");
    let pod = serve_pod(&docs);
    let container = serve_container(pod);
    let words = expanded_words(container);
    assert_eq!(words[..2], ["assay", "serve"], "{words:?}");
    let args = &words[2..];

    // Other pods (the Ingress) reach it: an address other than loopback, which assay serves
    // only with a secret; never --open.
    let host: IpAddr = flag_value(args, "--host")
        .expect("--host")
        .parse()
        .expect("--host is an address");
    assert!(
        !host.is_loopback(),
        "--host {host}: only this pod could reach it"
    );
    assert!(!args.iter().any(|a| a == "--open"), "{args:?}");

    // The secret: a file, mounted read-only from a Secret.
    assert_eq!(
        args.iter().filter(|a| *a == "--token-file").count(),
        1,
        "{args:?}"
    );
    let token_file = Path::new(flag_value(args, "--token-file").unwrap());
    let mount = container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| Some(Path::new(m["mountPath"].as_str().unwrap())) == token_file.parent())
        .unwrap_or_else(|| panic!("nothing is mounted where {} is", token_file.display()));
    assert_eq!(mount["readOnly"], true);
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mount["name"])
        .expect("the token's volume");
    let secret = &volume["secret"];
    assert!(
        secret["secretName"].is_string(),
        "the token's volume is not a Secret: {volume}"
    );
    let file_name = token_file.file_name().unwrap().to_str().unwrap();
    assert!(
        secret["items"]
            .as_array()
            .is_some_and(|items| items.iter().any(|i| i["path"] == file_name)),
        "the Secret's items do not put a file at {}: {secret}",
        token_file.display()
    );
    // Never a variable (every child of the pod would see it) nor a flag of its own (every
    // user of the node would): no container takes anything from a Secret but that file.
    let all_containers = pod["containers"]
        .as_array()
        .unwrap()
        .iter()
        .chain(pod["initContainers"].as_array().into_iter().flatten());
    for c in all_containers {
        assert!(c.get("envFrom").is_none(), "{}: envFrom", c["name"]);
        for var in c["env"].as_array().into_iter().flatten() {
            assert_ne!(var["name"], "ASSAY_SERVE_TOKEN", "{}", c["name"]);
            assert!(
                var["valueFrom"].get("secretKeyRef").is_none(),
                "{}: {var}",
                c["name"]
            );
        }
        let words = expanded_words(c);
        assert!(
            !words
                .iter()
                .any(|w| w.starts_with("--token") && w != "--token-file"),
            "{words:?}"
        );
    }
    // The probes read the secret from the same file: no header written here, no path prefix.
    for probe in SERVE_PROBES {
        assert!(container[probe]["httpGet"].is_null(), "{probe}: httpGet");
        let script = probe_script(container, probe);
        assert!(
            script.contains(&format!("'{}'", token_file.display())),
            "{probe} does not read {}: {script}",
            token_file.display()
        );
    }

    // One port: assay's, the container's, the probes'.
    let port: u64 = flag_value(args, "--port").unwrap().parse().unwrap();
    let http = container["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "http")
        .expect("a port named http");
    assert_eq!(http["containerPort"].as_u64(), Some(port));
    for probe in SERVE_PROBES {
        let script = probe_script(container, probe);
        assert!(
            script.contains(&format!("'http://127.0.0.1:{port}/")),
            "{probe} asks another port than --port {port}: {script}"
        );
    }

    // --jobs is the CPU limit (one job computes on one CPU); CPU is requested as limited, so
    // that a job's time budget does not depend on its neighbours; the memory limit holds
    // every job at its cap, with room for the server and its workers.
    let resources = &container["resources"];
    let cpus = whole_cpus(&resources["limits"]["cpu"]);
    assert_eq!(flag_value(args, "--jobs"), Some(cpus.to_string().as_str()));
    assert_eq!(resources["requests"]["cpu"], resources["limits"]["cpu"]);
    let memory = mebibytes(&resources["limits"]["memory"]);
    let per_job = serve_setting(args, "--max-memory");
    assert!(
        memory >= cpus * per_job + 1024,
        "{memory} MiB cannot hold {cpus} jobs of {per_job} MiB and the server"
    );

    // Full isolation or no service; the sandbox's needs as the Indexed Job has them.
    assert_eq!(flag_value(args, "--isolation"), Some("strict"));
    let shards = documents("indexed-job.yaml");
    let job_pod = &find(&shards, "Job", "assay-shards")["spec"]["template"]["spec"];
    assert_eq!(pod["hostUsers"], job_pod["hostUsers"]);
    for key in [
        "runAsUser",
        "runAsGroup",
        "runAsNonRoot",
        "seccompProfile",
        "appArmorProfile",
    ] {
        assert_eq!(
            pod["securityContext"][key], job_pod["securityContext"][key],
            "{key}"
        );
    }
    assert_eq!(
        container["securityContext"],
        job_pod["containers"][0]["securityContext"]
    );
    assert_eq!(pod["automountServiceAccountToken"], false);

    // Every environment the service runs (its profile, its sessions'), set up first on the
    // cache it reads, a claim every replica mounts.
    let mut profiles = vec![flag_value(args, "--profile").expect("--profile")];
    profiles.extend(flag_value(args, "--sessions-profile"));
    profiles.sort();
    let cache = env(container, "ASSAY_CACHE_DIR");
    let cache_volume = |c: &Value| -> String {
        c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["mountPath"] == cache)
            .unwrap_or_else(|| panic!("{} does not mount {cache}", c["name"]))["name"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let mut set_up: Vec<&str> = Vec::new();
    for init in pod["initContainers"].as_array().expect("init containers") {
        let words = expanded_words(init);
        assert_eq!(
            words[..4],
            ["assay", "env", "setup", "--profile"],
            "{words:?}"
        );
        assert_eq!(words.len(), 5, "{words:?}");
        set_up.push(init["command"][4].as_str().unwrap());
        assert_eq!(env(init, "ASSAY_CACHE_DIR"), cache);
        assert_eq!(cache_volume(init), cache_volume(container));
    }
    set_up.sort();
    assert_eq!(
        set_up, profiles,
        "the environments set up are not those served"
    );
    let claim = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == cache_volume(container).as_str())
        .expect("the cache's volume")["persistentVolumeClaim"]["claimName"]
        .as_str()
        .expect("the cache is a claim")
        .to_string();
    let pvc = find(&docs, "PersistentVolumeClaim", &claim);
    assert_eq!(pvc["spec"]["accessModes"][0], "ReadWriteMany");

    // A first start may set an environment up: minutes before the first answer.
    let startup = &container["startupProbe"];
    let budget =
        startup["periodSeconds"].as_u64().unwrap() * startup["failureThreshold"].as_u64().unwrap();
    assert!(budget >= 600, "the startup probe gives {budget} s");
    // A replaced pod lets its running jobs finish before SIGTERM, within its grace period.
    let pause: u64 = container["lifecycle"]["preStop"]["exec"]["command"]
        .as_array()
        .and_then(|c| {
            (c[0] == "sleep")
                .then(|| c[1].as_str()?.parse().ok())
                .flatten()
        })
        .expect("preStop: sleep N");
    assert!(pause >= serve_setting(args, "--max-timeout"), "{pause}");
    assert!(pod["terminationGracePeriodSeconds"].as_u64().unwrap() > pause);

    // The flags and their values are the real `assay serve`'s: clap parses every argument
    // before it gives the help, and refuses an unknown flag or a bad value.
    #[allow(clippy::disallowed_methods)]
    let parsed = Command::new(env!("CARGO_BIN_EXE_assay"))
        .args(&words[1..])
        .arg("--help")
        .output()
        .unwrap();
    assert!(
        parsed.status.success(),
        "assay {} refuses the manifest's arguments: {}",
        words[1..].join(" "),
        String::from_utf8_lossy(&parsed.stderr)
    );
}

/// An annotation of ingress-nginx's on `ingress`, if it has it.
fn nginx_annotation<'a>(ingress: &'a Value, name: &str) -> Option<&'a str> {
    ingress["metadata"]["annotations"][format!("nginx.ingress.kubernetes.io/{name}")].as_str()
}

#[test]
fn the_serve_ingress_hashes_sessions_by_their_header_and_spreads_the_rest() {
    let docs = documents("serve.yaml");
    let deployment = find(&docs, "Deployment", "assay-serve");
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    for (key, value) in deployment["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("the Deployment's selector")
    {
        assert_eq!(&labels[key], value, "the Deployment selects other pods");
    }
    let container = serve_container(serve_pod(&docs));
    let args = &expanded_words(container)[2..];
    let port = container["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "http")
        .expect("a port named http");

    // Every Service selects the serve pods and sends to assay's port.
    let services: Vec<&Value> = docs.iter().filter(|d| d["kind"] == "Service").collect();
    assert!(!services.is_empty());
    for service in &services {
        let name = &service["metadata"]["name"];
        for (key, value) in service["spec"]["selector"].as_object().expect("a selector") {
            assert_eq!(&labels[key], value, "Service {name} selects other pods");
        }
        for p in service["spec"]["ports"].as_array().unwrap() {
            let target = &p["targetPort"];
            assert!(
                *target == port["name"] || *target == port["containerPort"],
                "Service {name} sends to {target}, not assay's port {port}"
            );
        }
    }
    // The Service port an Ingress backend names, which must exist.
    let backend = |ingress: &Value, path: &Value| -> String {
        let service = &path["backend"]["service"];
        let name = service["name"].as_str().expect("a Service backend");
        let target = find(&docs, "Service", name);
        let wanted = &service["port"];
        assert!(
            target["spec"]["ports"].as_array().unwrap().iter().any(|p| {
                (wanted["name"].is_string() && p["name"] == wanted["name"])
                    || (wanted["number"].is_u64() && p["port"] == wanted["number"])
            }),
            "Ingress {} sends to a port Service {name} lacks: {wanted}",
            ingress["metadata"]["name"]
        );
        name.to_string()
    };
    let paths = |ingress: &Value| -> Vec<Value> {
        ingress["spec"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["http"]["paths"].as_array().unwrap().clone())
            .collect()
    };

    let ingresses: Vec<&Value> = docs.iter().filter(|d| d["kind"] == "Ingress").collect();
    let (hashed, spread): (Vec<&Value>, Vec<&Value>) = ingresses
        .iter()
        .partition(|i| nginx_annotation(i, "upstream-hash-by").is_some());
    assert_eq!(hashed.len(), 1, "one Ingress hashes the sessions");
    assert!(!spread.is_empty(), "an Ingress for the stateless routes");
    let sessions = hashed[0];
    // nginx's variable for the header the clients send: $http_ and its name, lower case,
    // dashes as underscores.
    let variable = format!(
        "$http_{}",
        SESSION_HEADER.to_ascii_lowercase().replace('-', "_")
    );
    assert_eq!(
        nginx_annotation(sessions, "upstream-hash-by"),
        Some(variable.as_str())
    );
    assert_eq!(variable, "$http_x_session_id");
    // The hashed Ingress carries the session routes and nothing else: a request without the
    // header hashes an empty key, and ingress-nginx sends every such one to one replica.
    let session_paths = paths(sessions);
    assert!(session_paths.iter().any(|p| p["path"] == "/v1/sessions"));
    let mut session_services = Vec::new();
    for path in &session_paths {
        assert_eq!(path["pathType"], "Prefix");
        assert!(
            path["path"].as_str().unwrap().starts_with("/v1/sessions"),
            "{path}"
        );
        session_services.push(backend(sessions, path));
    }
    // ingress-nginx balances per Service: the stateless routes go to another one, or the
    // first Ingress's balancing would be both's.
    for ingress in &spread {
        for path in paths(ingress) {
            let service = backend(ingress, &path);
            assert!(!session_services.contains(&service), "{service}");
        }
    }
    assert!(
        spread
            .iter()
            .flat_map(|i| paths(i))
            .any(|p| p["path"] == "/" && p["pathType"] == "Prefix"),
        "the stateless routes: /"
    );

    // Both as the service needs them: nginx's defaults (1 MiB bodies, 60 s reads) would
    // refuse files assay takes and cut jobs it runs; a batch's verdicts stream as they come.
    let max_body = serve_setting(args, "--max-body");
    let max_timeout = serve_setting(args, "--max-timeout");
    let hosts: Vec<&Value> = ingresses
        .iter()
        .flat_map(|i| i["spec"]["rules"].as_array().unwrap())
        .map(|r| &r["host"])
        .collect();
    assert!(hosts.windows(2).all(|w| w[0] == w[1]), "{hosts:?}");
    for ingress in &ingresses {
        let name = &ingress["metadata"]["name"];
        assert_eq!(ingress["spec"]["ingressClassName"], "nginx");
        let body = nginx_annotation(ingress, "proxy-body-size")
            .and_then(|b| b.strip_suffix('m'))
            .and_then(|b| b.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{name}: proxy-body-size in m"));
        assert!(body >= max_body, "{name}: {body}m < --max-body {max_body}");
        for timeout in ["proxy-read-timeout", "proxy-send-timeout"] {
            let seconds: u64 = nginx_annotation(ingress, timeout)
                .and_then(|t| t.parse().ok())
                .unwrap_or_else(|| panic!("{name}: {timeout}"));
            assert!(seconds > max_timeout, "{name}: {timeout} {seconds}");
        }
    }
    for ingress in &spread {
        assert_eq!(nginx_annotation(ingress, "proxy-buffering"), Some("off"));
    }
}

/// `GET path` on `server`, with the secret as a bearer token if given: the status.
fn get_status(server: &Server, path: &str, secret: Option<&str>) -> u16 {
    let bearer = secret.map(|s| format!("Bearer {s}"));
    let headers: Vec<(&str, &str)> = bearer
        .iter()
        .map(|b| ("Authorization", b.as_str()))
        .collect();
    http(server.addr(), "GET", path, &headers, None).0
}

#[test]
fn the_serve_probes_pass_against_a_real_server_only_with_its_secret() {
    let docs = documents("serve.yaml");
    let container = serve_container(serve_pod(&docs));
    let words = expanded_words(container);
    let args = &words[2..];
    let port = flag_value(args, "--port").unwrap();
    let token_file = flag_value(args, "--token-file").unwrap();

    let dir = tempfile::tempdir().unwrap();
    let secret = "probe-secret-7d41c0a9e5b2";
    let token = dir.path().join("token");
    std::fs::write(&token, format!("{secret}\n")).unwrap();
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "another-secret-000000000\n").unwrap();
    let server = Server::start(
        dir.path(),
        &[
            "--profile",
            "test",
            "--jobs",
            "1",
            "--token-file",
            token.to_str().unwrap(),
        ],
        &[],
    );

    // Each probe, run as the kubelet runs it in the pod, but at this server's port and with
    // this test's secret file: it passes. With another secret in the file, it fails.
    let probe = |script: &str, file: &Path| -> (bool, String) {
        let script = script
            .replace(
                &format!("'http://127.0.0.1:{port}/"),
                &format!("'http://127.0.0.1:{}/", server.port),
            )
            .replace(&format!("'{token_file}'"), &format!("'{}'", file.display()));
        #[allow(clippy::disallowed_methods)]
        let mut command = Command::new("python3");
        command.args(["-c", &script]);
        let done = common::run_bounded(&mut command, PROBE_WAIT)
            .unwrap_or_else(|| panic!("the probe did not end within {PROBE_WAIT:?}: {script}"));
        (done.status.success(), common::text(&done.stderr))
    };
    for name in SERVE_PROBES {
        let script = probe_script(container, name);
        let (ok, stderr) = probe(script, &token);
        assert!(
            ok,
            "{name} fails against a real server: {stderr}\n{}",
            server.log()
        );
        let (ok, stderr) = probe(script, &wrong);
        assert!(!ok, "{name} passes with the wrong secret");
        assert!(stderr.contains("401"), "{name}: {stderr}");
    }
    // Every route wants the secret, the probes' too: without it, 401.
    for path in ["/livez", "/health", "/v1/sessions"] {
        assert_eq!(get_status(&server, path, None), 401, "{path}");
    }
    // The sessions' Ingress sends /v1/sessions... to the server's own routes.
    assert_eq!(get_status(&server, "/v1/sessions", Some(secret)), 200);
}
