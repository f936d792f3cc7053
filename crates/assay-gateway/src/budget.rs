//! What an episode may spend, what it has spent, and why the gateway stopped serving it.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use assay_records::TokenUsage;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

/// What one episode may spend of the model; `None` = no bound.
#[derive(Clone, Debug, Default)]
pub struct Budget {
    /// Requests the model is asked at most.
    pub requests: Option<u32>,
    /// Tokens (prompts and answers, as the provider reports them) at most.
    pub tokens: Option<u64>,
    /// Time since the gateway started.
    pub wall: Option<Duration>,
}

/// Why the gateway stopped serving the episode. The first reason wins; every request after it
/// is refused without reaching the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// [`Budget::requests`] were asked.
    RequestBudget,
    /// [`Budget::tokens`] were used.
    TokenBudget,
    /// [`Budget::wall`] has passed.
    WallBudget,
    /// The conversation no longer fits the model's context window: the model's own limit, which
    /// the same request meets again however often it is sent.
    ContextFull,
    /// The model's API failed for good (retries exhausted, or a fault no request can get past,
    /// such as a bad key).
    ModelFailed,
}

impl Stop {
    /// Why the episode was stopped, in a few words ("its token budget is spent").
    pub fn describe(self) -> &'static str {
        match self {
            Stop::RequestBudget => "its request budget is spent",
            Stop::TokenBudget => "its token budget is spent",
            Stop::WallBudget => "its time budget is spent",
            Stop::ContextFull => "the conversation outgrew the model's context window",
            Stop::ModelFailed => "the model's API failed",
        }
    }

    /// What an agent asking after the stop is told.
    pub(crate) fn told(self) -> &'static str {
        match self {
            Stop::RequestBudget => "assay: the episode's request budget is spent",
            Stop::TokenBudget => "assay: the episode's token budget is spent",
            Stop::WallBudget => "assay: the episode's time budget is spent",
            Stop::ContextFull => {
                "assay: the episode has ended: the conversation outgrew the model's context window"
            }
            Stop::ModelFailed => "assay: the episode has ended: the model's API failed",
        }
    }
}

/// What the episode has used of the model so far.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Totals {
    /// Requests the model was asked (answered or not); refused requests are not counted.
    pub requests: u32,
    /// Tokens the provider reported, summed.
    pub usage: TokenUsage,
}

/// Keeps the episode's account: admits requests while the budget lasts and says when the
/// gateway stops.
pub(crate) struct Ledger {
    budget: Budget,
    started: Instant,
    spent: Mutex<Totals>,
    stopped: watch::Sender<Option<Stop>>,
}

impl Ledger {
    pub(crate) fn new(budget: Budget) -> Ledger {
        Ledger {
            budget,
            started: Instant::now(),
            spent: Mutex::default(),
            stopped: watch::Sender::new(None),
        }
    }

    /// Counts a request about to be asked of the model, or says why it may not be: the gateway
    /// has stopped, or a budget is spent. A spent budget is not yet published as the stop: the
    /// caller records the refused exchange first, then calls [`Ledger::stop`], so that whoever
    /// reacts to the stop finds it in the record.
    pub(crate) fn admit(&self) -> Result<(), Stop> {
        if let Some(stop) = *self.stopped.borrow() {
            return Err(stop);
        }
        let mut spent = self.spent();
        let tokens = spent.usage.prompt_tokens + spent.usage.completion_tokens;
        if self
            .budget
            .requests
            .is_some_and(|most| spent.requests >= most)
        {
            return Err(Stop::RequestBudget);
        }
        if self.budget.tokens.is_some_and(|most| tokens >= most) {
            return Err(Stop::TokenBudget);
        }
        if self
            .budget
            .wall
            .is_some_and(|wall| self.started.elapsed() >= wall)
        {
            return Err(Stop::WallBudget);
        }
        spent.requests += 1;
        Ok(())
    }

    /// Adds an answer's tokens to the account.
    pub(crate) fn charge(&self, usage: &TokenUsage) {
        self.spent().usage += usage;
    }

    /// Publishes why the gateway stops, unless it already has.
    pub(crate) fn stop(&self, stop: Stop) {
        self.stopped.send_if_modified(|stopped| {
            let first = stopped.is_none();
            if first {
                tracing::info!(?stop, "the model gateway stops serving the episode");
                *stopped = Some(stop);
            }
            first
        });
    }

    /// Waits until the wall budget has passed, then stops the gateway: an agent busy with its
    /// tools asks nothing that would notice. Never ends without a wall budget.
    pub(crate) async fn watch_wall(&self) {
        match self.budget.wall {
            Some(wall) => {
                tokio::time::sleep_until((self.started + wall).into()).await;
                self.stop(Stop::WallBudget);
            }
            None => std::future::pending().await,
        }
    }

    pub(crate) fn stopped(&self) -> watch::Receiver<Option<Stop>> {
        self.stopped.subscribe()
    }

    pub(crate) fn totals(&self) -> Totals {
        self.spent().clone()
    }

    fn spent(&self) -> std::sync::MutexGuard<'_, Totals> {
        // The account stays consistent whatever panicked while holding it: every change is
        // one assignment.
        self.spent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_budget_refuses_once_spent_and_the_first_stop_wins() {
        let ledger = Ledger::new(Budget {
            requests: Some(2),
            tokens: Some(100),
            wall: None,
        });
        assert_eq!(ledger.admit(), Ok(()));
        ledger.charge(&TokenUsage {
            prompt_tokens: 60,
            completion_tokens: 40,
            reasoning_tokens: 0,
        });
        assert_eq!(ledger.admit(), Err(Stop::TokenBudget));
        assert_eq!(*ledger.stopped().borrow(), None, "not published by admit");
        ledger.stop(Stop::TokenBudget);
        ledger.stop(Stop::ModelFailed);
        assert_eq!(*ledger.stopped().borrow(), Some(Stop::TokenBudget));
        assert_eq!(ledger.admit(), Err(Stop::TokenBudget));
        assert_eq!(ledger.totals().requests, 1);
    }

    #[test]
    fn requests_are_counted_when_admitted() {
        let ledger = Ledger::new(Budget {
            requests: Some(1),
            ..Budget::default()
        });
        assert_eq!(ledger.admit(), Ok(()));
        assert_eq!(ledger.admit(), Err(Stop::RequestBudget));
        let spent = Ledger::new(Budget {
            wall: Some(Duration::ZERO),
            ..Budget::default()
        });
        assert_eq!(spent.admit(), Err(Stop::WallBudget));
    }

    #[test]
    fn stops_serialize_in_snake_case() {
        let text = serde_json::to_string(&Stop::RequestBudget).unwrap();
        assert_eq!(text, "\"request_budget\"");
    }
}
