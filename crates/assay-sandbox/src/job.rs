//! Unittest jobs and script jobs: one confined process each, from spec to verdict.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use tokio::time::Instant;

use crate::collect::{self, is_plain_name, is_plain_relative, Budget};
use crate::config::{IsolationMode, Limits};
use crate::declared::declared_tests;
use crate::drive::{ending, finish, run_until, settle, Aftermath, End, Ending, Read, Streams};
use crate::engine::{Engine, Inner};
use crate::meter::CpuMeter;
use crate::outcome::{PyError, ScriptOutcome, UnittestOutcome, Usage};
use crate::protocol::job::{Control, ErrorFrame, Event, FileData, JobBase, Rlimits, TestsDone};
use crate::sandbox::{Sandbox, Workspace};
use assay_records::Captured;
use assay_records::IsolationLevel;
use assay_records::{Status, TestBudget, TestOutcome, TestResult};

/// Source code and its `unittest` tests, run together in one module, as BigCodeBench does.
#[derive(Debug, Clone)]
pub struct UnittestJob {
    /// The code under test.
    pub code: String,
    /// Its tests: the source of a `unittest.TestCase` subclass.
    pub test: String,
    /// The `unittest.TestCase` subclass to run. Default `TestCases`.
    pub test_class: String,
    /// Budgets of single test methods, by name: a test that computes past its CPU budget, or
    /// waits computing nothing past its waiting budget, ends the job as a timeout naming it,
    /// long before the job's own wall limit. Tests without one have only the job's limit.
    pub test_budgets: BTreeMap<String, TestBudget>,
    /// `None`: the engine's default limits.
    pub limits: Option<Limits>,
    /// Extra environment variables.
    pub env: BTreeMap<String, String>,
    /// The official harness's process guards (`os.kill` limited to the job's own children,
    /// commands mentioning `kill` skipped, `exec` ignored...; see `official_guards.py`): on by
    /// default, because some official verdicts depend on them.
    pub guards: bool,
    /// Files placed in the job's working directory before it starts (what a check reads).
    pub files: Vec<InputFile>,
    /// Empty directories made in the working directory before it starts (relative, plain).
    pub dirs: Vec<String>,
}

impl UnittestJob {
    /// `code` against `test`'s `TestCases`, with the engine's limits and the official guards.
    pub fn new(code: impl Into<String>, test: impl Into<String>) -> Self {
        UnittestJob {
            code: code.into(),
            test: test.into(),
            test_class: "TestCases".into(),
            test_budgets: BTreeMap::new(),
            limits: None,
            env: BTreeMap::new(),
            guards: true,
            files: Vec::new(),
            dirs: Vec::new(),
        }
    }
}

/// A file placed in a job's working directory before it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFile {
    /// Relative to the working directory; plain components only (no `..`, no leading `/`).
    pub path: String,
    /// Its content.
    pub data: Vec<u8>,
}

/// Code run as `__main__` in a working directory, like `python main.py ARGS`.
#[derive(Debug, Clone)]
pub struct ScriptJob {
    /// The script.
    pub code: String,
    /// Its arguments (`sys.argv[1:]`).
    pub argv: Vec<String>,
    /// Files placed in the working directory first.
    pub files: Vec<InputFile>,
    /// The working directory's name inside the workspace. Default `work`.
    pub workdir: String,
    /// `None`: the engine's default limits.
    pub limits: Option<Limits>,
    /// Extra environment variables.
    pub env: BTreeMap<String, String>,
    /// Read back the files left in the working directory. Default `true`.
    pub collect_files: bool,
}

impl ScriptJob {
    /// `code` in a working directory `work`, with the engine's limits.
    pub fn new(code: impl Into<String>) -> Self {
        ScriptJob {
            code: code.into(),
            argv: Vec::new(),
            files: Vec::new(),
            workdir: "work".into(),
            limits: None,
            env: BTreeMap::new(),
            collect_files: true,
        }
    }
}

/// The rlimits a job process applies to itself before its code runs.
pub(crate) fn rlimits(limits: &Limits, sandbox: &Sandbox, cpu: bool) -> Rlimits {
    let cgroup = sandbox.cgroup.is_some();
    Rlimits {
        cpu_seconds: cpu.then(|| limits.cpu().as_secs_f64().ceil() as u64),
        file_size_bytes: limits.file_size_bytes,
        open_files: limits.open_files,
        // Without a cgroup, RLIMIT_NPROC is the process cap; it counts per user namespace, so
        // it is only per-job when the job has its own.
        processes: (!cgroup && sandbox.layers.user_ns).then_some(limits.processes),
        data_bytes: (!cgroup).then_some(limits.memory_bytes),
        stack_bytes: limits.stack_bytes,
    }
}

/// Where a job's directories are, as the job sees them.
pub(crate) struct Layout {
    pub cwd: String,
    pub home: String,
    pub tmp: String,
}

pub(crate) fn layout(sandbox: &Sandbox, workdir: &str) -> Layout {
    let root = sandbox.workspace.job_path();
    let tmp = if sandbox.layers.private_tmp {
        root.clone()
    } else {
        root.join("tmp")
    };
    Layout {
        cwd: root.join(workdir).display().to_string(),
        home: root.join("home").display().to_string(),
        tmp: tmp.display().to_string(),
    }
}

fn infra<T>(reason: String, make: impl FnOnce(Status, String) -> T) -> T {
    make(Status::Infra, reason)
}

/// `tmp` + 8 characters, like the directory `tempfile.TemporaryDirectory()` gives the official
/// harness's jobs.
fn temp_name(id: u64) -> String {
    let seed = format!("{id}-{:?}", std::time::SystemTime::now());
    format!("tmp{}", &blake3::hash(seed.as_bytes()).to_hex()[..8])
}

fn is_memory_error(traceback: &str) -> bool {
    traceback
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.starts_with("MemoryError"))
}

/// What the unittest job's frames said.
#[derive(Default)]
struct TestLog {
    /// The tests the test source declares, read outside the sandbox (`None`: not readable).
    declared: Option<Vec<String>>,
    loaded: Option<Vec<String>>,
    tests: Vec<TestOutcome>,
    /// A class-level fixture skipped (`SkipTest` in `setUpClass`): its tests never start, and
    /// the official harness counts that as passing.
    fixture_skipped: bool,
    /// Budgets of single tests (see `UnittestJob::test_budgets`).
    budgets: BTreeMap<String, TestBudget>,
    /// The job's CPU time when the test now running started.
    cpu_at_start: Option<Duration>,
}

impl TestLog {
    fn observe(&mut self, frame: &Event, meter: &CpuMeter) -> Read {
        match frame {
            Event::TestStart { name } => {
                self.cpu_at_start = meter.read();
                match self.budgets.get(name) {
                    Some(&budget) => Read::Start(name.clone(), budget, self.cpu_at_start),
                    None => Read::Reset,
                }
            }
            Event::Loaded { tests } => {
                self.loaded = Some(tests.clone());
                Read::On
            }
            Event::Test {
                name,
                outcome,
                detail,
                seconds,
            } => {
                self.tests.push(TestOutcome {
                    name: name.clone(),
                    result: *outcome,
                    detail: detail.clone(),
                    seconds: *seconds,
                    cpu_seconds: meter
                        .read()
                        .zip(self.cpu_at_start.take())
                        .map(|(now, then)| now.saturating_sub(then).as_secs_f64()),
                });
                Read::Reset
            }
            Event::Fixture { outcome, .. } => {
                self.fixture_skipped |= *outcome == TestResult::Skip;
                Read::On
            }
            Event::ModuleError { .. } | Event::TestsDone(_) | Event::InternalError { .. } => {
                Read::Done
            }
            // `expect` admits no other event in a unittest job.
            _ => Read::On,
        }
    }

    /// Tests that did not report a passing outcome (pass, skip, expected failure, unexpected
    /// success): failed, errored, or never reported at all. The summary's failure lists come
    /// from the same process as the code, so they are not taken on trust alone.
    fn unaccounted(&self) -> Vec<String> {
        let passing = |t: &&TestOutcome| {
            matches!(
                t.result,
                TestResult::Pass
                    | TestResult::Skip
                    | TestResult::ExpectedFailure
                    | TestResult::UnexpectedSuccess
            )
        };
        let passed: HashSet<&str> = self
            .tests
            .iter()
            .filter(passing)
            .map(|t| t.name.as_str())
            .collect();
        let reported: HashSet<&str> = self.tests.iter().map(|t| t.name.as_str()).collect();
        self.loaded
            .iter()
            .flatten()
            .filter(|name| {
                // A test a skipped class fixture kept from starting is accounted for.
                let skipped_with_its_class =
                    self.fixture_skipped && !reported.contains(name.as_str());
                !passed.contains(name.as_str()) && !skipped_with_its_class
            })
            .cloned()
            .collect()
    }

    /// The reported tests plus, for tests that never reported, `crashed` for the first (the
    /// one running when the process died) and `not-run` for the rest.
    fn all_tests(&self, crashed: Option<&str>) -> Vec<TestOutcome> {
        let mut tests = self.tests.clone();
        let seen: HashSet<&str> = self.tests.iter().map(|t| t.name.as_str()).collect();
        let mut first = true;
        for name in self.loaded.iter().flatten() {
            if seen.contains(name.as_str()) {
                continue;
            }
            let (result, detail) = match crashed {
                Some(reason) if first => (TestResult::Crashed, reason.to_string()),
                _ => (TestResult::NotRun, String::new()),
            };
            first = false;
            tests.push(TestOutcome {
                name: name.clone(),
                result,
                detail,
                seconds: 0.0,
                cpu_seconds: None,
            });
        }
        tests
    }

    /// Whether the tests the job loaded are not the ones its source declares: the class was
    /// emptied, renamed or extended by code that ran before it. The difference, if any:
    /// (declared but not loaded, loaded but not declared).
    fn undeclared(&self) -> Option<(Vec<&str>, Vec<&str>)> {
        let declared = self.declared.as_ref()?;
        let loaded = self.loaded.as_deref().unwrap_or_default();
        let missing: Vec<&str> = declared
            .iter()
            .filter(|name| !loaded.contains(name))
            .map(String::as_str)
            .collect();
        let extra: Vec<&str> = loaded
            .iter()
            .filter(|name| !declared.contains(name))
            .map(String::as_str)
            .collect();
        (!missing.is_empty() || !extra.is_empty()).then_some((missing, extra))
    }

    /// A summary is consistent with the streamed events: the same tests, each once.
    fn consistent(&self, tests_run: u64) -> bool {
        let mut names = HashSet::new();
        let unique = self.tests.iter().all(|t| names.insert(t.name.as_str()));
        let known = match &self.loaded {
            Some(loaded) => self.tests.iter().all(|t| loaded.contains(&t.name)),
            None => false,
        };
        unique && known && tests_run == self.tests.len() as u64
    }
}

/// A unittest job's final report.
enum UnittestReport<'a> {
    /// The module raised before its tests ran.
    Module {
        error: &'a ErrorFrame,
        tampered: &'a [String],
    },
    /// The tests ran.
    Tests(&'a TestsDone),
}

impl<'a> UnittestReport<'a> {
    fn of(frame: &'a Event) -> Option<Self> {
        match frame {
            Event::ModuleError {
                error, tampered, ..
            } => Some(UnittestReport::Module { error, tampered }),
            Event::TestsDone(done) => Some(UnittestReport::Tests(done)),
            _ => None,
        }
    }
}

/// Everything a unittest verdict is derived from.
struct UnittestRun {
    progress: TestLog,
    end: End,
    aftermath: Aftermath,
    limits: Limits,
    /// Whether the job reported that untrusted code was about to run.
    started: bool,
}

impl UnittestRun {
    fn verdict(self) -> (Status, String, Vec<TestOutcome>, UnittestParts) {
        let UnittestRun {
            progress,
            end,
            aftermath,
            limits,
            started,
        } = self;
        let mut parts = UnittestParts::default();
        let done = match ending(&end, &aftermath, &limits, started, UnittestReport::of) {
            Ending::Reported(done) => done,
            Ending::Stopped(status, reason) => {
                // The test running when the clock or a limit stopped the code crashed.
                let tests = progress.all_tests(Some(&reason));
                return (status, reason, tests, parts);
            }
            Ending::HarnessFailed(reason) => {
                return (Status::Infra, reason, progress.all_tests(None), parts);
            }
            Ending::Unreported(cause) => {
                return match &progress.loaded {
                    Some(_) => {
                        let reason = format!("a test did not finish: {cause}");
                        let tests = progress.all_tests(Some(&reason));
                        (Status::Fail, reason, tests, parts)
                    }
                    None => {
                        let reason = format!("the code did not reach its tests: {cause}");
                        (Status::Error, reason, progress.all_tests(None), parts)
                    }
                };
            }
        };
        let done = match done {
            UnittestReport::Module { error, tampered } => {
                parts.tampered = tampered.to_vec();
                let status = if error.name == "MemoryError" {
                    Status::Oom
                } else {
                    Status::Error
                };
                let reason = format!("{}: {}", error.name, error.message);
                parts.error = Some(error.clone().into());
                return (status, reason, Vec::new(), parts);
            }
            UnittestReport::Tests(done) => done,
        };
        parts.tampered = done.tampered.clone();
        parts.failures = done.failures.clone();
        parts.errors = done.errors.clone();
        parts.error = done.aborted.clone().map(Into::into);
        let tests = progress.all_tests(None);
        let total = progress.loaded.as_ref().map_or(0, Vec::len);
        if !parts.tampered.is_empty() {
            let reason = format!(
                "the code tampered with unittest: {}",
                parts.tampered.join(", ")
            );
            return (Status::Fail, reason, tests, parts);
        }
        if let Some((missing, extra)) = progress.undeclared() {
            let list = |names: &[&str]| match names {
                [] => "none".to_string(),
                names => names.join(", "),
            };
            let reason = format!(
                "the tests that ran are not the ones the test source declares \
                 (missing: {}; not declared: {})",
                list(&missing),
                list(&extra)
            );
            return (Status::Fail, reason, tests, parts);
        }
        if !progress.consistent(done.tests_run) {
            let reason = "the test report does not match the tests that ran".to_string();
            return (Status::Fail, reason, tests, parts);
        }
        let memory = parts
            .failures
            .iter()
            .chain(&parts.errors)
            .any(|(_, tb)| is_memory_error(tb))
            || parts
                .error
                .as_ref()
                .is_some_and(|e| e.name == "MemoryError");
        if memory {
            let reason = "a test ran out of memory (MemoryError)".to_string();
            return (Status::Oom, reason, tests, parts);
        }
        if let Some(error) = &parts.error {
            let reason = format!("{} escaped the test run: {}", error.name, error.message);
            return (Status::Fail, reason, tests, parts);
        }
        let issues: Vec<&str> = parts
            .failures
            .iter()
            .chain(&parts.errors)
            .map(|(name, _)| name.as_str())
            .collect();
        if !issues.is_empty() {
            let reason = format!(
                "{} of {total} tests failed: {}",
                issues.len(),
                issues.join(", ")
            );
            return (Status::Fail, reason, tests, parts);
        }
        let unaccounted = progress.unaccounted();
        if !unaccounted.is_empty() {
            let reason = format!(
                "{} of {total} tests did not report a pass: {}",
                unaccounted.len(),
                unaccounted.join(", ")
            );
            return (Status::Fail, reason, tests, parts);
        }
        let reason = match total {
            1 => "the test passed".to_string(),
            n => format!("all {n} tests passed"),
        };
        (Status::Pass, reason, tests, parts)
    }
}

#[derive(Default)]
struct UnittestParts {
    failures: Vec<(String, String)>,
    errors: Vec<(String, String)>,
    error: Option<PyError>,
    tampered: Vec<String>,
}

fn unittest_outcome(status: Status, reason: String) -> UnittestOutcome {
    UnittestOutcome {
        status,
        reason,
        tests: Vec::new(),
        failures: Vec::new(),
        errors: Vec::new(),
        error: None,
        tampered: Vec::new(),
        reported: false,
        stdout: Captured::default(),
        stderr: Captured::default(),
        usage: Usage::default(),
        isolation: IsolationLevel::Minimal,
    }
}

fn script_outcome(status: Status, reason: String) -> ScriptOutcome {
    ScriptOutcome {
        status,
        reason,
        exit_code: None,
        error: None,
        stdout: Captured::default(),
        stderr: Captured::default(),
        files: Vec::new(),
        usage: Usage::default(),
        isolation: IsolationLevel::Minimal,
    }
}

impl Inner {
    /// A ready job process that meets the isolation the engine insists on, with its cgroup
    /// limits set.
    pub(crate) async fn sandbox_for(&self, limits: &Limits) -> Result<Sandbox, String> {
        let mut sandbox = self.take_sandbox().await?;
        let level = sandbox.layers.level();
        if self.config.isolation == IsolationMode::Strict && level < IsolationLevel::Full {
            return Err(format!(
                "strict isolation was requested but the job process only reached `{level:?}`"
            ));
        }
        if let Some(cgroup) = sandbox.cgroup.as_mut() {
            cgroup
                .start(limits.memory_bytes, limits.processes, limits.cpus)
                .map_err(|e| format!("setting the job's cgroup limits: {e}"))?;
        }
        Ok(sandbox)
    }
}

/// What one job process's run produced, for the job kind to turn into its outcome.
struct Ran {
    end: End,
    /// The job said untrusted code was about to run: from then on, the results pipe may carry
    /// what the code wrote, and no failure is the harness's.
    started: bool,
    aftermath: Aftermath,
    streams: Streams,
    wall: Duration,
    isolation: IsolationLevel,
    workspace: Arc<Workspace>,
}

impl Inner {
    /// What every job kind starts from: its directories, environment and rlimits. `cpu`:
    /// whether the CPU limit covers the whole job (not for sessions, whose cells each get
    /// their own).
    pub(crate) fn job_base(
        &self,
        sandbox: &Sandbox,
        workdir: &str,
        env: &BTreeMap<String, String>,
        limits: &Limits,
        cpu: bool,
    ) -> JobBase {
        let dirs = layout(sandbox, workdir);
        JobBase {
            env: self.job_env(Path::new(&dirs.home), Path::new(&dirs.tmp), env),
            cwd: dirs.cwd,
            make_dirs: vec![dirs.home, dirs.tmp],
            limits: rlimits(limits, sandbox, cpu),
            conditions: self.config.conditions,
        }
    }

    /// Takes a slot and a ready job process, sends it the job `job` makes of its base, and
    /// reads until `on_frame` says a frame is the one awaited, the job ends, or its time is
    /// up.
    async fn run_job(
        &self,
        workdir: Option<&str>,
        env: &BTreeMap<String, String>,
        limits: &Limits,
        job: impl Fn(JobBase) -> Control,
        on_frame: impl FnMut(&Event, &CpuMeter) -> Read,
    ) -> Result<Ran, String> {
        let mut slot = self.slot().await;
        // A ready process can die while it waits (the kernel's OOM killer picks job processes
        // first): if it can't take the job, the job hasn't started; try one fresh process.
        let mut attempts = 0;
        let (mut sandbox, started) = loop {
            attempts += 1;
            let mut sandbox = self.sandbox_for(limits).await?;
            let workdir = workdir.map_or_else(|| temp_name(sandbox.workspace.id), str::to_string);
            let spec = job(self.job_base(&sandbox, &workdir, env, limits, true));
            let started = Instant::now();
            match sandbox.send(&spec).await {
                Ok(()) => break (sandbox, started),
                Err(e) if attempts >= 2 => {
                    return Err(format!("no job process could take the job: {e}"))
                }
                Err(e) => tracing::warn!("a ready job process could not take its job: {e}"),
            }
        };
        let mut streams = Streams::new(limits.output_bytes);
        let meter = sandbox.cpu_meter();
        let run = run_until(&mut sandbox, &mut streams, started + limits.wall, on_frame);
        tracing::debug!("job started");
        let end = tokio::select! {
            end = run => end,
            never = slot.follow(&meter) => match never {},
        };
        drop(slot);
        tracing::debug!(wall = ?started.elapsed(), end = end.label(), "job ended");
        let code_started = sandbox.results.code_started();
        let isolation = sandbox.layers.level();
        let workspace = sandbox.workspace.clone();
        let aftermath = match &end {
            End::Final(last) => settle(sandbox, &mut streams, last),
            _ => finish(&mut sandbox, &mut streams).await,
        };
        Ok(Ran {
            end,
            started: code_started,
            aftermath,
            streams,
            wall: started.elapsed(),
            isolation,
            workspace,
        })
    }
}

impl Engine {
    /// Runs `job.code` and `job.test` together in one fresh module and its test class with
    /// `unittest`, as BigCodeBench's official evaluator does, and returns the verdict.
    pub async fn run_unittest(&self, job: UnittestJob) -> UnittestOutcome {
        let paths = job.files.iter().map(|f| &f.path).chain(&job.dirs);
        if let Some(bad) = paths.into_iter().find(|p| !is_plain_relative(p)) {
            let reason = format!("invalid job: input path {bad:?} must be relative and plain");
            return infra(reason, unittest_outcome);
        }
        let inner = &self.inner;
        let limits = job.limits.unwrap_or_else(|| inner.config.limits.clone());
        let files = encode_files(&job.files);
        let control = |base| Control::Unittest {
            base,
            code: job.code.clone(),
            test: job.test.clone(),
            test_class: job.test_class.clone(),
            guards: job.guards,
            files: files.clone(),
            dirs: job.dirs.clone(),
        };
        let mut progress = TestLog {
            declared: declared_tests(&job.test, &job.test_class),
            budgets: job.test_budgets,
            ..TestLog::default()
        };
        let ran = inner
            .run_job(None, &job.env, &limits, control, |frame, meter| {
                progress.observe(frame, meter)
            })
            .await;
        let Ran {
            end,
            started,
            aftermath,
            mut streams,
            wall,
            isolation,
            ..
        } = match ran {
            Ok(ran) => ran,
            Err(e) => return infra(e, unittest_outcome),
        };
        let usage = aftermath.usage(wall);
        let reported = matches!(&end, End::Final(frame) if UnittestReport::of(frame).is_some());
        let run = UnittestRun {
            progress,
            end,
            aftermath,
            limits,
            started,
        };
        let (status, reason, tests, parts) = run.verdict();
        UnittestOutcome {
            status,
            reason,
            tests,
            failures: parts.failures,
            errors: parts.errors,
            error: parts.error,
            tampered: parts.tampered,
            reported,
            stdout: streams.out.take(),
            stderr: streams.err.take(),
            usage,
            isolation,
        }
    }

    /// Runs `job.code` as `__main__` in its own working directory and returns the verdict,
    /// the output and the files it left there.
    pub async fn run_script(&self, job: ScriptJob) -> ScriptOutcome {
        if !is_plain_name(&job.workdir) {
            let reason = format!(
                "invalid job: workdir {:?} must be one plain name",
                job.workdir
            );
            return infra(reason, script_outcome);
        }
        if let Some(bad) = job.files.iter().find(|f| !is_plain_relative(&f.path)) {
            let reason = format!(
                "invalid job: input path {:?} must be relative and plain",
                bad.path
            );
            return infra(reason, script_outcome);
        }
        let inner = &self.inner;
        let limits = job.limits.unwrap_or_else(|| inner.config.limits.clone());
        let files = encode_files(&job.files);
        let control = |base| Control::Script {
            base,
            code: job.code.clone(),
            argv: job.argv.clone(),
            files: files.clone(),
        };
        let ran = inner
            .run_job(
                Some(&job.workdir),
                &job.env,
                &limits,
                control,
                |frame, _| {
                    Read::from(matches!(
                        frame,
                        Event::ScriptDone { .. } | Event::InternalError { .. }
                    ))
                },
            )
            .await;
        let mut ran = match ran {
            Ok(ran) => ran,
            Err(e) => return infra(e, script_outcome),
        };
        let mut outcome = script_verdict(&ran.end, ran.started, &ran.aftermath, &limits);
        if job.collect_files && outcome.status != Status::Infra {
            let root = ran.workspace.host_path();
            let workdir = job.workdir.clone();
            let collected = tokio::task::spawn_blocking(move || {
                collect::collect(&root, &workdir, Budget::default())
            })
            .await;
            match collected {
                Ok(Ok(files)) => outcome.files = files,
                Ok(Err(e)) => tracing::warn!("collecting the script's files: {e}"),
                Err(e) => tracing::warn!("collecting the script's files: {e}"),
            }
        }
        outcome.stdout = ran.streams.out.take();
        outcome.stderr = ran.streams.err.take();
        outcome.usage = ran.aftermath.usage(ran.wall);
        outcome.isolation = ran.isolation;
        outcome
    }
}

pub(crate) fn encode_files(files: &[crate::InputFile]) -> Vec<FileData> {
    let engine = base64::engine::general_purpose::STANDARD;
    files
        .iter()
        .map(|f| FileData {
            path: f.path.clone(),
            data: engine.encode(&f.data),
        })
        .collect()
}

fn script_verdict<'a>(
    end: &'a End,
    started: bool,
    aftermath: &Aftermath,
    limits: &Limits,
) -> ScriptOutcome {
    let report = |frame: &'a Event| match frame {
        Event::ScriptDone {
            exit_code, error, ..
        } => Some((*exit_code, error)),
        _ => None,
    };
    let (exit_code, error) = match ending(end, aftermath, limits, started, report) {
        Ending::Reported(done) => done,
        Ending::Stopped(status, reason) => return script_outcome(status, reason),
        Ending::HarnessFailed(reason) => return script_outcome(Status::Infra, reason),
        Ending::Unreported(cause) => {
            let reason = format!("the script did not finish: {cause}");
            let mut outcome = script_outcome(Status::Error, reason);
            outcome.exit_code = aftermath.exit().and_then(|e| e.code());
            return outcome;
        }
    };
    let error: Option<PyError> = error.clone().map(Into::into);
    let (status, reason) = match (&error, exit_code) {
        (Some(e), _) if e.name == "MemoryError" => (Status::Oom, "MemoryError".to_string()),
        (Some(e), _) => (Status::Error, format!("{}: {}", e.name, e.message)),
        (None, 0) => (Status::Pass, "exited with code 0".to_string()),
        (None, code) => (Status::Error, format!("exited with code {code}")),
    };
    let mut outcome = script_outcome(status, reason);
    outcome.exit_code = Some(exit_code);
    outcome.error = error;
    outcome
}
