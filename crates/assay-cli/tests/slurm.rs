//! The Slurm recipe on a real Slurm: Debian's `slurm-wlm` and `munge` (installed with apt-get
//! when missing, as root, as CI runs), a one-node cluster on localhost started by the test in
//! a directory of its own, `deploy/slurm/assay-array.sbatch` submitted with `sbatch --array`
//! over a few BigCodeBench tasks and `deploy/slurm/assay-merge.sbatch` after it, and the merged
//! run compared with one `assay eval` of the same samples on this machine.
//!
//! A test that cannot get its cluster fails with the reason: the recipe must not pass untried.
//! Every wait is bounded; a failure prints the daemons' logs and the jobs' output. What it
//! measured (shards, tasks, seconds) goes to standard error, for the record.

mod common;

use std::fmt::Write as _;
use std::fs::File;
use std::io::Read;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{
    apt_install, assay_command, assert_same_judging, cache_root, find_program, lines, read_json,
    run_bounded, text, without_cluster_vars, write_samples,
};
use serde_json::json;

/// How long the node may take to register and become idle.
const NODE_WAIT: Duration = Duration::from_secs(120);
/// How long the array and the merge after it may take, queueing included.
const JOBS_WAIT: Duration = Duration::from_secs(300);
/// How long one client command (`sbatch`, `squeue`, `scontrol`...) may take.
const COMMAND_WAIT: Duration = Duration::from_secs(60);
/// How many shards the array has.
const SHARDS: u32 = 3;
/// The BigCodeBench tasks judged: quick ones the `test` environment can run.
const TASKS: [u32; 6] = [1, 2, 3, 4, 5, 10];

/// A program of the system (found as [`find_program`] finds it), started with the test's
/// environment plus what each call adds: the daemons and the Slurm clients are started as a
/// user starts them, not as assay's children.
fn system(program: &str) -> Command {
    let path = find_program(program).unwrap_or_else(|| program.into());
    #[allow(clippy::disallowed_methods)]
    Command::new(path)
}

/// The programs the test needs, by name.
const PROGRAMS: [&str; 7] = [
    "munged",
    "slurmctld",
    "slurmd",
    "sbatch",
    "squeue",
    "scontrol",
    "sinfo",
];

/// A port free on loopback now (the cluster's ports are chosen anew each run, so that a
/// cluster left by a killed run, or a real one, is never in the way).
fn free_port() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").expect("a free port")
}

/// This machine as `slurmd -C` describes it (CPUs, sockets, cores, threads, memory), for the
/// node's line: a node configured with more than it has is drained.
fn hardware() -> String {
    let out = run_bounded(system("slurmd").arg("-C"), COMMAND_WAIT).expect("slurmd -C ended");
    let said = text(&out.stdout);
    let line = said
        .lines()
        .find(|l| l.starts_with("NodeName="))
        .unwrap_or_else(|| {
            panic!(
                "slurmd -C printed no node line: {said}{}",
                text(&out.stderr)
            )
        });
    line.split_whitespace()
        .filter(|field| !field.starts_with("NodeName="))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A one-node Slurm cluster on localhost: MUNGE, `slurmctld` and `slurmd` running in the
/// foreground as this process's children, every file of theirs in `dir`. Dropped, it cancels
/// what is still queued and ends the daemons.
struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
    daemons: Vec<(&'static str, Child)>,
    jobs: Vec<String>,
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        // munged wants its socket's directory open to every user (clients of any uid talk to it).
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let root = dir.path().to_path_buf();
        let path = |name: &str| root.join(name);
        for sub in ["state", "spool", "logs"] {
            std::fs::create_dir(path(sub)).unwrap();
        }
        let mut key = vec![0u8; 128];
        File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut key))
            .unwrap();
        std::fs::write(path("munge.key"), key).unwrap();
        std::fs::set_permissions(path("munge.key"), std::fs::Permissions::from_mode(0o600))
            .unwrap();

        let (controller, node) = (free_port(), free_port());
        let port = |l: &TcpListener| l.local_addr().unwrap().port();
        let conf = path("slurm.conf");
        let d = |name: &str| path(name).display().to_string();
        std::fs::write(
            &conf,
            format!(
                "# A one-node cluster for assay's Slurm test.
ClusterName=assaytest
SlurmctldHost=localhost
SlurmctldPort={controller}
SlurmdPort={node}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={state}
SlurmdSpoolDir={spool}
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
DependencyParameters=kill_invalid_depend
ReturnToService=2
MinJobAge=3600
MpiDefault=none
MailProg=/bin/true
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
NodeName=localhost NodeAddr=127.0.0.1 {hardware} State=UNKNOWN
PartitionName=assay Nodes=localhost Default=YES MaxTime=INFINITE State=UP
",
                controller = port(&controller),
                node = port(&node),
                socket = d("munge.socket"),
                state = d("state"),
                spool = d("spool"),
                dir = root.display(),
                hardware = hardware(),
            ),
        )
        .unwrap();
        drop((controller, node));

        let mut cluster = Cluster {
            conf,
            daemons: Vec::new(),
            jobs: Vec::new(),
            dir,
        };
        cluster.spawn(
            "munged",
            system("munged").args([
                "--foreground".to_string(),
                format!("--key-file={}", d("munge.key")),
                format!("--socket={}", d("munge.socket")),
                format!("--pid-file={}", d("munged.pid")),
                format!("--seed-file={}", d("munged.seed")),
                format!("--log-file={}", d("munged.log")),
            ]),
        );
        cluster.wait_for("MUNGE's socket", Duration::from_secs(30), |c| {
            c.dir.path().join("munge.socket").exists()
        });
        let conf = cluster.conf.display().to_string();
        // -D: in the foreground, as children the test can end; -i: no saved state expected.
        cluster.spawn(
            "slurmctld",
            system("slurmctld").args(["-D", "-i", "-f", &conf]),
        );
        cluster.spawn(
            "slurmd",
            system("slurmd").args(["-D", "-N", "localhost", "-f", &conf]),
        );
        cluster.wait_for("the node to be idle", NODE_WAIT, |c| {
            let out = c.client("sinfo", &["-h", "-n", "localhost", "-o", "%t"]);
            text(&out.stdout).trim() == "idle"
        });
        cluster
    }

    /// Starts a daemon, its output in `<name>.out`.
    fn spawn(&mut self, name: &'static str, command: &mut Command) {
        let log = File::create(self.dir.path().join(format!("{name}.out"))).unwrap();
        let child = command
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}"));
        self.daemons.push((name, child));
    }

    /// Waits until `ready` holds, failing with the cluster's logs if it does not in `limit` or
    /// a daemon ends meanwhile.
    fn wait_for(&mut self, what: &str, limit: Duration, ready: impl Fn(&Cluster) -> bool) {
        let deadline = Instant::now() + limit;
        loop {
            if ready(self) {
                return;
            }
            let ended = self
                .daemons
                .iter_mut()
                .find_map(|(name, child)| Some((*name, child.try_wait().ok()??)));
            if let Some((name, status)) = ended {
                self.fail(&format!("{name} ended ({status}) while waiting for {what}"));
            }
            if Instant::now() > deadline {
                self.fail(&format!("no {what} within {limit:?}"));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// A Slurm client command of this cluster (to be run with [`run_bounded`]).
    fn command(&self, program: &str) -> Command {
        let mut command = system(program);
        command.env("SLURM_CONF", &self.conf);
        command
    }

    /// Runs a Slurm client command of this cluster; its output whatever its status.
    fn client(&self, program: &str, args: &[&str]) -> Output {
        run_bounded(self.command(program).args(args), COMMAND_WAIT)
            .unwrap_or_else(|| self.fail(&format!("{program} {args:?} did not end")))
    }

    /// Submits `command` (an `sbatch --parsable ...`), keeping the job id for the teardown.
    fn submit(&mut self, command: &mut Command) -> String {
        let out = run_bounded(command, COMMAND_WAIT)
            .unwrap_or_else(|| self.fail(&format!("{command:?} did not end")));
        if !out.status.success() {
            self.fail(&format!(
                "sbatch refused: {}{}",
                text(&out.stdout),
                text(&out.stderr)
            ));
        }
        // `--parsable` prints `id` or `id;cluster`.
        let said = text(&out.stdout);
        let id = said
            .trim()
            .split(';')
            .next()
            .unwrap_or_default()
            .to_string();
        if id.parse::<u64>().is_err() {
            self.fail(&format!("sbatch printed no job id: {said}"));
        }
        self.jobs.push(id.clone());
        id
    }

    /// Each record of `scontrol show job -o JOB` (one per array task) as `key=value` fields.
    fn job_records(&self, job: &str) -> Vec<Vec<(String, String)>> {
        let out = self.client("scontrol", &["show", "job", "-o", job]);
        text(&out.stdout)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                l.split_whitespace()
                    .filter_map(|f| f.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            })
            .collect()
    }

    /// What the cluster and its jobs said: the daemons' logs and every job's output.
    fn diagnostics(&self) -> String {
        let mut said = String::new();
        // The daemons' logs and output, then the jobs' output.
        let listed = |dir: &Path| {
            let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "log" || e == "out"))
                .collect();
            files.sort();
            files
        };
        let mut files = listed(self.dir.path());
        files.extend(listed(&self.dir.path().join("logs")));
        for file in files {
            let content = std::fs::read_to_string(&file).unwrap_or_else(|e| format!("({e})"));
            // The end of a long log is what tells.
            let tail: Vec<&str> = content.lines().rev().take(60).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            let _ = writeln!(said, "\n--- {}\n{}", file.display(), tail.join("\n"));
        }
        said
    }

    fn fail(&self, what: &str) -> ! {
        panic!("{what}\n{}", self.diagnostics())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if !self.jobs.is_empty() {
            let _ = run_bounded(
                self.command("scancel").args(&self.jobs),
                Duration::from_secs(30),
            );
            // Let slurmd end the cancelled jobs' steps before it goes.
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                let queued = run_bounded(
                    self.command("squeue").args(["-h", "-o", "%i"]),
                    Duration::from_secs(10),
                );
                if queued.is_none_or(|o| text(&o.stdout).trim().is_empty()) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        }
        for (_, child) in self.daemons.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn the_array_script_on_a_real_slurm_merges_into_the_single_run() {
    let test_started = Instant::now();
    // Debian's Slurm and MUNGE, installed when missing: a test that cannot have them fails.
    let install = apt_install(&["slurm-wlm", "munge"], &PROGRAMS);
    let work = tempfile::tempdir().unwrap();
    let tasks = write_samples(work.path(), &TASKS);
    let samples = 2 * TASKS.len();

    // The same tasks on this machine, in one run (which also fills the cache's reference
    // timings the shards' budgets come from, as a first run on a cluster's shared cache would).
    let started = Instant::now();
    let whole = assay_command(work.path())
        .args(["eval", "bigcodebench", "--samples", "samples.jsonl"])
        .args(["--tasks", &tasks, "--profile", "test", "--out", "whole"])
        .output()
        .unwrap();
    assert!(whole.status.success(), "{}", text(&whole.stderr));
    let single_seconds = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let mut cluster = Cluster::start();
    let cluster_seconds = started.elapsed().as_secs_f64();
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/slurm");
    let logs = cluster.dir.path().join("logs");
    // What every job of the recipe is given: the binary under test, the shared run root, the
    // test's cache (its environments and reference timings) and the `test` environment; not a
    // surrounding cluster job's variables, which `--export=ALL` would pass on (this cluster
    // sets each array task's own, as the tasks' `(from SLURM_ARRAY_TASK_ID)` below shows).
    let recipe = |command: &mut Command| {
        without_cluster_vars(command)
            .current_dir(work.path())
            .env("ASSAY_BIN", env!("CARGO_BIN_EXE_assay"))
            .env("ASSAY_RUNS", work.path().join("runs"))
            .env("ASSAY_NAME", "bcb")
            .env("ASSAY_PROFILE", "test")
            .env("ASSAY_CACHE_DIR", cache_root())
            .env_remove("ASSAY_ISOLATION")
            .env_remove("ASSAY_SHARD");
    };

    let started = Instant::now();
    let mut array = cluster.command("sbatch");
    recipe(&mut array);
    array
        .arg("--parsable")
        .arg(format!("--array=0-{}", SHARDS - 1))
        .arg("--export=ALL")
        .arg(format!("--output={}/array-%A_%a.out", logs.display()))
        .arg(deploy.join("assay-array.sbatch"))
        .args(["eval", "bigcodebench", "--samples", "samples.jsonl"])
        .args(["--tasks", &tasks, "--jobs", "1"]);
    let array_id = cluster.submit(&mut array);
    let mut merge = cluster.command("sbatch");
    recipe(&mut merge);
    merge
        .arg("--parsable")
        .arg(format!("--dependency=afterok:{array_id}"))
        .arg("--export=ALL")
        .env("ASSAY_SHARDS", SHARDS.to_string())
        .arg(format!("--output={}/merge-%j.out", logs.display()))
        .arg(deploy.join("assay-merge.sbatch"));
    let merge_id = cluster.submit(&mut merge);

    // Until nothing of ours is queued or running (a failed shard cancels the merge:
    // kill_invalid_depend), then every record must say it completed with exit code 0.
    cluster.wait_for("the array and the merge to end", JOBS_WAIT, |c| {
        let out = c.client("squeue", &["-h", "-o", "%i", "-j", &array_id]);
        let merge = c.client("squeue", &["-h", "-o", "%i", "-j", &merge_id]);
        text(&out.stdout).trim().is_empty() && text(&merge.stdout).trim().is_empty()
    });
    let slurm_seconds = started.elapsed().as_secs_f64();
    let array_records = cluster.job_records(&array_id);
    let merge_records = cluster.job_records(&merge_id);
    let field = |record: &[(String, String)], key: &str| {
        record
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let ended: Vec<(String, String, String)> = array_records
        .iter()
        .chain(&merge_records)
        .map(|r| {
            (
                format!("{} {}", field(r, "JobId"), field(r, "ArrayTaskId")),
                field(r, "JobState"),
                field(r, "ExitCode"),
            )
        })
        .collect();
    if array_records.len() != SHARDS as usize
        || merge_records.len() != 1
        || ended
            .iter()
            .any(|(_, state, code)| state != "COMPLETED" || code != "0:0")
    {
        cluster.fail(&format!(
            "the jobs did not all complete: {ended:?} (job, state, exit code)"
        ));
    }

    // Each task said which shard it ran and checked the isolation first.
    for index in 0..SHARDS {
        let log = std::fs::read_to_string(logs.join(format!("array-{array_id}_{index}.out")))
            .unwrap_or_else(|e| cluster.fail(&format!("array task {index}'s output: {e}")));
        let said = format!("shard {index}/{SHARDS} on ");
        // The script passes no --shard: assay reads the array's variables itself.
        let resolved = format!("running shard {index}/{SHARDS} (from SLURM_ARRAY_TASK_ID)");
        let checked = log.find("isolation: full");
        let ran = log.find(&said);
        if ran.is_none() || checked.is_none() || !log.contains(&resolved) {
            cluster.fail(&format!(
                "array task {index} did not say `{said}`, `isolation: full` and \
                 `{resolved}`:\n{log}"
            ));
        }
        let shard = work
            .path()
            .join(format!("runs/bcb-shard-{index}-of-{SHARDS}"));
        assert_eq!(
            read_json(&shard.join("manifest.json"))["identity"]["shard"],
            json!({"index": index, "count": SHARDS})
        );
    }

    let (merged, whole) = (work.path().join("runs/bcb"), work.path().join("whole"));
    assert_same_judging(&merged, &whole);
    let passed = lines(&merged.join("results.jsonl"))
        .iter()
        .filter(|r| r["status"] == "pass")
        .count();

    // One shard run again outside the array (as docs/scale.md reruns a failed one, and as a
    // requeued task runs): the same directory, resumed, nothing judged twice.
    let mut rerun = cluster.command("sbatch");
    recipe(&mut rerun);
    rerun
        .arg("--parsable")
        .arg("--export=ALL")
        .env("ASSAY_SHARD", format!("1/{SHARDS}"))
        .arg(format!("--output={}/rerun-%j.out", logs.display()))
        .arg(deploy.join("assay-array.sbatch"))
        .args(["eval", "bigcodebench", "--samples", "samples.jsonl"])
        .args(["--tasks", &tasks, "--jobs", "1"]);
    let rerun_id = cluster.submit(&mut rerun);
    cluster.wait_for("the rerun to end", JOBS_WAIT, |c| {
        let out = c.client("squeue", &["-h", "-o", "%i", "-j", &rerun_id]);
        text(&out.stdout).trim().is_empty()
    });
    let record = cluster.job_records(&rerun_id);
    let log =
        std::fs::read_to_string(logs.join(format!("rerun-{rerun_id}.out"))).unwrap_or_default();
    let per_shard = samples / SHARDS as usize;
    let resumed = format!("({per_shard} samples already evaluated)");
    if record.len() != 1
        || field(&record[0], "JobState") != "COMPLETED"
        || !log.contains(&format!("shard 1/{SHARDS} on "))
        || !log.contains(&resumed)
        || log.contains("(from SLURM_ARRAY_TASK_ID)")
    {
        cluster.fail(&format!(
            "the rerun of shard 1 did not complete as a resumed run saying `{resumed}`"
        ));
    }

    let test_seconds = test_started.elapsed().as_secs_f64();
    eprintln!(
        "slurm: {SHARDS} shards (sbatch --array=0-{}) over {} tasks ({} samples, {passed} pass): \
         array and merge ended {slurm_seconds:.1} s after submission; one-node cluster up in \
         {cluster_seconds:.1} s; the single run took {single_seconds:.1} s; the merge equals it \
         (eval_results.json verdicts, pass_at_k.json, samples.jsonl, per-sample statuses); \
         shard 1 submitted again resumed, judging nothing twice; the whole test took \
         {test_seconds:.1} s; {}",
        SHARDS - 1,
        TASKS.len(),
        samples,
        match install {
            Some(took) => format!(
                "apt-get installed slurm-wlm and munge in {:.1} s",
                took.as_secs_f64()
            ),
            None => "slurm-wlm and munge were installed already".to_string(),
        }
    );
}
