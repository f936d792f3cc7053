//! Evaluating a samples file: every sample a sandbox job, every verdict a record appended to
//! the run directory as it finishes, and at the end the official files and a summary.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use assay_report::{RunDir, RunDirError};
use assay_sandbox::{Engine, IsolationLevel, Limits, ScriptJob, Status, TestOutcome, UnittestJob};

use super::ground_truth::{GroundTruthSummary, ReferenceResult, References};
use assay_score::{pass_at_ks, TaskTally, DEFAULT_KS};
use assay_tasks::bigcodebench::{Dataset, Split, Task};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::samples::{Sample, Samples};
use super::verdict::{infra_cause, official, Details, Environment, InfraCause, Official};

/// How samples are evaluated.
#[derive(Debug, Clone)]
pub struct Options {
    pub split: Split,
    /// Prefix every solution with the task's imports and a stub (the official default).
    pub calibrated: bool,
    /// Limits of every job; the wall-clock and CPU limits come from `time`.
    pub limits: Limits,
    /// Each task's time limit.
    pub time: TimePolicy,
    /// Whether jobs have the network.
    pub network: bool,
    /// The official harness's process guards (see `UnittestJob::guards`): on by default, for
    /// the official verdicts.
    pub guards: bool,
}

/// The main-thread stack every job gets: the official harness sets 10 MiB.
pub const STACK_BYTES: u64 = 10 << 20;

/// How long a sample may run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimePolicy {
    /// The same limit for every task (`--timeout`; the official harness waits 240 s).
    Fixed { seconds: f64 },
    /// A budget per task from how long its reference solution takes here: `factor` times
    /// that, at least `floor_seconds`, at most `cap_seconds`. A task whose reference hangs
    /// (times out even at the cap) gets the floor: samples that pass it do so quickly, and
    /// those that hang like the reference would otherwise hold the end of every run for the
    /// cap. Tasks whose reference fails or was not judged get the cap.
    Budget {
        floor_seconds: f64,
        factor: f64,
        cap_seconds: f64,
    },
}

impl TimePolicy {
    /// assay's default, chosen on the official runs (docs/parity.md): their slowest passing
    /// sample takes 30 s where the reference takes 0.3 s (RSA key generation), so the floor
    /// keeps twice that; a hung sample still ends four times sooner than at 240 s.
    pub const DEFAULT: TimePolicy = TimePolicy::Budget {
        floor_seconds: 60.0,
        factor: 5.0,
        cap_seconds: 240.0,
    };

    /// The limit of a task whose reference run is `reference` (none: not measured).
    pub fn limit(&self, reference: Option<&ReferenceResult>) -> Duration {
        let seconds = match *self {
            TimePolicy::Fixed { seconds } => seconds,
            TimePolicy::Budget {
                floor_seconds,
                factor,
                cap_seconds,
            } => match reference {
                Some(r) if r.passed() => (r.seconds * factor).clamp(floor_seconds, cap_seconds),
                Some(r) if r.status == Status::Timeout => floor_seconds,
                _ => cap_seconds,
            },
        };
        Duration::from_secs_f64(seconds)
    }
}

/// One sample's verdict, as `results.jsonl` stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleResult {
    /// The sample's position in the samples file.
    pub index: usize,
    pub task_id: String,
    /// Digest of the program executed: a resumed run checks it against the samples.
    pub program_digest: String,
    /// assay's status (`infra` when the environment decided).
    pub status: Status,
    pub reason: String,
    /// The official verdict; none for `infra`.
    pub official: Option<Official>,
    pub infra: Option<InfraCause>,
    pub tests: Vec<TestOutcome>,
    pub wall_seconds: f64,
    pub cpu_seconds: Option<f64>,
    pub memory_peak_bytes: Option<u64>,
    /// Most processes and threads at once (see `Usage::processes_peak`); absent from records
    /// of older versions.
    #[serde(default)]
    pub processes_peak: Option<u64>,
    pub isolation: IsolationLevel,
}

/// Hears about the evaluation as it goes (the CLI draws a progress bar).
pub trait Progress: Send {
    /// `samples` samples, of which `done` were evaluated by an earlier run, and `references`
    /// reference solutions to run on the way.
    fn start(&mut self, samples: usize, done: usize, references: usize);
    fn finished(&mut self, result: &SampleResult);
    fn reference_finished(&mut self, result: &SampleResult);
}

/// pass@k two ways, and what each counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scores {
    /// The headline: over the tasks judged, `infra` samples left out (the environment, not the
    /// model, decided them).
    pub pass_at_k: BTreeMap<String, f64>,
    /// Tasks with at least one sample that got a verdict.
    pub tasks_judged: usize,
    /// Tasks with samples of which none got a verdict: every one was `infra`.
    pub tasks_set_apart: Vec<String>,
    /// Samples left out as `infra`, in all tasks.
    pub samples_set_apart: usize,
    /// Every sample counted, `infra` as a failure, over every task with samples: what the
    /// official harness, which knows no `infra`, would print on this machine.
    pub pass_at_k_infra_as_fail: BTreeMap<String, f64>,
}

/// What an evaluation came to.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    #[serde(flatten)]
    pub scores: Scores,
    pub tasks_in_dataset: usize,
    /// Tasks without any sample in the file.
    pub tasks_missing: Vec<String>,
    pub samples: usize,
    /// Samples per assay status.
    pub statuses: BTreeMap<String, usize>,
    /// Samples per official status.
    pub official: BTreeMap<String, usize>,
    /// Samples the environment decided, by task, with the cause.
    pub infra: BTreeMap<String, String>,
    /// The slowest samples: (task, seconds, status).
    pub slowest: Vec<(String, f64, String)>,
    pub ground_truth: GroundTruthSummary,
    pub time_policy: TimePolicy,
    pub wall_seconds: f64,
}

/// The verdicts `records` (an earlier run's) already give, by sample index. A record counts
/// for a sample of the same task that executes the same program, wherever that sample now is
/// in the file (a resumed `assay run` may have added answers since); records that fit no
/// sample are dropped.
fn reuse(
    run: &RunDir,
    records: Vec<Value>,
    samples: &Samples,
    programs: &[(String, String)],
) -> Result<BTreeMap<usize, SampleResult>, String> {
    let mut earlier: HashMap<(String, String), Vec<SampleResult>> = HashMap::new();
    for (line, record) in records.into_iter().enumerate() {
        let result: SampleResult = serde_json::from_value(record).map_err(|e| {
            format!(
                "{}:{}: not a sample result: {e}",
                run.path().join(assay_report::RESULTS).display(),
                line + 1
            )
        })?;
        earlier
            .entry((result.task_id.clone(), result.program_digest.clone()))
            .or_default()
            .push(result);
    }
    let mut results = BTreeMap::new();
    for sample in &samples.samples {
        let digest = &programs[sample.index].1;
        if let Some(mut result) = earlier
            .get_mut(&(sample.task_id.clone(), digest.clone()))
            .and_then(Vec::pop)
        {
            result.index = sample.index;
            results.insert(sample.index, result);
        }
    }
    Ok(results)
}

/// The verdict of a sample the model never answered.
fn no_answer(index: usize, task_id: &str, why: &str, isolation: IsolationLevel) -> SampleResult {
    let cause = InfraCause::NoAnswer(why.to_string());
    SampleResult {
        index,
        task_id: task_id.to_string(),
        program_digest: String::new(),
        status: Status::Infra,
        reason: cause.to_string(),
        official: None,
        infra: Some(cause),
        tests: Vec::new(),
        wall_seconds: 0.0,
        cpu_seconds: None,
        memory_peak_bytes: None,
        processes_peak: None,
        isolation,
    }
}

/// A short digest of a program: records name what they executed.
pub(crate) fn digest(program: &str) -> String {
    blake3::hash(program.as_bytes()).to_hex()[..16].to_string()
}

/// The program each sample runs and its digest, by sample index.
fn programs(
    samples: &Samples,
    tasks: &HashMap<&str, &Task>,
    options: &Options,
) -> Vec<(String, String)> {
    samples
        .samples
        .iter()
        .map(|sample| {
            let program = sample.program(tasks[sample.task_id.as_str()], options.calibrated);
            let digest = digest(&program);
            (program, digest)
        })
        .collect()
}

/// One program to judge against its task's tests.
pub(crate) struct Job {
    pub index: usize,
    pub task_id: String,
    pub program: String,
    pub digest: String,
    pub test: String,
    pub limits: Limits,
    pub guards: bool,
}

/// What a spawned job reports back.
pub(crate) enum Finished {
    Sample(SampleResult),
    Reference(SampleResult),
}

/// Runs one job and turns its outcome into a verdict.
pub(crate) async fn judge(engine: &Engine, environment: &Environment, job: Job) -> SampleResult {
    let mut unittest = UnittestJob::new(job.program, job.test);
    unittest.limits = Some(job.limits);
    unittest.guards = job.guards;
    let outcome = engine.run_unittest(unittest).await;
    let infra = infra_cause(&outcome, environment);
    SampleResult {
        index: job.index,
        task_id: job.task_id,
        program_digest: job.digest,
        status: if infra.is_some() {
            Status::Infra
        } else {
            outcome.status
        },
        reason: infra
            .as_ref()
            .map_or_else(|| outcome.reason.clone(), |c| c.to_string()),
        official: if infra.is_some() {
            None
        } else {
            official(&outcome)
        },
        infra,
        tests: outcome.tests,
        wall_seconds: outcome.usage.wall.as_secs_f64(),
        cpu_seconds: outcome.usage.cpu.map(|d| d.as_secs_f64()),
        memory_peak_bytes: outcome.usage.memory_peak_bytes,
        processes_peak: outcome.usage.processes_peak,
        isolation: outcome.isolation,
    }
}

/// Runs the reference solutions of `dataset` not measured yet (`assay check`; an evaluation
/// does the same on the way).
pub async fn check(
    engine: &Engine,
    dataset: &Dataset,
    environment: &Environment,
    references: &mut References,
    progress: &mut dyn Progress,
) -> Result<GroundTruthSummary, String> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let pending = references.spawn_missing(engine, environment, &dataset.tasks, &tx);
    drop(tx);
    progress.start(0, 0, pending.len());
    while let Some(finished) = rx.recv().await {
        if let Finished::Reference(result) = finished {
            references.record(&result)?;
            progress.reference_finished(&result);
        }
    }
    references.sync()?;
    Ok(references.summary(&dataset.tasks))
}

/// Top-level modules the tasks declare that the sandbox's environment cannot import.
pub async fn missing_modules(
    engine: &Engine,
    dataset: &Dataset,
) -> Result<BTreeSet<String>, String> {
    let libs: BTreeSet<&str> = dataset
        .tasks
        .iter()
        .flat_map(|t| t.libs.iter().map(String::as_str))
        .collect();
    let code = format!(
        "import importlib.util, json\nprint(json.dumps([m for m in {libs:?} if importlib.util.find_spec(m) is None]))\n",
        libs = libs.iter().collect::<Vec<_>>()
    );
    let mut job = ScriptJob::new(code);
    job.collect_files = false;
    let outcome = engine.run_script(job).await;
    if outcome.status != Status::Pass {
        return Err(format!(
            "probing the environment's libraries failed: {} {}",
            outcome.reason, outcome.stderr.text
        ));
    }
    serde_json::from_str(outcome.stdout.text.trim()).map_err(|e| {
        format!(
            "unexpected library probe output ({e}): {}",
            outcome.stdout.text
        )
    })
}

/// One evaluation: samples of a dataset, run on an engine.
pub struct Evaluation<'a> {
    pub engine: &'a Engine,
    pub dataset: &'a Dataset,
    pub samples: &'a Samples,
    pub options: &'a Options,
    pub environment: &'a Environment,
    /// The model's name in `pass_at_k.json`.
    pub model: &'a str,
    /// Samples the model never answered (task id, why): `infra` verdicts, kept out of
    /// `results.jsonl` because a resumed run asks the model again.
    pub unanswered: &'a [(String, String)],
}

impl Evaluation<'_> {
    /// Evaluates the samples not yet in `records`, appending each verdict to `run` as it
    /// finishes, then writes `eval_results.json` and `pass_at_k.json`. Reference solutions
    /// not measured yet run on the way, into `references`; a task's samples wait for its
    /// reference only, which sets their time limit.
    pub async fn run(
        &self,
        run: &mut RunDir,
        records: Vec<Value>,
        references: &mut References,
        progress: &mut dyn Progress,
    ) -> Result<Summary, String> {
        let Evaluation {
            engine,
            dataset,
            samples,
            options,
            environment,
            unanswered,
            ..
        } = *self;
        let started = std::time::Instant::now();
        let tasks: HashMap<&str, &Task> = dataset
            .tasks
            .iter()
            .map(|t| (t.task_id.as_str(), t))
            .collect();
        let programs = programs(samples, &tasks, options);
        let mut results = reuse(run, records, samples, &programs)?;
        let (tx, mut rx) = mpsc::unbounded_channel::<Finished>();
        let waiting = references.spawn_missing(engine, environment, &dataset.tasks, &tx);
        // Longest first, by the reference's time where known: the slowest tasks start early
        // instead of ending the run alone.
        let mut pending: Vec<(&Sample, Option<ReferenceResult>)> = samples
            .samples
            .iter()
            .filter(|s| !results.contains_key(&s.index))
            .map(|s| (s, references.truth.tasks.get(&s.task_id).cloned()))
            .collect();
        let seconds = |r: &Option<ReferenceResult>| r.as_ref().map_or(0.0, |r| r.seconds);
        pending.sort_by(|a, b| seconds(&b.1).total_cmp(&seconds(&a.1)));
        progress.start(samples.samples.len(), results.len(), waiting.len());
        for (sample, known) in pending {
            let task = tasks[sample.task_id.as_str()];
            let (program, digest) = programs[sample.index].clone();
            let mut job = Job {
                index: sample.index,
                task_id: sample.task_id.clone(),
                program,
                digest,
                test: task.test.clone(),
                limits: options.limits.clone(),
                guards: options.guards,
            };
            let mut reference = waiting.get(&sample.task_id).cloned();
            let (engine, environment, tx, time) = (
                engine.clone(),
                environment.clone(),
                tx.clone(),
                options.time.clone(),
            );
            tokio::spawn(async move {
                let measured = match reference.as_mut() {
                    Some(rx) => rx
                        .wait_for(Option::is_some)
                        .await
                        .ok()
                        .and_then(|r| r.clone()),
                    None => known,
                };
                job.limits.wall = time.limit(measured.as_ref());
                job.limits.cpu = None;
                let _ = tx.send(Finished::Sample(judge(&engine, &environment, job).await));
            });
        }
        drop(tx);
        while let Some(finished) = rx.recv().await {
            match finished {
                Finished::Sample(result) => {
                    run.append(&serde_json::to_value(&result).expect("results serialize"))
                        .map_err(|e: RunDirError| e.to_string())?;
                    progress.finished(&result);
                    results.insert(result.index, result);
                }
                Finished::Reference(result) => {
                    references.record(&result)?;
                    progress.reference_finished(&result);
                }
            }
        }
        // One record per sample, in sample order: records an earlier run made for samples
        // that have since moved (or gone) are renumbered (or dropped).
        let records: Vec<Value> = results
            .values()
            .map(|r| serde_json::to_value(r).expect("results serialize"))
            .collect();
        run.rewrite_results(&records).map_err(|e| e.to_string())?;
        references.sync()?;
        let ground_truth = references.summary(&dataset.tasks);
        // Samples the model never answered are `infra`: in both figures, as in the summary.
        for (i, (task_id, why)) in unanswered.iter().enumerate() {
            let index = samples.samples.len() + i;
            results.insert(
                index,
                no_answer(index, task_id, why, engine.isolation().level),
            );
        }
        let scores = scores(&results);
        self.write_files(&tasks, &programs, run, &results, &scores, &ground_truth)?;
        Ok(summarize(
            dataset,
            &results,
            scores,
            ground_truth,
            options.time.clone(),
            started.elapsed(),
        ))
    }
}

impl Evaluation<'_> {
    /// `eval_results.json` (official shape: the executed program, status and details of every
    /// sample with a verdict, by task in task order, samples in file order) and `pass_at_k.json`.
    fn write_files(
        &self,
        tasks: &HashMap<&str, &Task>,
        programs: &[(String, String)],
        run: &RunDir,
        results: &BTreeMap<usize, SampleResult>,
        scores: &Scores,
        ground_truth: &GroundTruthSummary,
    ) -> Result<(), String> {
        let Evaluation {
            dataset,
            samples,
            options,
            model,
            ..
        } = *self;
        let mut eval: BTreeMap<u32, (String, Vec<Value>)> = BTreeMap::new();
        for sample in &samples.samples {
            let Some(result) = results.get(&sample.index) else {
                continue;
            };
            let Some(verdict) = &result.official else {
                continue;
            };
            let entry = json!({
                "task_id": sample.task_id,
                "solution": programs[sample.index].0,
                "status": verdict.status,
                "details": serde_json::to_value(Details(&verdict.details)).expect("details serialize"),
            });
            eval.entry(tasks[sample.task_id.as_str()].number())
                .or_insert_with(|| (sample.task_id.clone(), Vec::new()))
                .1
                .push(entry);
        }
        let mut by_task = serde_json::Map::new();
        for (_, (task_id, entries)) in eval {
            by_task.insert(task_id, Value::Array(entries));
        }
        let manifest = run.manifest().map_err(|e| e.to_string())?;
        let date = manifest["started_at"]
            .as_u64()
            .map_or_else(String::new, format_minute);
        run.write_json("eval_results.json", &json!({"date": date, "eval": by_task}))
            .map_err(|e| e.to_string())?;
        let mut pass_at_k = serde_json::Map::new();
        for (k, value) in &scores.pass_at_k {
            pass_at_k.insert(k.clone(), json!(value));
        }
        pass_at_k.insert("model".into(), json!(model));
        pass_at_k.insert("split".into(), json!(options.split.as_str()));
        pass_at_k.insert("subset".into(), json!(dataset.subset.as_str()));
        pass_at_k.insert("calibrated".into(), json!(options.calibrated));
        pass_at_k.insert("gt_pass_rate".into(), json!(ground_truth.pass_rate));
        pass_at_k.insert("failed_tasks".into(), json!(ground_truth.failed_ids()));
        // Not in the official file: what the figures above leave out, and the figure the
        // official harness would give here.
        pass_at_k.insert("tasks_judged".into(), json!(scores.tasks_judged));
        pass_at_k.insert(
            "tasks_set_apart".into(),
            json!(scores.tasks_set_apart.len()),
        );
        pass_at_k.insert("samples_set_apart".into(), json!(scores.samples_set_apart));
        pass_at_k.insert(
            "infra_as_fail".into(),
            json!(scores.pass_at_k_infra_as_fail),
        );
        run.write_json("pass_at_k.json", &Value::Object(pass_at_k))
            .map_err(|e| e.to_string())
    }
}

/// pass@k with `infra` samples left out (tasks with none judged left out too), and with
/// them counted as failures.
fn scores(results: &BTreeMap<usize, SampleResult>) -> Scores {
    let empty = TaskTally {
        samples: 0,
        passed: 0,
    };
    let mut judged: BTreeMap<&str, TaskTally> = BTreeMap::new();
    let mut all: BTreeMap<&str, TaskTally> = BTreeMap::new();
    for result in results.values() {
        let passed = result.official.as_ref().is_some_and(Official::passed);
        let tally = all.entry(result.task_id.as_str()).or_insert(empty);
        tally.samples += 1;
        tally.passed += u64::from(passed);
        if result.official.is_some() {
            let tally = judged.entry(result.task_id.as_str()).or_insert(empty);
            tally.samples += 1;
            tally.passed += u64::from(passed);
        }
    }
    let named = |tallies: Vec<TaskTally>| {
        pass_at_ks(&tallies, DEFAULT_KS)
            .into_iter()
            .map(|(k, v)| (format!("pass@{k}"), v))
            .collect()
    };
    Scores {
        pass_at_k: named(judged.values().copied().collect()),
        tasks_judged: judged.len(),
        tasks_set_apart: all
            .keys()
            .filter(|task| !judged.contains_key(*task))
            .map(|task| task.to_string())
            .collect(),
        samples_set_apart: results.values().filter(|r| r.official.is_none()).count(),
        pass_at_k_infra_as_fail: named(all.into_values().collect()),
    }
}

fn summarize(
    dataset: &Dataset,
    results: &BTreeMap<usize, SampleResult>,
    scores: Scores,
    ground_truth: GroundTruthSummary,
    time_policy: TimePolicy,
    wall: Duration,
) -> Summary {
    let mut statuses = BTreeMap::new();
    let mut officials = BTreeMap::new();
    let mut infra = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for result in results.values() {
        seen.insert(result.task_id.as_str());
        *statuses.entry(result.status.to_string()).or_insert(0) += 1;
        match &result.official {
            Some(verdict) => {
                *officials.entry(verdict.status.clone()).or_insert(0) += 1;
            }
            None => {
                infra.insert(result.task_id.clone(), result.reason.clone());
            }
        }
    }
    let mut slowest: Vec<(String, f64, String)> = results
        .values()
        .map(|r| (r.task_id.clone(), r.wall_seconds, r.status.to_string()))
        .collect();
    slowest.sort_by(|a, b| b.1.total_cmp(&a.1));
    slowest.truncate(10);
    Summary {
        scores,
        tasks_in_dataset: dataset.tasks.len(),
        tasks_missing: dataset
            .tasks
            .iter()
            .filter(|t| !seen.contains(t.task_id.as_str()))
            .map(|t| t.task_id.clone())
            .collect(),
        samples: results.len(),
        statuses,
        official: officials,
        infra,
        slowest,
        ground_truth,
        time_policy,
        wall_seconds: wall.as_secs_f64(),
    }
}

/// The official harness's model name: the samples file's name up to `--bigcodebench-`.
pub fn model_name(samples: &std::path::Path) -> String {
    let name = samples
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".jsonl").unwrap_or(&name);
    stem.split("--bigcodebench-")
        .next()
        .unwrap_or(stem)
        .to_string()
}

/// Unix seconds now.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `YYYY-MM-DD HH:MM` (UTC), the official results' date format.
fn format_minute(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let minutes = unix % 86_400 / 60;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        minutes / 60,
        minutes % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(index: usize, task: &str, status: Option<&str>) -> SampleResult {
        SampleResult {
            index,
            task_id: task.into(),
            program_digest: String::new(),
            status: if status.is_some() {
                Status::Fail
            } else {
                Status::Infra
            },
            reason: String::new(),
            official: status.map(|s| Official {
                status: s.into(),
                details: Vec::new(),
            }),
            infra: None,
            tests: Vec::new(),
            wall_seconds: 0.0,
            cpu_seconds: None,
            memory_peak_bytes: None,
            processes_peak: None,
            isolation: IsolationLevel::Full,
        }
    }

    #[test]
    fn scores_say_what_they_leave_out_and_the_official_figure_here() {
        // Task a: judged, passes. Task b: one pass, one infra. Task c: infra only.
        let results: BTreeMap<usize, SampleResult> = [
            result(0, "a", Some("pass")),
            result(1, "b", Some("pass")),
            result(2, "b", None),
            result(3, "c", None),
        ]
        .into_iter()
        .map(|r| (r.index, r))
        .collect();
        let scores = scores(&results);
        // Left out: c entirely, b's infra sample. b has one judged sample: pass@1 = 1.
        assert_eq!(scores.pass_at_k, [("pass@1".to_string(), 1.0)].into());
        assert_eq!(scores.tasks_judged, 2);
        assert_eq!(scores.tasks_set_apart, ["c"]);
        assert_eq!(scores.samples_set_apart, 2);
        // Counted as failures: a 1, b 1/2, c 0 over three tasks.
        assert_eq!(
            scores.pass_at_k_infra_as_fail,
            [("pass@1".to_string(), 0.5)].into()
        );
    }

    #[test]
    fn official_dates_and_model_names() {
        assert_eq!(format_minute(0), "1970-01-01 00:00");
        assert_eq!(format_minute(1_735_095_060), "2024-12-25 02:51");
        assert_eq!(format_minute(951_782_400), "2000-02-29 00:00");
        assert_eq!(
            model_name(std::path::Path::new(
                "/x/checkpoint-200--main--bigcodebench-hard-complete--vllm-0-1-sanitized_calibrated.jsonl"
            )),
            "checkpoint-200--main"
        );
        assert_eq!(model_name(std::path::Path::new("samples.jsonl")), "samples");
    }
}
