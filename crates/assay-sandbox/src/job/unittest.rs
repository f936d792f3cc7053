//! A unittest job's frames read into its verdict: which tests ran, how each ended, and whether
//! the report can be believed.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use super::{encode_files, infra, Ran, UnittestJob};
use crate::collect::is_plain_relative;
use crate::config::Limits;
use crate::declared::declared_tests;
use crate::drive::{ending, Aftermath, End, Ending, Read, Streams};
use crate::engine::Engine;
use crate::meter::CpuMeter;
use crate::outcome::{PyError, UnittestOutcome, Usage};
use crate::protocol::job::{Control, Ended, ErrorFrame, Event, Finding, Outcome, TestsDone};
use crate::timing::{arrival, Timing};
use assay_records::integrity;
use assay_records::Captured;
use assay_records::IsolationLevel;
use assay_records::{IntegrityFinding, IntegrityKind};
use assay_records::{Status, TestOutcome, TestResult};

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
    /// A class-level fixture skipped (`SkipTest` in `setUpClass`): its tests never start (the
    /// official harness counts that as passing; assay, as the code's doing).
    fixture_skipped: bool,
    /// The test running now (between its `test_start` and its `test`).
    running: Option<String>,
    /// Tests whose own body ran to its end (the witness's `body_done`).
    bodies_done: HashSet<String>,
    /// For tests whose body an exception ended: which, and from where.
    ended: HashMap<String, Ended>,
    /// The job's CPU time when the test now running started.
    cpu_at_start: Option<Duration>,
}

impl TestLog {
    fn observe(&mut self, frame: &Event, meter: &CpuMeter) -> Read {
        match frame {
            Event::TestStart { name } => {
                self.running = Some(name.clone());
                self.cpu_at_start = meter.read();
                Read::Start(name.clone(), self.cpu_at_start)
            }
            Event::Loaded { tests } => {
                self.loaded = Some(tests.clone());
                Read::On
            }
            Event::BodyDone { name } => {
                // Only the running test's: the witness sends it from inside its body.
                if self.running.as_ref() == Some(name) {
                    self.bodies_done.insert(name.clone());
                }
                Read::On
            }
            Event::Test {
                name,
                outcome,
                detail,
                seconds,
                ended,
            } => {
                self.running = None;
                if let Some(ended) = ended {
                    self.ended.insert(name.clone(), ended.clone());
                }
                self.tests.push(TestOutcome {
                    name: name.clone(),
                    result: (*outcome).into(),
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
                self.fixture_skipped |= *outcome == Outcome::Skip;
                Read::On
            }
            Event::ModuleError { .. } | Event::TestsDone(_) | Event::InternalError { .. } => {
                Read::Done
            }
            // `expect` admits no other event in a unittest job.
            _ => Read::On,
        }
    }

    /// Tests that did not report a pass: failed, errored, ended otherwise (a skip in
    /// `tearDown`), or never reported at all. The summary's failure lists come from the same
    /// process as the code, so they are not taken on trust alone.
    fn unaccounted(&self) -> Vec<String> {
        let passed: HashSet<&str> = self
            .tests
            .iter()
            .filter(|t| t.result == TestResult::Pass)
            .map(|t| t.name.as_str())
            .collect();
        self.loaded
            .iter()
            .flatten()
            .filter(|name| !passed.contains(name.as_str()))
            .cloned()
            .collect()
    }

    /// Tests that unittest counts as passing although their own body did not run to its end,
    /// in the order they were loaded: a skip, an outcome swallowed, a body never run. A pass is
    /// earned only by a body that sent `body_done` (the official harness counts all of these
    /// as passes; none of BigCodeBench's tests skips or expects a failure).
    ///
    /// Only a test source whose `def test...` methods the supervisor could read has a witness
    /// in every test; in one it could not (tests a decorator makes), only skips are unearned.
    fn unearned(&self) -> Vec<IntegrityFinding> {
        let reported: HashMap<&str, TestResult> = self
            .tests
            .iter()
            .map(|t| (t.name.as_str(), t.result))
            .collect();
        self.loaded
            .iter()
            .flatten()
            .filter_map(|name| {
                let (kind, what) = self.how_unearned(name, reported.get(name.as_str()).copied())?;
                Some(IntegrityFinding {
                    kind,
                    test: Some(name.clone()),
                    what,
                })
            })
            .collect()
    }

    /// Why test `name`, which ended as `result` (none: it never reported), did not earn what
    /// unittest recorded, if it did not.
    fn how_unearned(
        &self,
        name: &str,
        result: Option<TestResult>,
    ) -> Option<(IntegrityKind, String)> {
        let ended = self.ended.get(name);
        if self.bodies_done.contains(name) {
            // The body reached its end after a part of it (a subtest) ended by an exception
            // unittest swallowed: passing, or skipped by that subtest.
            return match (result, ended) {
                (Some(TestResult::Pass), Some(ended)) => {
                    Some((IntegrityKind::EndedEarly, format!("{ended} in a subtest")))
                }
                (Some(TestResult::Skip), ended) => Some((
                    IntegrityKind::Skipped,
                    ended.map_or_else(
                        || "a subtest skipped".into(),
                        |e| format!("{e} in a subtest"),
                    ),
                )),
                _ => None,
            };
        }
        match result {
            Some(TestResult::Skip) => Some((
                IntegrityKind::Skipped,
                ended.map_or_else(|| "skipped before its body ran".into(), Ended::to_string),
            )),
            // No witness to require.
            _ if self.declared.is_none() => None,
            Some(
                result @ (TestResult::Pass
                | TestResult::ExpectedFailure
                | TestResult::UnexpectedSuccess),
            ) => Some(match ended {
                Some(ended) => (IntegrityKind::EndedEarly, ended.to_string()),
                None => (
                    IntegrityKind::NotRun,
                    format!("unittest recorded `{}`", result.as_str()),
                ),
            }),
            None if self.fixture_skipped => Some((
                IntegrityKind::Skipped,
                "its class fixture (setUpClass) skipped".into(),
            )),
            // Failed, errored, or never reported: not a pass anyway.
            _ => None,
        }
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

    /// Forgets test `name`'s report and every later one: the job was stopped in that test
    /// (its budget, known only after it ended, says it would have been).
    fn stopped_in(&mut self, name: &str) {
        if let Some(at) = self.tests.iter().position(|t| t.name == name) {
            self.tests.truncate(at);
        }
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
        integrity: &'a [Finding],
    },
    /// The tests ran.
    Tests(&'a TestsDone),
}

impl<'a> UnittestReport<'a> {
    fn of(frame: &'a Event) -> Option<Self> {
        match frame {
            Event::ModuleError {
                error, integrity, ..
            } => Some(UnittestReport::Module { error, integrity }),
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
            UnittestReport::Module { error, integrity } => {
                parts.integrity = integrity.iter().cloned().map(Into::into).collect();
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
        parts.integrity = done.integrity.iter().cloned().map(Into::into).collect();
        parts.integrity.extend(progress.unearned());
        parts.failures = done.failures.clone();
        parts.errors = done.errors.clone();
        parts.error = done.aborted.clone().map(Into::into);
        let tests = progress.all_tests(None);
        let total = progress.loaded.as_ref().map_or(0, Vec::len);
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
        if let Some(reason) = integrity::reason(&parts.integrity) {
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
    integrity: Vec<IntegrityFinding>,
}

fn unittest_outcome(status: Status, reason: String) -> UnittestOutcome {
    UnittestOutcome {
        status,
        reason,
        tests: Vec::new(),
        failures: Vec::new(),
        errors: Vec::new(),
        error: None,
        integrity: Vec::new(),
        reported: false,
        stdout: Captured::default(),
        stderr: Captured::default(),
        usage: Usage::default(),
        isolation: IsolationLevel::Minimal,
    }
}

/// A unittest job's run, as far as it is known when the job's process is gone.
#[allow(
    clippy::large_enum_variant,
    reason = "one per job, handed over at once, never kept in bulk"
)]
pub enum Provisional {
    /// Its verdict.
    Final(UnittestOutcome),
    /// It ended before the time limits it waited for (`UnittestJob::later_limits`) arrived:
    /// its verdict comes with them, from [`Unsettled::settle`].
    AwaitingLimits(Box<Unsettled>),
}

/// A unittest job that ended before its time limits arrived. It holds no slot: its process is
/// gone, and only the verdict waits.
pub struct Unsettled {
    gone: Gone,
    timing: Timing,
}

impl Unsettled {
    /// Waits for the limits (as long as whoever sends them takes), then gives the verdict the
    /// job would have had under them from its start: a timeout if it ran past the new wall
    /// limit or a test past its new budget, else the one it reached.
    pub async fn settle(mut self: Box<Self>) -> UnittestOutcome {
        let limits = match self.timing.later() {
            Some(later) => arrival(later).await,
            None => None,
        };
        let wall = self.gone.wall;
        if let Some(cut) = self.timing.arrived(limits, wall, &mut None) {
            self.gone.run.end = cut.into();
        }
        self.gone.outcome(&self.timing)
    }
}

/// What a unittest job's verdict is made of once its process is gone.
struct Gone {
    run: UnittestRun,
    wall: Duration,
    streams: Streams,
    usage: Usage,
    isolation: IsolationLevel,
}

impl Gone {
    /// The verdict, under the limits `timing` holds at the end.
    fn outcome(self, timing: &Timing) -> UnittestOutcome {
        let Gone {
            mut run,
            mut streams,
            usage,
            isolation,
            ..
        } = self;
        // The limits in force at the end name the wall limit a timeout reached, and the test
        // late limits stopped the job in reported after it would have ended.
        run.limits.wall = timing.wall;
        if let Some(test) = timing.cut_in() {
            run.progress.stopped_in(test);
        }
        let reported = matches!(&run.end, End::Final(frame) if UnittestReport::of(frame).is_some());
        let (status, reason, tests, parts) = run.verdict();
        UnittestOutcome {
            status,
            reason,
            tests,
            failures: parts.failures,
            errors: parts.errors,
            error: parts.error,
            integrity: parts.integrity,
            reported,
            stdout: streams.out.take(),
            stderr: streams.err.take(),
            usage,
            isolation,
        }
    }
}

impl Engine {
    /// Runs `job.code` and `job.test` together in one fresh module and its test class with
    /// `unittest`, as BigCodeBench's official evaluator does, and returns the verdict (once
    /// its time limits are known, if they come later: see `UnittestJob::later_limits`).
    pub async fn run_unittest(&self, job: UnittestJob) -> UnittestOutcome {
        match self.run_unittest_provisional(job).await {
            Provisional::Final(outcome) => outcome,
            Provisional::AwaitingLimits(unsettled) => unsettled.settle().await,
        }
    }

    /// Runs a unittest job like [`Engine::run_unittest`], but returns as soon as its process
    /// is gone: a job whose time limits are still to come is handed back unsettled, so that
    /// whoever counts running jobs can start another while it waits for them.
    pub async fn run_unittest_provisional(&self, job: UnittestJob) -> Provisional {
        let paths = job.files.iter().map(|f| &f.path).chain(&job.dirs);
        if let Some(bad) = paths.into_iter().find(|p| !is_plain_relative(p)) {
            let reason = format!("invalid job: input path {bad:?} must be relative and plain");
            return Provisional::Final(infra(reason, unittest_outcome));
        }
        let inner = &self.inner;
        let limits = job.limits.unwrap_or_else(|| inner.config.limits.clone());
        let files = encode_files(&job.files);
        let control = |base, _: &_| {
            Ok(Control::Unittest {
                base,
                code: job.code.clone(),
                test: job.test.clone(),
                test_class: job.test_class.clone(),
                guards: job.guards,
                files: files.clone(),
                dirs: job.dirs.clone(),
            })
        };
        let mut progress = TestLog {
            declared: declared_tests(&job.test, &job.test_class),
            ..TestLog::default()
        };
        let mut timing = Timing::new(limits.wall, job.test_budgets, job.later_limits);
        let ran = inner
            .run_job(
                None,
                &job.env,
                &limits,
                &mut timing,
                &job.start,
                control,
                |frame, meter| progress.observe(frame, meter),
                std::future::pending(),
            )
            .await;
        let Ran {
            end,
            started,
            aftermath,
            streams,
            wall,
            isolation,
            ..
        } = match ran {
            Ok(ran) => ran,
            Err(e) => return Provisional::Final(infra(e, unittest_outcome)),
        };
        let gone = Gone {
            usage: aftermath.usage(wall),
            run: UnittestRun {
                progress,
                end,
                aftermath,
                limits,
                started,
            },
            wall,
            streams,
            isolation,
        };
        if timing.pending() {
            Provisional::AwaitingLimits(Box::new(Unsettled { gone, timing }))
        } else {
            Provisional::Final(gone.outcome(&timing))
        }
    }
}
