//! Adaptive concurrency: how many requests may be in flight at once, lowered when the server
//! says it is overloaded and raised back as it copes (AIMD, as TCP's congestion window).
//!
//! A run starts at the configured concurrency. A 429 or 503 (529) halves the limit, rounding
//! up (so never below one), so that a server at its limit is not sent the same load again at
//! once; each stretch of as many successes as the limit raises it by one, up to the configured
//! concurrency again. Overload reports arrive in bursts (every request in flight gets its 429
//! together): only a request sent since the last cut may cut again, so one burst halves the
//! limit once.
//!
//! A place is held for one attempt, from its wait for the per-minute budgets to the answer
//! (in flight from the moment it is sent): a request waiting to retry holds none, and its
//! retry queues again under the limit of that moment. When the server
//! says how long to wait (`Retry-After`), nothing is sent before then, not even a request
//! that was already past the gate and waiting for its per-minute slot: the server's limits are
//! the account's, not the one request's. When the pause ends the requests holding places go
//! together (as many as the limit, or, right after a cut, as many as the places taken before it
//! that have not come back yet), so a throttled run sends one round per wait instead of
//! hammering the server with every queued request. The limit never goes below one, every
//! place is given back when its attempt ends (even when its future is dropped), and a pause
//! never outlasts the server's capped hint after the last refusal, so the gate cannot stall a
//! run.

use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;

/// The gate every request of a client passes.
pub(crate) struct Gate {
    /// Free places: the limit, less the places taken, plus the `debt` (a cut beyond the free
    /// places is withheld as places come back).
    places: Semaphore,
    state: Mutex<State>,
    /// The most requests in flight, as configured.
    concurrency: usize,
}

#[derive(Debug)]
struct State {
    /// Requests allowed in flight now.
    limit: usize,
    /// Requests in flight now (may exceed `limit` just after a cut).
    held: usize,
    /// Places to withhold when they are given back: a cut larger than the free places.
    debt: usize,
    /// Counts cuts; a request remembers the one it was sent under.
    epoch: u64,
    /// Successes, since the last change, of requests sent since the last cut.
    successes: usize,
    /// Nothing is sent before this: the server asked to wait.
    resume_at: Option<Instant>,
}

/// A place in the gate, held until dropped.
pub(crate) struct Place<'a> {
    gate: &'a Gate,
    permit: Option<SemaphorePermit<'a>>,
    /// The cut this request was sent after.
    epoch: u64,
    /// Whether it was sent (and counts as in flight).
    sent: bool,
}

impl Place<'_> {
    /// The request goes now (after the per-minute budgets' wait, which holds the place but
    /// sends nothing), or, if the server asked for a pause meanwhile, once it is over: a
    /// request queued for its slot must not be sent into a pause set while it waited.
    pub(crate) async fn send(&mut self) {
        self.gate.paused().await;
        let mut state = self.gate.state();
        state.held += 1;
        self.epoch = state.epoch;
        self.sent = true;
    }
}

impl Gate {
    /// A gate letting `concurrency` requests through at once.
    pub(crate) fn new(concurrency: NonZeroUsize) -> Gate {
        let concurrency = concurrency.get();
        Gate {
            places: Semaphore::new(concurrency),
            state: Mutex::new(State {
                limit: concurrency,
                held: 0,
                debt: 0,
                epoch: 0,
                successes: 0,
                resume_at: None,
            }),
            concurrency,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is a few counters updated whole under the lock: still consistent after a
        // panic elsewhere.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a place (first come, first served), then for the end of any pause the
    /// server asked for. The request counts as in flight once [`Place::send`] says so.
    pub(crate) async fn enter(&self) -> Place<'_> {
        let permit = self
            .places
            .acquire()
            .await
            .expect("the gate is never closed");
        // A place from here on, so that it is given back right even if this future is dropped
        // during the pause.
        let place = Place {
            gate: self,
            permit: Some(permit),
            epoch: 0,
            sent: false,
        };
        self.paused().await;
        place
    }

    /// Waits for the end of any pause the server asked for, extended or not while waiting.
    /// Bounded: a later pause needs a refusal, which needs a request sent after this one's
    /// pause ended.
    async fn paused(&self) {
        loop {
            let resume_at = self.state().resume_at;
            match resume_at.filter(|&at| at > Instant::now()) {
                Some(at) => tokio::time::sleep_until(at).await,
                None => break,
            }
        }
    }

    /// The server said it is overloaded to a request holding `place`: halves the limit, once
    /// per burst, and holds every request back for `pause` if the server said how long.
    pub(crate) fn overloaded(&self, place: &Place<'_>, pause: Option<Duration>) {
        let mut state = self.state();
        if let Some(pause) = pause {
            let until = Instant::now() + pause;
            state.resume_at = Some(state.resume_at.map_or(until, |at| at.max(until)));
        }
        if place.epoch != state.epoch {
            return;
        }
        state.epoch += 1;
        state.successes = 0;
        // Halved, rounding up: 3 falls to 2, not to 1; 1 stays.
        let cut = state.limit / 2;
        if cut == 0 {
            return;
        }
        state.limit -= cut;
        let freed = self.places.forget_permits(cut);
        state.debt += cut - freed;
        tracing::info!(
            limit = state.limit,
            "the model API is overloaded: {} requests in flight at most",
            state.limit
        );
    }

    /// A request holding `place` got its answer: after as many successes as the limit,
    /// raises it by one.
    pub(crate) fn succeeded(&self, place: &Place<'_>) {
        let mut state = self.state();
        if place.epoch != state.epoch || state.limit >= self.concurrency {
            return;
        }
        state.successes += 1;
        if state.successes < state.limit {
            return;
        }
        state.successes = 0;
        state.limit += 1;
        // While places taken before a cut are still held beyond it, the new place is one of
        // them: withholding one less lets nobody else in before in flight is under the limit.
        if state.debt > 0 {
            state.debt -= 1;
        } else {
            self.places.add_permits(1);
        }
    }

    /// Requests in flight now, and the limit now.
    pub(crate) fn load(&self) -> (usize, usize) {
        let state = self.state();
        (state.held, state.limit)
    }

    /// The configured concurrency.
    pub(crate) fn concurrency(&self) -> usize {
        self.concurrency
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let mut state = self.gate.state();
        if self.sent {
            state.held -= 1;
        }
        if let Some(permit) = self.permit.take() {
            if state.debt > 0 {
                state.debt -= 1;
                permit.forget();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(concurrency: usize) -> Gate {
        Gate::new(NonZeroUsize::new(concurrency).unwrap())
    }

    fn free(gate: &Gate) -> usize {
        gate.places.available_permits()
    }

    #[tokio::test]
    async fn a_burst_of_overloads_halves_the_limit_once() {
        let gate = gate(8);
        let places: Vec<Place> = enter_many(&gate, 8).await;
        for place in &places {
            gate.overloaded(place, None);
        }
        assert_eq!(gate.load(), (8, 4));
        assert_eq!(free(&gate), 0);
        // The four places beyond the limit are withheld as they come back.
        let mut places = places;
        for _ in 0..4 {
            places.pop();
        }
        assert_eq!((gate.load(), free(&gate)), ((4, 4), 0));
        places.pop();
        assert_eq!((gate.load(), free(&gate)), ((3, 4), 1));
        // A request admitted after the cut cuts again.
        let late = sent(&gate).await;
        gate.overloaded(&late, None);
        assert_eq!(gate.load(), (4, 2));
        drop(late);
        drop(places);
        assert_eq!((gate.load(), free(&gate)), ((0, 2), 2));
    }

    #[tokio::test]
    async fn the_limit_never_goes_below_one() {
        let gate = gate(2);
        for _ in 0..5 {
            let place = sent(&gate).await;
            gate.overloaded(&place, None);
        }
        assert_eq!(gate.load(), (0, 1));
        assert_eq!(free(&gate), 1);
        let mut place = gate.enter().await;
        assert_eq!(gate.load(), (0, 1), "not in flight before it is sent");
        assert!(gate.places.try_acquire().is_err(), "one at a time");
        place.send().await;
        assert_eq!(gate.load(), (1, 1));
        drop(place);
        assert_eq!(gate.load(), (0, 1));
    }

    #[tokio::test]
    async fn successes_raise_the_limit_back_one_at_a_time() {
        let gate = gate(4);
        let place = sent(&gate).await;
        gate.overloaded(&place, None);
        gate.overloaded(&place, None);
        assert_eq!(gate.load().1, 2);
        // Answers to requests admitted before the cut do not count.
        gate.succeeded(&place);
        drop(place);
        let mut limits = Vec::new();
        for _ in 0..12 {
            let place = sent(&gate).await;
            gate.succeeded(&place);
            limits.push(gate.load().1);
        }
        // Two successes at 2, three at 3, then the configured 4 and no further.
        assert_eq!(limits, [2, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4]);
        assert_eq!(free(&gate), 4);
    }

    #[tokio::test]
    async fn a_raise_while_places_are_withheld_lets_nobody_else_in() {
        let gate = gate(2);
        let first = sent(&gate).await;
        // Its place taken, the second waits for its per-minute slot while the first is refused.
        let mut second = gate.enter().await;
        gate.overloaded(&first, None);
        assert_eq!((gate.load(), free(&gate)), ((1, 1), 0));
        second.send().await;
        assert_eq!((gate.load(), free(&gate)), ((2, 1), 0));
        // Sent after the cut, its answer raises the limit back to 2: both are in flight, so
        // there is still no free place.
        gate.succeeded(&second);
        assert_eq!((gate.load(), free(&gate)), ((2, 2), 0));
        drop(first);
        assert_eq!((gate.load(), free(&gate)), ((1, 2), 1));
        drop(second);
        assert_eq!((gate.load(), free(&gate)), ((0, 2), 2));
    }

    #[tokio::test(start_paused = true)]
    async fn nobody_sends_before_the_servers_wait_is_over() {
        let gate = gate(8);
        let start = Instant::now();
        let place = sent(&gate).await;
        gate.overloaded(&place, Some(Duration::from_secs(2)));
        drop(place);
        // A shorter wait asked later does not shorten it.
        let place = sent(&gate).await;
        assert_eq!(start.elapsed(), Duration::from_secs(2));
        gate.overloaded(&place, Some(Duration::from_secs(3)));
        gate.overloaded(&place, Some(Duration::from_secs(1)));
        drop(place);
        let (a, b) = tokio::join!(sent(&gate), sent(&gate));
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        assert_eq!(gate.load(), (2, 2));
        drop((a, b));
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_waiting_for_its_slot_is_not_sent_during_a_pause() {
        use crate::throttle::Pacer;
        use std::num::NonZeroU32;

        // One a second, as `Inner::call` takes them: a place, a slot, then the send.
        let gate = gate(8);
        let pacer = Pacer::new(NonZeroU32::new(60), None);
        let start = Instant::now();
        let mut first = gate.enter().await;
        let charge = pacer.admit(0).await;
        first.send().await;
        pacer.settle(charge, 0);
        let queued = async {
            let mut place = gate.enter().await;
            // Its slot is at 1 s.
            let charge = pacer.admit(0).await;
            place.send().await;
            pacer.settle(charge, 0);
            (start.elapsed(), place)
        };
        let refusal = async {
            // The first is refused once the second holds its slot, and the server asks for 5 s.
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert_eq!(gate.load(), (1, 8), "the second is queued, not sent");
            gate.overloaded(&first, Some(Duration::from_secs(5)));
        };
        let ((sent_at, second), ()) = tokio::join!(queued, refusal);
        assert_eq!(
            sent_at,
            Duration::from_millis(5100),
            "not at its slot (1 s)"
        );
        drop(first);
        assert_eq!(gate.load(), (1, 4));
        drop(second);
    }

    /// A place, its request sent.
    async fn sent(gate: &Gate) -> Place<'_> {
        let mut place = gate.enter().await;
        place.send().await;
        place
    }

    /// `n` places, taken one after the other, their requests sent.
    async fn enter_many(gate: &Gate, n: usize) -> Vec<Place<'_>> {
        let mut places = Vec::new();
        for _ in 0..n {
            places.push(sent(gate).await);
        }
        places
    }
}
