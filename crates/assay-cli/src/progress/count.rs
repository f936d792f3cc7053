//! One thing being counted, with its rate and time left from the work done this session, and
//! how rates and durations read. Apart, as it is plain arithmetic on instants, tested so.

use std::time::{Duration, Instant};

/// One thing being counted: answers, judge requests, reference runs, verdicts (checks),
/// episodes, reruns.
#[derive(Debug)]
pub(super) struct Count {
    /// What it counts.
    pub(super) label: &'static str,
    /// Done so far, by this session and earlier ones.
    pub(super) done: usize,
    /// In all: shown only once above 0.
    pub(super) total: usize,
    /// Of `done`, what was there before this session worked: not counted in the rate.
    pub(super) earlier: usize,
    /// When it began.
    pub(super) began: Instant,
    /// When it was first complete: the rate stops there.
    ended: Option<Instant>,
    /// `done` when last settled, to see it grow.
    settled: usize,
    /// When the work left was due by the rate when `done` last grew. Past it the rate has
    /// said a time that was wrong (the last jobs are slower than the average), and says
    /// nothing more.
    due: Option<Instant>,
}

impl Count {
    pub(super) fn new(label: &'static str, total: usize, earlier: usize, now: Instant) -> Self {
        Count {
            label,
            done: earlier,
            total,
            earlier,
            began: now,
            ended: None,
            settled: earlier,
            due: None,
        }
    }

    /// A count with nothing to count yet (hidden until it has a total).
    pub(super) fn empty(label: &'static str, now: Instant) -> Self {
        Count::new(label, 0, 0, now)
    }

    /// Whether it is shown: it has something to count.
    pub(super) fn shown(&self) -> bool {
        self.total > 0
    }

    pub(super) fn complete(&self) -> bool {
        self.done >= self.total
    }

    /// Marks when it became complete, and when it grew, when the rest is due by the rate.
    pub(super) fn settle(&mut self, now: Instant) {
        if self.shown() && self.complete() {
            self.ended.get_or_insert(now);
        } else {
            self.ended = None;
        }
        if self.done != self.settled {
            self.settled = self.done;
            self.due = self
                .rate(now)
                .map(|rate| now + Duration::from_secs_f64(self.left_at(rate)));
        }
    }

    /// Seconds it has run (until it ended), at least one: a rate over less is noise.
    fn seconds(&self, now: Instant) -> f64 {
        let until = self.ended.unwrap_or(now);
        until
            .saturating_duration_since(self.began)
            .as_secs_f64()
            .max(1.0)
    }

    /// Work done this session per second, once there is some.
    fn rate(&self, now: Instant) -> Option<f64> {
        let new = self.done.saturating_sub(self.earlier);
        (new > 0).then(|| new as f64 / self.seconds(now))
    }

    /// Seconds the work left takes at `rate`.
    fn left_at(&self, rate: f64) -> f64 {
        self.total.saturating_sub(self.done) as f64 / rate
    }

    /// The rate and, while unfinished, the time left, no less than `least_left` seconds (what
    /// the jobs running are expected to take yet; none: no ETA, something else says what is
    /// left): `2.1/s, ETA 13 s`; empty before this session did any of it. Once the time the
    /// rate gave has passed with the work not done, the rate's ETA was wrong: what the jobs
    /// running are expected to take is said if anything, else `ETA ?`.
    pub(super) fn pace(&self, now: Instant, least_left: Option<f64>) -> String {
        let Some(rate) = self.rate(now) else {
            return String::new();
        };
        let mut pace = per_time(rate);
        if let (false, Some(least_left)) = (self.complete(), least_left) {
            let overdue = self.due.is_some_and(|due| now > due);
            let left = if overdue {
                (least_left > 0.0).then_some(least_left)
            } else {
                Some(self.left_at(rate).max(least_left))
            };
            match left {
                Some(left) => pace.push_str(&format!(", ETA {}", duration(left.ceil() as u64))),
                None => pace.push_str(", ETA ?"),
            }
        }
        pace
    }
}

/// A rate in a unit that reads well: `2.1/s`, `12/min`, `0.5/h`.
fn per_time(per_second: f64) -> String {
    let figure = |x: f64| {
        if x >= 9.95 {
            format!("{x:.0}")
        } else {
            format!("{x:.1}")
        }
    };
    if per_second >= 0.995 {
        format!("{}/s", figure(per_second))
    } else if per_second * 60.0 >= 0.995 {
        format!("{}/min", figure(per_second * 60.0))
    } else {
        format!("{}/h", figure(per_second * 3600.0))
    }
}

/// A time left that reads well: `45 s`, `3 min 20 s`, `1 h 5 min`.
pub(super) fn duration(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => match (s / 60, s % 60) {
            (m, 0) => format!("{m} min"),
            (m, s) => format!("{m} min {s} s"),
        },
        s => match (s / 3600, s % 3600 / 60) {
            (h, 0) => format!("{h} h"),
            (h, m) => format!("{h} h {m} min"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_eta_the_rate_gave_is_not_said_once_it_has_passed() {
        let start = Instant::now();
        let at = |s: f64| start + Duration::from_secs_f64(s);
        let mut verdicts = Count::new("verdicts", 148, 0, at(0.0));
        verdicts.done = 147;
        verdicts.settle(at(147.0));
        // One left at 1/s: due in a second.
        assert_eq!(verdicts.pace(at(147.0), Some(0.0)), "1.0/s, ETA 1 s");
        assert_eq!(verdicts.pace(at(148.0), Some(0.0)), "60/min, ETA 2 s");
        // Past it, the rate knows nothing: the ETA is unknown, not "2 s" for minutes...
        assert_eq!(verdicts.pace(at(148.5), Some(0.0)), "59/min, ETA ?");
        assert_eq!(verdicts.pace(at(297.0), Some(0.0)), "30/min, ETA ?");
        // ...unless the jobs running are expected to take longer yet.
        assert_eq!(
            verdicts.pace(at(297.0), Some(90.0)),
            "30/min, ETA 1 min 30 s"
        );
        // Before it, the jobs running are the least it says.
        assert_eq!(
            verdicts.pace(at(147.0), Some(90.0)),
            "1.0/s, ETA 1 min 30 s"
        );
        // The next one in sets a new due time from the rate then.
        verdicts.total = 150;
        verdicts.done = 148;
        verdicts.settle(at(300.0));
        assert_eq!(verdicts.pace(at(300.0), Some(0.0)), "30/min, ETA 5 s");
        assert_eq!(verdicts.pace(at(306.0), Some(0.0)), "29/min, ETA ?");
        // Done: no ETA at all.
        verdicts.done = 150;
        verdicts.settle(at(310.0));
        assert_eq!(verdicts.pace(at(400.0), Some(0.0)), "29/min");
        // Nothing done this session yet: nothing to say.
        let fresh = Count::new("verdicts", 10, 4, at(0.0));
        assert_eq!(fresh.pace(at(60.0), Some(0.0)), "");
    }

    #[test]
    fn rates_and_times_read_well() {
        assert_eq!(per_time(2.14), "2.1/s");
        assert_eq!(per_time(12.6), "13/s");
        assert_eq!(per_time(0.5), "30/min");
        assert_eq!(per_time(0.1), "6.0/min");
        assert_eq!(per_time(0.001), "3.6/h");
        assert_eq!(duration(45), "45 s");
        assert_eq!(duration(200), "3 min 20 s");
        assert_eq!(duration(180), "3 min");
        assert_eq!(duration(3900), "1 h 5 min");
        assert_eq!(duration(7200), "2 h");
    }
}
