//! How long a job may run: its wall-clock limit, the budgets of single tests, and the clock
//! that holds a running test to its budget.
//!
//! A unittest job may start before its limits are known: a BigCodeBench sample whose task's
//! reference solution, whose time sets the sample's budgets, is still being measured. Waiting
//! for the reference would run the slowest task twice in a row on every first run. Instead the
//! job starts under the widest limits it could get, every test clocked from its start; when
//! the limits arrive they apply as if known from the start: the deadline moves, the running
//! test's budget counts what it has used since it began, and a test already done that overran
//! its budget ends the job as a timeout naming it, where the job would have been stopped.
//! Budgets are counted by the supervisor, never by the job, so they can change while it runs.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use assay_records::{Layers, TestBudget};
use tokio::sync::watch;

use crate::deadlock;
use crate::meter::CpuMeter;
use crate::slots;

/// A unittest job's time limits, when they are known only after it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeLimits {
    /// The whole job's wall-clock limit.
    pub wall: Duration,
    /// Budgets of single test methods, by name (see `UnittestJob::test_budgets`).
    pub test_budgets: BTreeMap<String, TestBudget>,
}

/// Where a job's limits come from once it has started: `None` until they are known. A sender
/// dropped without sending means the limits the job started with are final.
pub type LaterLimits = watch::Receiver<Option<TimeLimits>>;

/// A test that ran out of its budget, and which part of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Overrun {
    /// Its CPU time: it computed too long.
    Cpu { test: String, budget: Duration },
    /// Its waiting: it sat computing next to nothing too long.
    Waiting { test: String, budget: Duration },
    /// Nothing left to wait for: every thread of the job waits on another (see `deadlock`).
    Hung { test: String },
}

impl Overrun {
    /// The timeout's reason, naming the test.
    pub fn reason(&self) -> String {
        let tenths = |d: &Duration| (d.as_secs_f64() * 10.0).round() / 10.0;
        match self {
            Overrun::Cpu { test, budget } => format!(
                "test {test} computed past its CPU budget of {} s",
                tenths(budget)
            ),
            Overrun::Waiting { test, budget } => format!(
                "test {test} waited, computing nothing, past its budget of {} s",
                tenths(budget)
            ),
            Overrun::Hung { test } => format!(
                "test {test} hung for good: every thread of the job waited, with no timeout, \
                 on another"
            ),
        }
    }

    /// The test that overran.
    pub fn test(&self) -> &str {
        match self {
            Overrun::Cpu { test, .. } | Overrun::Waiting { test, .. } | Overrun::Hung { test } => {
                test
            }
        }
    }
}

/// What stops a job for its time: the deadline, or a test's budget.
#[derive(Debug)]
pub(crate) enum Cut {
    Deadline,
    Budget(Overrun),
}

/// A running job's time limits.
pub(crate) struct Timing {
    /// The wall-clock limit, counted from the job's start.
    pub wall: Duration,
    budgets: BTreeMap<String, TestBudget>,
    /// Limits still to come (none: these are final).
    later: Option<LaterLimits>,
    /// While limits may still come: what each test clocked so far used, in order.
    used: Vec<Used>,
    /// The test that limits arriving late stopped the job in, if they did: its report, and
    /// any later one, came after the job would have ended.
    cut_in: Option<String>,
}

/// What one test used, as its clock counted it.
struct Used {
    test: String,
    /// When it began and ended, from the job's start.
    began: Duration,
    ended: Duration,
    cpu: Duration,
    waited: Duration,
}

impl Timing {
    /// A wall-clock limit alone, final.
    pub fn fixed(wall: Duration) -> Timing {
        Timing::new(wall, BTreeMap::new(), None)
    }

    /// `wall` and `budgets`, final unless `later` brings others.
    pub fn new(
        wall: Duration,
        budgets: BTreeMap<String, TestBudget>,
        later: Option<LaterLimits>,
    ) -> Timing {
        Timing {
            wall,
            budgets,
            later,
            used: Vec::new(),
            cut_in: None,
        }
    }

    /// Whether the limits may still change.
    pub fn pending(&self) -> bool {
        self.later.is_some()
    }

    /// What to wait on for the limits, if they may still change (a clone: waiting does not
    /// hold the timing).
    pub fn later(&self) -> Option<LaterLimits> {
        self.later.clone()
    }

    /// A clock for test `test`, beginning `began` into the job with the job's CPU time then
    /// `cpu`: one for a test with a budget, and for every test while the limits may change
    /// (its use is counted in case a budget comes). `layers`: how the job is confined, which
    /// decides whether it can be known hung.
    pub fn clock(
        &self,
        test: String,
        began: Duration,
        cpu: Option<Duration>,
        layers: &Layers,
    ) -> Option<TestClock> {
        let budget = self.budgets.get(&test).copied();
        (budget.is_some() || self.pending()).then(|| TestClock {
            test,
            budget,
            began,
            cpu_at_start: cpu,
            last: (Instant::now(), cpu),
            waited: Duration::ZERO,
            deadlock: deadlock::Watch::new(layers),
        })
    }

    /// A test's clock stopped `at` into the job (the test ended, or the job did): what it
    /// counted is kept while the limits may still change.
    pub fn stopped(&mut self, clock: TestClock, at: Duration) {
        if self.pending() {
            self.used.push(clock.used(at));
        }
    }

    /// The test that limits arriving late stopped the job in (see [`Timing::arrived`]).
    pub fn cut_in(&self) -> Option<&str> {
        self.cut_in.as_deref()
    }

    /// The limits arrived (`None`: none will, the current ones are final), `elapsed` into the
    /// job, while `clock` times the test running (if any). The job stops now if it would have
    /// been stopped before, had the limits been known from its start: a test done (or the one
    /// running, by what it used so far) overran its budget before the deadline, or the
    /// deadline has passed; the test it would have stopped in is then [`Timing::cut_in`].
    /// Otherwise the running test's clock takes its budget (and goes if the test has none),
    /// and the new deadline holds from now on.
    pub fn arrived(
        &mut self,
        limits: Option<TimeLimits>,
        elapsed: Duration,
        clock: &mut Option<TestClock>,
    ) -> Option<Cut> {
        self.later = None;
        let used = std::mem::take(&mut self.used);
        let Some(limits) = limits else {
            // The first limits are final: a test without a budget is clocked no more.
            if clock.as_ref().is_some_and(|c| c.budget.is_none()) {
                *clock = None;
            }
            return None;
        };
        self.wall = limits.wall;
        self.budgets = limits.test_budgets;
        let running = clock.as_ref().map(|c| c.used(elapsed));
        let used: Vec<&Used> = used.iter().chain(&running).collect();
        let overrun = used.iter().find_map(|u| Some((u.began, self.overrun(u)?)));
        match overrun {
            Some((began, overrun)) if began < self.wall => {
                self.cut_in = Some(overrun.test().to_string());
                return Some(Cut::Budget(overrun));
            }
            _ if elapsed >= self.wall => {
                let wall = self.wall;
                self.cut_in = used.iter().find(|u| u.ended > wall).map(|u| u.test.clone());
                return Some(Cut::Deadline);
            }
            _ => {}
        }
        if let Some(c) = clock.as_mut() {
            c.budget = self.budgets.get(&c.test).copied();
        }
        if clock.as_ref().is_some_and(|c| c.budget.is_none()) {
            *clock = None;
        }
        None
    }

    /// Which of `used`'s budgets it overran, if any: CPU first, as a clock checks them.
    fn overrun(&self, used: &Used) -> Option<Overrun> {
        let budget = self.budgets.get(&used.test)?;
        let test = used.test.clone();
        if used.cpu > budget.cpu {
            Some(Overrun::Cpu {
                test,
                budget: budget.cpu,
            })
        } else if used.waited > budget.waiting {
            Some(Overrun::Waiting {
                test,
                budget: budget.waiting,
            })
        } else {
            None
        }
    }
}

/// Waits for `later`'s limits: `None` when none will come (the sender went without sending).
/// Bounded by whoever sends them.
pub(crate) async fn arrival(mut later: LaterLimits) -> Option<TimeLimits> {
    later.wait_for(Option::is_some).await.ok()?.clone()
}

/// What a test running under a budget (or one that may yet come) has used so far.
pub(crate) struct TestClock {
    test: String,
    /// None: no budget yet, only counting.
    budget: Option<TestBudget>,
    began: Duration,
    /// The job's CPU time when the test started (`None` until the meter could be read).
    cpu_at_start: Option<Duration>,
    /// The last reading: when, and the job's CPU time then.
    last: (Instant, Option<Duration>),
    waited: Duration,
    /// `None` when something outside the job could wake it.
    deadlock: Option<deadlock::Watch>,
}

impl TestClock {
    /// What the test used, its clock stopping `at` into the job.
    fn used(&self, at: Duration) -> Used {
        Used {
            test: self.test.clone(),
            began: self.began,
            ended: at,
            cpu: self
                .last
                .1
                .zip(self.cpu_at_start)
                .map_or(Duration::ZERO, |(now, then)| now.saturating_sub(then)),
            waited: self.waited,
        }
    }

    /// Reads the meter: of the time since the last reading, what the job's processes did not
    /// spend computing counts as waiting, unless a thread of theirs is runnable or in
    /// uninterruptible sleep now (one kept from a CPU by a busy machine or its quota, or
    /// held up by the disk, is not waiting). Says which budget ran out, if one did, or
    /// whether the job is hung for good.
    pub fn tick(&mut self, meter: &CpuMeter) -> Option<Overrun> {
        let cpu = meter.read()?;
        let now = Instant::now();
        let (then, before) = std::mem::replace(&mut self.last, (now, Some(cpu)));
        let start = *self.cpu_at_start.get_or_insert(cpu);
        // One list of the job's threads for both questions asked of them.
        let threads = meter.threads();
        let held_up = slots::held_up(&threads);
        if let Some(before) = before {
            let idle = (now - then).saturating_sub(cpu.saturating_sub(before));
            if !held_up {
                self.waited += idle;
            }
        }
        let hung = self.deadlock.as_mut().is_some_and(|w| {
            if held_up {
                w.forget();
                false
            } else {
                w.hung(threads)
            }
        });
        let test = || self.test.clone();
        match self.budget {
            Some(budget) if cpu.saturating_sub(start) > budget.cpu => Some(Overrun::Cpu {
                test: test(),
                budget: budget.cpu,
            }),
            _ if hung => Some(Overrun::Hung { test: test() }),
            Some(budget) if self.waited > budget.waiting => Some(Overrun::Waiting {
                test: test(),
                budget: budget.waiting,
            }),
            _ => None,
        }
    }
}
