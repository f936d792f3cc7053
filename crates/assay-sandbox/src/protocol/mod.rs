//! The worker protocol: every message between the supervisor and the Python worker, as types.
//!
//! Two channels, both specified in `docs/worker-protocol.md` (a test holds this module, the
//! Python worker and that document to each other):
//!
//! * the zygote's control socket ([`zygote`]): starting the zygote, asking it for job
//!   processes, hearing how they ended;
//! * a job process's pipes ([`job`]): the job sent on its control pipe, its events back on its
//!   results pipe.
//!
//! Messages are parsed into these types once, where they arrive, and refused whole when they do
//! not parse ([`expect`] refuses those that may not come at that point of a job): a renamed or
//! missing field is an error naming what arrived, never a default. The results pipe is also the
//! channel verdicts travel on, and from the moment a job's code starts, that code can write on
//! it too: see [`expect::Expect`] for what that changes.

pub(crate) mod expect;
pub(crate) mod job;
pub(crate) mod zygote;

#[cfg(test)]
mod documented;

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// CPU time and peak memory, as `getrusage` gives them: what the zygote measured of a reaped
/// job process, or what a job process measured of itself (the fallback without a cgroup).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct Rusage {
    /// User CPU seconds.
    pub utime: f64,
    /// System CPU seconds.
    pub stime: f64,
    /// Peak resident set, KiB.
    pub maxrss_kib: u64,
}

impl Rusage {
    pub fn cpu(&self) -> Duration {
        Duration::from_secs_f64((self.utime + self.stime).max(0.0))
    }
}

/// A message that could not be taken: what arrived (cut short) and why it was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{why}; what arrived: {arrived}")]
pub(crate) struct Refused {
    pub why: String,
    pub arrived: String,
}

/// How much of a refused message a report quotes: its head and its tail (where a traceback
/// names its exception), in characters.
const QUOTED_HEAD: usize = 200;
const QUOTED_TAIL: usize = 100;

impl Refused {
    pub fn new(why: impl Into<String>, arrived: &[u8]) -> Self {
        let text = String::from_utf8_lossy(arrived);
        let chars = text.chars().count();
        let arrived = if chars <= QUOTED_HEAD + QUOTED_TAIL {
            text.into_owned()
        } else {
            let head: String = text.chars().take(QUOTED_HEAD).collect();
            let tail: String = text.chars().skip(chars - QUOTED_TAIL).collect();
            format!("{head} … {tail} ({} bytes)", arrived.len())
        };
        Refused {
            why: why.into(),
            arrived,
        }
    }
}

/// Parses one message into `T`, refusing it whole (naming what arrived) if it does not fit.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, Refused> {
    serde_json::from_slice(bytes).map_err(|e| Refused::new(e.to_string(), bytes))
}
