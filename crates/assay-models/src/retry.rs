//! The bounded retry loop around HTTP attempts.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::config::Backoff;
use crate::error::{AttemptError, RequestError};

/// A server's `Retry-After` is honoured up to this long (or `Backoff::max` if larger), so a
/// server asking for an hour cannot stall a run; the request then fails once retries run out.
const SERVER_HINT_CAP: Duration = Duration::from_secs(60);

/// One retry about to happen, for progress displays.
#[derive(Debug, Clone, Copy)]
pub struct RetryEvent<'a> {
    /// The attempt that just failed, counting from 1.
    pub attempt: u32,
    /// Attempts allowed in all, the first one included.
    pub max_attempts: u32,
    /// Why it failed, e.g. `HTTP 429: Rate limit reached (rate_limit_exceeded)`.
    pub cause: &'a str,
    /// How long we wait before the next attempt.
    pub delay: Duration,
}

/// Called on every retry; see [`Client::on_retry`](crate::Client::on_retry).
pub(crate) type RetryObserver = Arc<dyn Fn(&RetryEvent<'_>) + Send + Sync>;

/// How many attempts a request gets and how long to wait between them.
pub(crate) struct RetryPolicy {
    pub(crate) max_attempts: u32,
    pub(crate) backoff: Backoff,
}

impl RetryPolicy {
    /// Runs `attempt` until it succeeds, fails for good, or attempts run out. Returns the value
    /// and the number of attempts made. `label` names the model in log lines.
    pub(crate) async fn run<T, F, Fut>(
        &self,
        label: &str,
        observer: Option<&RetryObserver>,
        mut attempt: F,
    ) -> Result<(T, u32), RequestError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, AttemptError>>,
    {
        let mut made = 0;
        loop {
            made += 1;
            let (cause, retry_after) = match attempt().await {
                Ok(value) => return Ok((value, made)),
                Err(AttemptError::Fatal { status, message }) => {
                    return Err(RequestError::Fatal { status, message })
                }
                Err(AttemptError::ContextFull(full)) => {
                    return Err(RequestError::ContextFull(full))
                }
                Err(AttemptError::Reject(message)) => {
                    return Err(RequestError::Failed {
                        attempts: made,
                        message,
                    })
                }
                Err(AttemptError::Retry {
                    cause, retry_after, ..
                }) => (cause, retry_after),
            };
            if made >= self.max_attempts {
                let noun = if made == 1 { "attempt" } else { "attempts" };
                return Err(RequestError::Failed {
                    attempts: made,
                    message: format!("gave up after {made} {noun}: {cause}"),
                });
            }
            let delay = self.delay(made - 1, retry_after);
            // Info, not warn: a retry is routine (the caller counts them on its progress line
            // and in its totals); `-v` shows each one.
            tracing::info!(
                model = label,
                attempt = made,
                max_attempts = self.max_attempts,
                delay_ms = delay.as_millis() as u64,
                "retrying model request: {cause}"
            );
            if let Some(observer) = observer {
                observer(&RetryEvent {
                    attempt: made,
                    max_attempts: self.max_attempts,
                    cause: &cause,
                    delay,
                });
            }
            tokio::time::sleep(delay).await;
        }
    }

    /// How long a server's `Retry-After` is honoured: as given, within the cap.
    pub(crate) fn server_wait(&self, hint: Duration) -> Duration {
        hint.min(self.backoff.max.max(SERVER_HINT_CAP))
    }

    /// The wait before retry number `retry` (0-based): the server's hint if it gave one (capped),
    /// else `initial × 2^retry` capped at `max`, drawn uniformly from `[d/2, d]`.
    fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(hint) = retry_after {
            return self.server_wait(hint);
        }
        let factor = 1u32.checked_shl(retry).unwrap_or(u32::MAX);
        let ceiling = self
            .backoff
            .initial
            .saturating_mul(factor)
            .min(self.backoff.max);
        let ceiling_nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(fastrand::u64(ceiling_nanos / 2..=ceiling_nanos))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(initial_ms: u64, max_ms: u64) -> RetryPolicy {
        RetryPolicy {
            max_attempts: 10,
            backoff: Backoff {
                initial: Duration::from_millis(initial_ms),
                max: Duration::from_millis(max_ms),
            },
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let p = policy(100, 1000);
        for _ in 0..50 {
            let d = p.delay(0, None);
            assert!(
                d >= Duration::from_millis(50) && d <= Duration::from_millis(100),
                "{d:?}"
            );
            let d = p.delay(2, None);
            assert!(
                d >= Duration::from_millis(200) && d <= Duration::from_millis(400),
                "{d:?}"
            );
            let d = p.delay(40, None);
            assert!(
                d >= Duration::from_millis(500) && d <= Duration::from_millis(1000),
                "{d:?}"
            );
        }
        let huge = RetryPolicy {
            max_attempts: 2,
            backoff: Backoff {
                initial: Duration::MAX,
                max: Duration::MAX,
            },
        };
        assert!(huge.delay(31, None) > Duration::ZERO);
    }

    #[test]
    fn server_hints_win_but_are_capped() {
        let p = policy(1, 5);
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
        assert_eq!(p.delay(0, Some(Duration::from_secs(3600))), SERVER_HINT_CAP);
        let p = policy(1, 120_000);
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(3600))),
            Duration::from_secs(120)
        );
    }

    #[tokio::test]
    async fn gives_up_with_the_last_cause() {
        let p = RetryPolicy {
            max_attempts: 3,
            backoff: Backoff {
                initial: Duration::from_millis(1),
                max: Duration::from_millis(2),
            },
        };
        let mut calls = 0;
        let result: Result<((), u32), _> = p
            .run("m", None, || {
                calls += 1;
                let cause = format!("HTTP 503: overloaded #{calls}");
                async move { Err(AttemptError::retry(cause)) }
            })
            .await;
        match result {
            Err(RequestError::Failed { attempts, message }) => {
                assert_eq!(attempts, 3);
                assert_eq!(message, "gave up after 3 attempts: HTTP 503: overloaded #3");
            }
            other => panic!("{other:?}"),
        }
    }
}
