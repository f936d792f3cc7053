//! CPU slots: how many jobs run at once.
//!
//! A slot is a CPU's worth of work. Many tests spend most of their time waiting instead:
//! sleeping, polling a subprocess, serving a socket for a fixed duration, or hung on
//! something that never comes (BigCodeBench's slowest tasks use almost no CPU). A job
//! holding a slot while it waits leaves a CPU idle, so a job whose process tree has used
//! almost no CPU for a while lends its slot to the next job in line, and takes it back
//! when it computes again (or, if none is free, counts as a debt that the next returned
//! slot pays). The number of jobs running at all stays bounded.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::{Semaphore, SemaphorePermit};

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
pub(crate) struct Slots {
    free: Semaphore,
    running: Semaphore,
    /// Slots owed by jobs that started computing again when none was free.
    debt: Mutex<usize>,
    /// Whether a lent slot can admit anyone: not when every place is a slot.
    lends: bool,
    /// Places among the running jobs in all.
    places: usize,
}

/// A running job's claim: always a place among the running jobs, and a slot unless lent.
pub(crate) struct Slot<'a> {
    slots: &'a Slots,
    _running: SemaphorePermit<'a>,
    holds: bool,
}

impl Slots {
    /// `cpus` slots; at most `max_running` jobs at once (no lending when equal).
    pub fn new(cpus: usize, max_running: usize) -> Self {
        let cpus = cpus.max(1);
        Slots {
            free: Semaphore::new(cpus),
            running: Semaphore::new(max_running.max(cpus)),
            places: max_running.max(cpus),
            debt: Mutex::new(0),
            lends: max_running > cpus,
        }
    }

    /// Waits for a place and a slot, first come first served.
    pub async fn take(&self) -> Slot<'_> {
        let running = self.running.acquire().await.expect("never closed");
        self.free.acquire().await.expect("never closed").forget();
        Slot {
            slots: self,
            _running: running,
            holds: true,
        }
    }

    /// Jobs running now (holding a slot or having lent it).
    pub fn running(&self) -> usize {
        self.places - self.running.available_permits()
    }

    fn give_back(&self) {
        let mut debt = self.debt.lock().expect("poisoned");
        if *debt > 0 {
            *debt -= 1;
        } else {
            self.free.add_permits(1);
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
            match self.slots.free.try_acquire() {
                Ok(permit) => permit.forget(),
                Err(_) => *self.slots.debt.lock().expect("poisoned") += 1,
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
        if self.holds {
            self.slots.give_back();
        }
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

    #[tokio::test]
    async fn a_lent_slot_admits_the_next_job_and_debts_are_paid_first() {
        let slots = Slots::new(1, 3);
        let mut first = slots.take().await;
        assert!(slots.free.try_acquire().is_err());
        first.lend();
        let mut second = slots.take().await; // admitted on the lent slot
        first.reclaim(); // none free: a debt
        assert_eq!(*slots.debt.lock().unwrap(), 1);
        second.lend(); // pays the debt, frees nothing
        assert_eq!(*slots.debt.lock().unwrap(), 0);
        assert!(slots.free.try_acquire().is_err());
        drop(first); // returns its slot
        let third = slots.take().await;
        drop((second, third));
        assert_eq!(slots.free.available_permits(), 1);
    }

    #[tokio::test]
    async fn lending_never_exceeds_the_bound_on_running_jobs() {
        let slots = Slots::new(1, 2);
        let mut a = slots.take().await;
        a.lend();
        let mut b = slots.take().await;
        b.lend();
        // Two running, both lent: a third waits for a place, not for a slot.
        let third = tokio::time::timeout(Duration::from_millis(50), slots.take()).await;
        assert!(third.is_err());
        drop(a);
        let c = tokio::time::timeout(Duration::from_millis(50), slots.take()).await;
        assert!(c.is_ok());
    }
}
