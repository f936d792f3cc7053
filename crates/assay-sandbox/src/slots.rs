//! CPU slots: how many jobs run at once.
//!
//! A slot is a CPU's worth of work. Many tests spend most of their time waiting instead:
//! sleeping, polling a subprocess, serving a socket for a fixed duration, or hung on
//! something that never comes (BigCodeBench's slowest tasks use almost no CPU). A job
//! holding a slot while it waits leaves a CPU idle, so a job whose process tree has used
//! almost no CPU for a while lends its slot to the next job in line, and takes it back
//! when it computes again (or, if none is free, counts as a debt that the next returned
//! slot pays). The number of jobs running at all stays bounded.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::convert::Infallible;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::meter::{stat_after_command, CpuMeter};

/// How often a running job's CPU use is read.
pub(crate) const METER_TICK: Duration = Duration::from_millis(250);
/// The span over which CPU use is judged.
const WINDOW: Duration = Duration::from_secs(1);
/// Below this share of one CPU over the window, a job is waiting and lends its slot.
const IDLE_SHARE: f64 = 0.1;
/// Above this share, a job that lent its slot is computing again and takes one back.
const BUSY_SHARE: f64 = 0.3;

/// The engine's slots, and the bound on jobs running at all.
///
/// Jobs waiting to start are admitted longest expected first (first come, first served
/// among equals): whoever hands the engine many jobs at once has the slowest start first, so
/// that they do not end a run alone, however many wait.
pub(crate) struct Slots {
    state: Mutex<State>,
    /// Whether a lent slot can admit anyone: not when every place is a slot.
    lends: bool,
    /// Places among the running jobs in all.
    places: usize,
}

struct State {
    /// Slots no job holds.
    free: usize,
    /// Places among the running jobs no job holds.
    open: usize,
    /// Slots owed by jobs that started computing again when none was free.
    debt: usize,
    waiting: BinaryHeap<Waiter>,
    /// Arrivals so far: the order among equal expectations.
    arrivals: u64,
}

/// A job waiting to start.
struct Waiter {
    expected: f64,
    arrival: u64,
    admit: oneshot::Sender<()>,
}

impl Ord for Waiter {
    fn cmp(&self, other: &Self) -> Ordering {
        self.expected
            .total_cmp(&other.expected)
            .then(other.arrival.cmp(&self.arrival))
    }
}

impl PartialOrd for Waiter {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Waiter {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Waiter {}

/// A running job's claim: always a place among the running jobs, and a slot unless lent.
pub(crate) struct Slot<'a> {
    slots: &'a Slots,
    holds: bool,
}

impl Slots {
    /// `cpus` slots; at most `max_running` jobs at once (no lending when equal).
    pub fn new(cpus: usize, max_running: usize) -> Self {
        let cpus = cpus.max(1);
        let places = max_running.max(cpus);
        Slots {
            state: Mutex::new(State {
                free: cpus,
                open: places,
                debt: 0,
                waiting: BinaryHeap::new(),
                arrivals: 0,
            }),
            places,
            lends: max_running > cpus,
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for a place and a slot, for a job expected to take `expected` seconds: the
    /// longest expected first, first come first served among equals. Cancel-safe: a job
    /// admitted as its wait is dropped gives its claim back.
    pub async fn take(&self, expected: f64) -> Slot<'_> {
        let mut admitted = {
            let mut state = self.state();
            if state.waiting.is_empty() && state.open > 0 && state.free > 0 {
                state.open -= 1;
                state.free -= 1;
                return self.claim();
            }
            let (admit, admitted) = oneshot::channel();
            state.arrivals += 1;
            let arrival = state.arrivals;
            state.waiting.push(Waiter {
                expected,
                arrival,
                admit,
            });
            Admission {
                slots: self,
                rx: Some(admitted),
            }
        };
        let rx = admitted.rx.as_mut().expect("waiting");
        // The sender goes only when the waiter is admitted or the engine is gone.
        let _ = rx.await;
        admitted.rx = None;
        self.claim()
    }

    fn claim(&self) -> Slot<'_> {
        Slot {
            slots: self,
            holds: true,
        }
    }

    /// Jobs running now (holding a slot or having lent it).
    pub fn running(&self) -> usize {
        self.places - self.state().open
    }

    /// A slot comes back: it pays a debt, or admits the next job, or is free.
    fn give_back(&self) {
        let mut state = self.state();
        state.return_slot();
        state.admit();
    }

    /// A job ended: its place comes back (and its slot, if it held one).
    fn leave(&self, held: bool) {
        let mut state = self.state();
        state.open += 1;
        if held {
            state.return_slot();
        }
        state.admit();
    }
}

impl State {
    /// A slot comes back: it pays a debt first.
    fn return_slot(&mut self) {
        if self.debt > 0 {
            self.debt -= 1;
        } else {
            self.free += 1;
        }
    }

    /// Admits the longest-expected waiters while a place and a slot are free.
    fn admit(&mut self) {
        while self.open > 0 && self.free > 0 {
            let Some(waiter) = self.waiting.pop() else {
                return;
            };
            // A waiter whose wait was dropped is skipped.
            if waiter.admit.send(()).is_ok() {
                self.open -= 1;
                self.free -= 1;
            }
        }
    }
}

/// A job's wait to start: dropped before it is admitted, it leaves the line; admitted and
/// dropped before it took its claim, it gives the claim back.
struct Admission<'a> {
    slots: &'a Slots,
    rx: Option<oneshot::Receiver<()>>,
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        if let Some(mut rx) = self.rx.take() {
            rx.close();
            if rx.try_recv().is_ok() {
                self.slots.leave(true);
            }
        }
    }
}

impl Slot<'_> {
    /// The job is waiting: its slot goes to the next job in line.
    pub fn lend(&mut self) {
        if self.holds {
            tracing::debug!("slot lent");
            self.holds = false;
            self.slots.give_back();
        }
    }

    /// The job computes again: it takes a free slot, or owes one.
    pub fn reclaim(&mut self) {
        if !self.holds {
            tracing::debug!("slot reclaimed");
            self.holds = true;
            let mut state = self.slots.state();
            if state.free > 0 {
                state.free -= 1;
            } else {
                state.debt += 1;
            }
        }
    }

    /// Lends and reclaims the slot as the job's CPU use, read from `meter`, goes down and
    /// up. Runs until dropped; reads nothing when lending could admit no one.
    pub async fn follow(&mut self, meter: &CpuMeter) -> Infallible {
        if !self.slots.lends {
            return std::future::pending().await;
        }
        let mut seen: VecDeque<(Instant, Duration)> = VecDeque::new();
        let mut tick = tokio::time::interval(METER_TICK);
        loop {
            tick.tick().await;
            let Some(used) = meter.read() else { continue };
            let now = Instant::now();
            seen.push_back((now, used));
            while seen.len() > 1 && now - seen[1].0 >= WINDOW {
                seen.pop_front();
            }
            let (since, before) = seen[0];
            if now - since < WINDOW {
                continue;
            }
            let share = used.saturating_sub(before).as_secs_f64() / (now - since).as_secs_f64();
            if share < IDLE_SHARE {
                self.lend();
            } else if share > BUSY_SHARE {
                self.reclaim();
            }
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.slots.leave(self.holds);
    }
}

/// Whether one of `threads` is runnable now (computing, or ready to and kept from a CPU by a
/// busy machine or its quota) or in uninterruptible sleep (held up by the disk or memory
/// reclaim): the job is held up, not waiting.
pub(crate) fn held_up(threads: &[i32]) -> bool {
    threads.iter().any(|tid| {
        stat_after_command(&format!("/proc/{tid}/stat"))
            .is_some_and(|rest| rest.starts_with(['R', 'D']))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free(slots: &Slots) -> usize {
        slots.state().free
    }

    #[tokio::test]
    async fn a_lent_slot_admits_the_next_job_and_debts_are_paid_first() {
        let slots = Slots::new(1, 3);
        let mut first = slots.take(0.0).await;
        assert_eq!(free(&slots), 0);
        first.lend();
        let mut second = slots.take(0.0).await; // admitted on the lent slot
        first.reclaim(); // none free: a debt
        assert_eq!(slots.state().debt, 1);
        second.lend(); // pays the debt, frees nothing
        assert_eq!(slots.state().debt, 0);
        assert_eq!(free(&slots), 0);
        drop(first); // returns its slot
        let third = slots.take(0.0).await;
        drop((second, third));
        assert_eq!(free(&slots), 1);
        assert_eq!(slots.running(), 0);
    }

    #[tokio::test]
    async fn lending_never_exceeds_the_bound_on_running_jobs() {
        let slots = Slots::new(1, 2);
        let mut a = slots.take(0.0).await;
        a.lend();
        let mut b = slots.take(0.0).await;
        b.lend();
        // Two running, both lent: a third waits for a place, not for a slot.
        let third = tokio::time::timeout(Duration::from_millis(50), slots.take(0.0)).await;
        assert!(third.is_err());
        drop(a);
        let c = tokio::time::timeout(Duration::from_millis(50), slots.take(0.0)).await;
        assert!(c.is_ok());
    }

    #[tokio::test]
    async fn the_longest_expected_start_first_and_equals_in_turn() {
        let slots = std::sync::Arc::new(Slots::new(1, 1));
        let first = slots.take(0.0).await;
        let (tx, mut order) = tokio::sync::mpsc::unbounded_channel();
        let mut waits = Vec::new();
        for (name, expected) in [
            ("short", 1.0),
            ("long", 100.0),
            ("short2", 1.0),
            ("mid", 10.0),
        ] {
            let (slots, tx) = (slots.clone(), tx.clone());
            waits.push(tokio::spawn(async move {
                let slot = slots.take(expected).await;
                tx.send(name).unwrap();
                tokio::time::sleep(Duration::from_millis(5)).await;
                drop(slot);
            }));
            // Each in the line before the next arrives.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // A wait given up leaves the line without taking anything.
        let given_up = tokio::time::timeout(Duration::from_millis(20), slots.take(1000.0)).await;
        assert!(given_up.is_err());
        drop(first);
        for wait in waits {
            wait.await.unwrap();
        }
        drop(tx);
        let mut seen = Vec::new();
        while let Some(name) = order.recv().await {
            seen.push(name);
        }
        assert_eq!(seen, ["long", "mid", "short", "short2"]);
        assert_eq!((free(&slots), slots.running()), (1, 0));
    }
}
