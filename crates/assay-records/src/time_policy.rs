//! How long a sample may run: one limit for all, or a budget from its task's reference.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::ground_truth::ReferenceResult;
use crate::outcome::Status;

/// How long the official harness lets every sample (and its ground truth, every reference)
/// run: the cap of every budget, and the reference runs' limit.
pub const OFFICIAL_TIMEOUT_SECONDS: u64 = 240;

/// What one test of a sample may use before it ends as a timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestBudget {
    /// CPU time of the job's processes since the test started.
    pub cpu: Duration,
    /// Time since the test started during which the job's processes computed next to nothing.
    pub waiting: Duration,
}

/// How long a sample may run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimePolicy {
    /// The same limit for every task (`--timeout`; the official harness waits 240 s).
    Fixed {
        /// The limit.
        seconds: f64,
    },
    /// A budget per task from how long its reference solution takes here: `factor` times
    /// that, and no less than its tests' CPU budgets together (below), at least
    /// `floor_seconds`, at most `cap_seconds`. A task whose reference hangs
    /// (times out even at the cap) gets the floor: samples that pass it do so quickly, and
    /// those that hang like the reference would otherwise hold the end of every run for the
    /// cap. Tasks whose reference fails or was not judged get the cap.
    ///
    /// Each test method also gets a budget of its own where the reference passed, in two
    /// parts, each counted from the test's start: CPU time, `test_cpu_factor` times the
    /// reference's time in that test and at least `test_cpu_floor_seconds`; and time spent
    /// waiting (the job's processes computing next to nothing), `test_wait_factor` times it and
    /// at least `test_wait_floor_seconds`. A sample that computes slowly has the CPU budget; one
    /// that hangs, waiting for what never comes, ends at the waiting budget, which can be tight
    /// because a passing sample waits about as long as the reference does.
    Budget {
        /// The least any task gets.
        floor_seconds: f64,
        /// Times the reference's time.
        factor: f64,
        /// The most any task gets.
        cap_seconds: f64,
        /// The least CPU time any test gets.
        test_cpu_floor_seconds: f64,
        /// CPU time: times the reference's time in the same test.
        test_cpu_factor: f64,
        /// The least waiting any test gets.
        test_wait_floor_seconds: f64,
        /// Waiting: times the reference's time in the same test.
        test_wait_factor: f64,
    },
}

impl TimePolicy {
    /// assay's default, chosen on the official runs (docs/parity.md): their slowest passing
    /// sample took 30 s where the reference takes 0.3 s (RSA key generation), so the floor
    /// keeps twice that; a hung sample still ends four times sooner than at 240 s. (The same
    /// sample later ran past 60 s on random primes, which the tests' CPU budgets, summed into
    /// the task's, now allow.) Their
    /// slowest passing test computes for 15.3 s (the same key generation; its reference
    /// 0.02 s), so a test's CPU floor keeps twice that; where a reference test takes 0.5 s or
    /// more, passing samples take at most 1.38 times as long, and the CPU factor keeps 3.6 times
    /// that. No passing test waits much longer than its reference: the waiting budget is twice
    /// the reference's time, at least 10 s.
    pub const DEFAULT: TimePolicy = TimePolicy::Budget {
        floor_seconds: 60.0,
        factor: 5.0,
        cap_seconds: OFFICIAL_TIMEOUT_SECONDS as f64,
        test_cpu_floor_seconds: 30.0,
        test_cpu_factor: 5.0,
        test_wait_floor_seconds: 10.0,
        test_wait_factor: 2.0,
    };

    /// Whether a task's limits depend on its reference's run (not under a fixed limit).
    pub fn follows_reference(&self) -> bool {
        matches!(self, TimePolicy::Budget { .. })
    }

    /// The limit of a task whose reference run is `reference` (none: not measured).
    pub fn limit(&self, reference: Option<&ReferenceResult>) -> Duration {
        let seconds = match *self {
            TimePolicy::Fixed { seconds } => seconds,
            TimePolicy::Budget {
                floor_seconds,
                factor,
                cap_seconds,
                ..
            } => match reference {
                Some(r) if r.passed() => {
                    // Never tighter than the tests' own CPU budgets together: a sample whose
                    // every test computes within its budget (587's RSA keys: six tests of 2
                    // to 28 s each, whatever the reference's 0.3 s) is not cut by the task's.
                    let tests: f64 = self
                        .test_budgets(reference)
                        .values()
                        .map(|b| b.cpu.as_secs_f64())
                        .sum();
                    (r.seconds * factor)
                        .max(tests)
                        .clamp(floor_seconds, cap_seconds)
                }
                Some(r) if r.status == Status::Timeout => floor_seconds,
                _ => cap_seconds,
            },
        };
        Duration::from_secs_f64(seconds)
    }

    /// The budgets of single tests of a task whose reference run is `reference`, by test
    /// name: none under a fixed limit (the official policy), nor where the reference did not
    /// pass.
    pub fn test_budgets(
        &self,
        reference: Option<&ReferenceResult>,
    ) -> BTreeMap<String, TestBudget> {
        let TimePolicy::Budget {
            cap_seconds,
            test_cpu_floor_seconds,
            test_cpu_factor,
            test_wait_floor_seconds,
            test_wait_factor,
            ..
        } = *self
        else {
            return BTreeMap::new();
        };
        let Some(reference) = reference.filter(|r| r.passed()) else {
            return BTreeMap::new();
        };
        let part = |seconds: f64, factor: f64, floor: f64| {
            Duration::from_secs_f64((seconds * factor).clamp(floor, cap_seconds))
        };
        reference
            .tests
            .iter()
            .map(|(name, &seconds)| {
                let budget = TestBudget {
                    cpu: part(seconds, test_cpu_factor, test_cpu_floor_seconds),
                    waiting: part(seconds, test_wait_factor, test_wait_floor_seconds),
                };
                (name.clone(), budget)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(status: Status, seconds: f64) -> ReferenceResult {
        ReferenceResult {
            status,
            seconds,
            reason: format!("{status}"),
            processes_peak: None,
            tests: [
                ("test_quick".to_string(), 0.1),
                ("test_slow".to_string(), 20.0),
            ]
            .into(),
        }
    }

    /// A reference whose run recorded no time per test.
    fn untimed(status: Status, seconds: f64) -> ReferenceResult {
        ReferenceResult {
            tests: BTreeMap::new(),
            ..reference(status, seconds)
        }
    }

    #[test]
    fn budgets_follow_the_reference_within_floor_and_cap() {
        let policy = TimePolicy::Budget {
            floor_seconds: 10.0,
            factor: 5.0,
            cap_seconds: 240.0,
            test_cpu_floor_seconds: 3.0,
            test_cpu_factor: 4.0,
            test_wait_floor_seconds: 1.0,
            test_wait_factor: 2.0,
        };
        let secs = |r: Option<ReferenceResult>| policy.limit(r.as_ref()).as_secs_f64();
        assert_eq!(secs(Some(untimed(Status::Pass, 0.1))), 10.0);
        assert_eq!(secs(Some(untimed(Status::Pass, 4.0))), 20.0);
        assert_eq!(secs(Some(untimed(Status::Pass, 100.0))), 240.0);
        // Never less than the tests' CPU budgets together: 3 s and 80 s.
        assert_eq!(secs(Some(reference(Status::Pass, 0.1))), 83.0);
        assert_eq!(secs(Some(reference(Status::Pass, 20.0))), 100.0);
        assert_eq!(secs(Some(reference(Status::Pass, 100.0))), 240.0);
        // A reference that fails or was never measured says nothing: the official limit.
        assert_eq!(secs(Some(reference(Status::Fail, 0.1))), 240.0);
        assert_eq!(secs(None), 240.0);
        // A reference that hangs: whatever passes, passes fast.
        assert_eq!(secs(Some(reference(Status::Timeout, 240.0))), 10.0);
        let fixed = TimePolicy::Fixed { seconds: 3.0 };
        assert_eq!(
            fixed
                .limit(Some(&reference(Status::Pass, 100.0)))
                .as_secs_f64(),
            3.0
        );
        // Tests: factor times the reference's test, at least the floor, for CPU and waiting
        // apart; none under the official policy or without a passing reference.
        let tests = policy.test_budgets(Some(&reference(Status::Pass, 20.1)));
        let secs: Vec<(&str, f64, f64)> = tests
            .iter()
            .map(|(name, b)| (name.as_str(), b.cpu.as_secs_f64(), b.waiting.as_secs_f64()))
            .collect();
        assert_eq!(secs, [("test_quick", 3.0, 1.0), ("test_slow", 80.0, 40.0)]);
        assert!(fixed
            .test_budgets(Some(&reference(Status::Pass, 20.1)))
            .is_empty());
        assert!(policy
            .test_budgets(Some(&reference(Status::Fail, 20.1)))
            .is_empty());
        assert!(policy.test_budgets(None).is_empty());
    }
}
