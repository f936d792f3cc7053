//! The jobs the sandbox runs now, from `job-started` events: what the end of a run waits on.
//!
//! When the work left is a few long jobs, a rate says nothing (147 of 148 verdicts in at
//! 46/min reads as "2 s left" while the slowest task has minutes to go): the time left is
//! theirs, from how long each is expected to take (its task's reference time, or its slowest
//! sample here) and how long it has run.

use std::time::Instant;

use super::count::duration;

/// How many jobs left, at most, are named one by one.
const NAMED: usize = 3;

/// One job running.
struct Job {
    task_id: String,
    reference: bool,
    started: Instant,
    /// Seconds it is expected to take, when known.
    expected: Option<f64>,
}

impl Job {
    /// Seconds until it is expected to end (0 when unknown or overdue).
    fn left(&self, now: Instant) -> f64 {
        let ran = now.saturating_duration_since(self.started).as_secs_f64();
        self.expected.map_or(0.0, |e| (e - ran).max(0.0))
    }

    /// `BigCodeBench/461 (expected 2 min 36 s, 1 min 20 s left)`.
    fn describe(&self, now: Instant) -> String {
        let ran = now.saturating_duration_since(self.started).as_secs_f64();
        let whole = |s: f64| duration(s.ceil() as u64);
        match self.expected {
            Some(expected) if ran < expected => format!(
                "{} (expected {}, {} left)",
                self.task_id,
                whole(expected),
                whole(expected - ran)
            ),
            Some(expected) => format!(
                "{} (expected {}, running {})",
                self.task_id,
                whole(expected),
                whole(ran)
            ),
            None => format!("{} (running {})", self.task_id, whole(ran)),
        }
    }
}

/// The jobs running now.
#[derive(Default)]
pub(super) struct Running {
    jobs: Vec<Job>,
}

impl Running {
    /// A job of `task_id` started at `now`.
    pub(super) fn started(
        &mut self,
        task_id: &str,
        reference: bool,
        expected: Option<f64>,
        now: Instant,
    ) {
        self.jobs.push(Job {
            task_id: task_id.to_string(),
            reference,
            started: now,
            expected,
        });
    }

    /// A job of `task_id` ended (its record came): the earliest started of that task and kind.
    pub(super) fn ended(&mut self, task_id: &str, reference: bool) {
        if let Some(at) = self
            .jobs
            .iter()
            .position(|j| j.reference == reference && j.task_id == task_id)
        {
            self.jobs.remove(at);
        }
    }

    /// Forgets every job (a new phase counts afresh).
    pub(super) fn clear(&mut self) {
        self.jobs.clear();
    }

    fn of(&self, reference: bool) -> impl Iterator<Item = &Job> {
        self.jobs.iter().filter(move |j| j.reference == reference)
    }

    /// Seconds until the last running job of the kind is expected to end: the least an ETA
    /// can say.
    pub(super) fn least_left(&self, reference: bool, now: Instant) -> f64 {
        self.of(reference).map(|j| j.left(now)).fold(0.0, f64::max)
    }

    /// What the count of the kind waits on, when all `left` of its jobs still to end are
    /// running and few: `waiting on BigCodeBench/461 (expected 2 min 36 s, 1 min 20 s left)`,
    /// the longest first.
    pub(super) fn waiting_on(&self, reference: bool, left: usize, now: Instant) -> Option<String> {
        let mut jobs: Vec<&Job> = self.of(reference).collect();
        if left == 0 || left > NAMED || jobs.len() < left {
            return None;
        }
        jobs.sort_by(|a, b| {
            b.left(now)
                .total_cmp(&a.left(now))
                .then(a.started.cmp(&b.started))
        });
        let named: Vec<String> = jobs.iter().take(left).map(|j| j.describe(now)).collect();
        Some(format!("waiting on {}", named.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_last_jobs_are_named_with_what_they_are_expected_to_take() {
        let start = Instant::now();
        let at = |s: f64| start + Duration::from_secs_f64(s);
        let mut running = Running::default();
        running.started("BigCodeBench/461", true, Some(156.0), at(0.0));
        running.started("BigCodeBench/461", false, Some(156.0), at(1.0));
        running.started("BigCodeBench/97", false, None, at(2.0));
        // Three samples left, two running: some have not started, so no names.
        assert_eq!(running.waiting_on(false, 3, at(10.0)), None);
        assert_eq!(running.least_left(false, at(10.0)), 147.0);
        running.ended("BigCodeBench/97", false);
        assert_eq!(
            running.waiting_on(false, 1, at(76.0)).as_deref(),
            Some("waiting on BigCodeBench/461 (expected 2 min 36 s, 1 min 21 s left)")
        );
        // Past its expected time, it says how long it has run.
        assert_eq!(
            running.waiting_on(false, 1, at(200.0)).as_deref(),
            Some("waiting on BigCodeBench/461 (expected 2 min 36 s, running 3 min 19 s)")
        );
        assert_eq!(running.least_left(false, at(200.0)), 0.0);
        // The reference is counted apart.
        assert_eq!(running.least_left(true, at(100.0)), 56.0);
        running.ended("BigCodeBench/461", false);
        assert_eq!(running.waiting_on(false, 1, at(200.0)), None);
        running.started("BigCodeBench/1", false, None, at(200.0));
        assert_eq!(
            running.waiting_on(false, 1, at(265.0)).as_deref(),
            Some("waiting on BigCodeBench/1 (running 1 min 5 s)")
        );
    }
}
