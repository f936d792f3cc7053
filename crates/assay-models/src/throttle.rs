//! Per-minute budgets (`--rpm`, `--tpm`): when a client may send its next request, and the
//! rate it actually sends at.
//!
//! Providers count requests and tokens per minute, but enforce them over shorter spans too
//! (OpenAI: "60,000 requests/minute may be enforced as 1,000 requests/second"), so a minute's
//! budget sent in one burst gets 429s. Requests are therefore paced, not bunched: with
//! `--rpm 120` one every half second, which sends at most 120 in any minute and never more
//! than the budget's share in any shorter span. Tokens are paced the same way by what each
//! request may cost: it delays the next request by its share of the minute, so a request
//! estimated at 2,000 tokens under `--tpm 100000` holds the next one back 1.2 s. The estimate
//! (the prompt's characters / 4, plus the token limit for each answer) is corrected when the
//! answer reports its usage: a shorter answer hands its unused share to the requests after it.
//!
//! Requests reserve their slot in arrival order and sleep until it, once: no polling. Unused
//! time is not saved up (an idle client does not earn a burst), and no request is charged more
//! than the whole minute, so every wait is bounded by the requests ahead of it.

use std::collections::VecDeque;
use std::num::{NonZeroU32, NonZeroU64};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// The span budgets are given over.
const MINUTE: Duration = Duration::from_secs(60);

/// Characters per token, for estimating a prompt's tokens before sending it (a common rule of
/// thumb for English and code; the answer's usage corrects it).
const CHARS_PER_TOKEN: u64 = 4;

/// When requests may go, shared by every clone of a client.
pub(crate) struct Pacer {
    /// The time between two requests, from the request budget.
    request_gap: Option<Duration>,
    /// Tokens per minute.
    token_budget: Option<u64>,
    state: Mutex<Schedule>,
}

struct Schedule {
    /// The earliest the next request may go, as far as the request budget goes.
    next_request: Instant,
    /// The same, as far as the token budget goes.
    next_token: Instant,
    sent: Meter,
}

/// What an admitted request was charged, to be settled when its answer comes.
#[must_use = "settle the charge once the usage is known"]
pub(crate) struct Charge {
    /// The time the request was charged for its estimate (none without a token budget).
    charged: Option<Duration>,
}

impl Pacer {
    /// A pacer for these budgets; none: requests go at once (their rate is still measured).
    pub(crate) fn new(requests: Option<NonZeroU32>, tokens: Option<NonZeroU64>) -> Pacer {
        let now = Instant::now();
        Pacer {
            request_gap: requests.map(|n| MINUTE / n.get()),
            token_budget: tokens.map(NonZeroU64::get),
            state: Mutex::new(Schedule {
                next_request: now,
                next_token: now,
                sent: Meter::default(),
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Schedule> {
        // Plain values, each assigned whole: consistent even after a panic elsewhere.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until the budgets allow one more request, estimated at `tokens`, and charges it.
    pub(crate) async fn admit(&self, tokens: u64) -> Charge {
        let (at, charged) = {
            let mut state = self.state();
            let at = Instant::now().max(state.next_request).max(state.next_token);
            if let Some(gap) = self.request_gap {
                state.next_request = at + gap;
            }
            let charged = self.share(tokens);
            if let Some(share) = charged {
                state.next_token = at + share;
            }
            (at, charged)
        };
        // Without a budget (or behind none) the slot is now: no timer to register.
        if at > Instant::now() {
            tokio::time::sleep_until(at).await;
        }
        self.state().sent.record(Instant::now());
        Charge { charged }
    }

    /// Corrects a request's charge by the tokens it `used` (0 for an attempt that failed: the
    /// provider generated nothing).
    pub(crate) fn settle(&self, charge: Charge, used: u64) {
        // The difference of the times, not the time of the difference: each is capped at the
        // minute, so an estimate beyond the budget that used much less still pays for what it
        // used (and one that used more pays no more than the minute).
        let (Some(charged), Some(cost)) = (charge.charged, self.share(used)) else {
            return;
        };
        let mut state = self.state();
        if cost < charged {
            // Back in the past is fine: `admit` never sends before now.
            let back = charged - cost;
            state.next_token = state
                .next_token
                .checked_sub(back)
                .unwrap_or(state.next_token);
        } else {
            state.next_token = state.next_token.max(Instant::now()) + (cost - charged);
        }
    }

    /// The part of the minute `tokens` take of the token budget (a whole minute at most).
    fn share(&self, tokens: u64) -> Option<Duration> {
        let budget = self.token_budget?;
        let nanos = MINUTE.as_nanos() * u128::from(tokens.min(budget)) / u128::from(budget);
        Some(Duration::from_nanos(nanos as u64))
    }

    /// Requests sent in the last minute (before a minute has passed, the rate so far).
    pub(crate) fn per_minute(&self) -> u32 {
        self.state().sent.per_minute(Instant::now())
    }
}

/// The tokens a request may cost: its prompt's (estimated from `chars`) and the most each of
/// its `answers` may have.
pub(crate) fn estimate(chars: usize, max_tokens: u32, answers: u32) -> u64 {
    (chars as u64)
        .div_ceil(CHARS_PER_TOKEN)
        .saturating_add(u64::from(max_tokens) * u64::from(answers))
}

/// Sends over the last minute.
#[derive(Default)]
struct Meter {
    first: Option<Instant>,
    /// When each request of the last minute went, oldest first.
    recent: VecDeque<Instant>,
}

impl Meter {
    fn record(&mut self, now: Instant) {
        self.first.get_or_insert(now);
        self.forget_before(now);
        self.recent.push_back(now);
    }

    fn forget_before(&mut self, now: Instant) {
        while self
            .recent
            .front()
            .is_some_and(|&sent| now.saturating_duration_since(sent) >= MINUTE)
        {
            self.recent.pop_front();
        }
    }

    fn per_minute(&mut self, now: Instant) -> u32 {
        let Some(first) = self.first else {
            return 0;
        };
        self.forget_before(now);
        let sent = self.recent.len() as f64;
        let since = now.saturating_duration_since(first);
        // Before a minute has passed, the rate so far (over a second at least, so that the
        // first request does not read as thousands a minute).
        let span = since.clamp(Duration::from_secs(1), MINUTE);
        (sent * MINUTE.as_secs_f64() / span.as_secs_f64()).round() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn pacer(rpm: u32, tpm: u64) -> Pacer {
        Pacer::new(NonZeroU32::new(rpm), NonZeroU64::new(tpm))
    }

    /// Seconds since `start`, to the millisecond.
    fn since(start: Instant) -> f64 {
        (start.elapsed().as_millis() as f64) / 1000.0
    }

    #[tokio::test(start_paused = true)]
    async fn requests_are_spaced_by_the_budget() {
        let pacer = Arc::new(pacer(120, 0));
        let start = Instant::now();
        // Ten at once, as concurrent requests arrive: each gets its own half-second slot.
        let mut tasks = Vec::new();
        for _ in 0..10 {
            let pacer = pacer.clone();
            tasks.push(tokio::spawn(async move {
                let charge = pacer.admit(0).await;
                pacer.settle(charge, 0);
                since(start)
            }));
        }
        let mut sent = Vec::new();
        for task in tasks {
            sent.push(task.await.unwrap());
        }
        sent.sort_by(f64::total_cmp);
        let expected: Vec<f64> = (0..10).map(|i| f64::from(i) * 0.5).collect();
        assert_eq!(sent, expected);
        // Any minute holds at most the budget: 120 sent over 59.5 s, the 121st at 60 s.
        let pacer = self::pacer(120, 0);
        let start = Instant::now();
        for _ in 0..121 {
            let charge = pacer.admit(0).await;
            pacer.settle(charge, 0);
        }
        assert_eq!(since(start), 60.0);
        assert_eq!(
            pacer.per_minute(),
            120,
            "the first has left the last minute"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn idle_time_is_not_saved_up() {
        let pacer = pacer(60, 0);
        let charge = pacer.admit(0).await;
        pacer.settle(charge, 0);
        tokio::time::sleep(Duration::from_secs(30)).await;
        let start = Instant::now();
        for _ in 0..3 {
            let charge = pacer.admit(0).await;
            pacer.settle(charge, 0);
        }
        assert_eq!(
            since(start),
            2.0,
            "one a second after the pause, not a burst"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn tokens_delay_the_next_request_by_their_share() {
        // 6,000 a minute: 100 a second.
        let pacer = pacer(0, 6000);
        let start = Instant::now();
        let first = pacer.admit(300).await;
        assert_eq!(since(start), 0.0);
        // It used 100 of its 300: two seconds come back.
        pacer.settle(first, 100);
        let second = pacer.admit(300).await;
        assert_eq!(since(start), 1.0);
        // It used 500: two more seconds for the next.
        pacer.settle(second, 500);
        let third = pacer.admit(50).await;
        assert_eq!(since(start), 6.0);
        // A failed attempt generated nothing: its whole estimate comes back.
        pacer.settle(third, 0);
        let fourth = pacer.admit(10).await;
        assert_eq!(since(start), 6.0);
        pacer.settle(fourth, 10);
    }

    #[tokio::test(start_paused = true)]
    async fn no_request_is_charged_more_than_a_minute() {
        let pacer = pacer(0, 1000);
        let start = Instant::now();
        let huge = pacer.admit(u64::MAX).await;
        pacer.settle(huge, u64::MAX);
        let next = pacer.admit(1).await;
        assert_eq!(since(start), 60.0);
        pacer.settle(next, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn an_estimate_beyond_the_budget_is_settled_by_what_was_used() {
        // 30,000 a minute: 500 a second. 41,000 estimated is charged the whole minute.
        let pacer = pacer(0, 30_000);
        let start = Instant::now();
        let first = pacer.admit(41_000).await;
        // It used 10,000: 20 s of the minute, not nothing.
        pacer.settle(first, 10_000);
        let second = pacer.admit(10_000).await;
        assert_eq!(since(start), 20.0);
        // Charged 20 s, it used 41,000: the minute at most, 40 s more, not another minute.
        pacer.settle(second, 41_000);
        let third = pacer.admit(0).await;
        assert_eq!(since(start), 80.0);
        pacer.settle(third, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn both_budgets_hold_the_slowest_wins() {
        let pacer = pacer(600, 600);
        let start = Instant::now();
        for _ in 0..3 {
            let charge = pacer.admit(20).await;
            pacer.settle(charge, 20);
        }
        // 20 tokens of 600 a minute: 2 s each, beyond the requests' 0.1 s.
        assert_eq!(since(start), 4.0);
    }

    #[tokio::test(start_paused = true)]
    async fn without_budgets_nothing_waits_and_the_rate_is_measured() {
        let pacer = pacer(0, 0);
        assert_eq!(pacer.per_minute(), 0);
        let start = Instant::now();
        for _ in 0..30 {
            let charge = pacer.admit(1_000_000).await;
            pacer.settle(charge, 0);
        }
        assert_eq!(since(start), 0.0);
        // 30 in the first second reads as 1,800 a minute, as 60 after 30 s.
        assert_eq!(pacer.per_minute(), 1800);
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(pacer.per_minute(), 60);
        tokio::time::sleep(Duration::from_millis(29_999)).await;
        assert_eq!(pacer.per_minute(), 30);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(pacer.per_minute(), 0, "a minute later they no longer count");
    }

    #[test]
    fn estimates_count_the_prompt_and_every_answer() {
        assert_eq!(estimate(0, 1280, 1), 1280);
        assert_eq!(estimate(9, 100, 5), 3 + 500);
        assert_eq!(estimate(usize::MAX, u32::MAX, u32::MAX), u64::MAX);
    }
}
