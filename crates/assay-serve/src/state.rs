//! What every request shares: the engine, BigCodeBench judging, the sanitizers, the queue,
//! the sessions, the metrics and the settings.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use assay_eval::bigcodebench::verifier::Verifier;
use assay_sandbox::Engine;

use crate::admission::Admission;
use crate::auth::Secret;
use crate::compat::gym_extract::Extraction;
use crate::metrics::Metrics;
use crate::sanitizers::Sanitizers;
use crate::sessions::Sessions;

/// Jobs that may wait per job running, unless the settings say: enough that a burst of
/// requests waits rather than fails, few enough that a client's timeout is not reached in
/// the queue.
pub const QUEUE_PER_PLACE: usize = 4;

/// How the service runs: its maxima and its defaults.
#[derive(Clone)]
pub struct Settings {
    /// The environment's profile (`bigcodebench`, `pybench`...): what jobs run in.
    pub profile: String,
    /// The environment sessions run in (the same as `profile`, or another with IPython).
    pub sessions_profile: String,
    /// assay's version, for `/health`.
    pub version: String,
    /// The BigCodeBench version answers are judged against unless they name one.
    pub default_dataset: String,
    /// BigCodeBench answers run behind the official calibration prefix unless they say not.
    pub calibrated: bool,
    /// The longest any job may run, whatever it asks.
    pub max_timeout: Duration,
    /// The most memory any job may use, whatever it asks, in MiB.
    pub max_memory_mib: u64,
    /// The largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Jobs that may wait beyond those running before requests are refused (`503`); none:
    /// [`QUEUE_PER_PLACE`] times the jobs the engine runs at once.
    pub queue: Option<usize>,
    /// Sessions open at once at most.
    pub max_sessions: usize,
    /// A session unused this long is closed.
    pub session_idle: Duration,
    /// Needed on every request when set (see [`Secret`]).
    pub secret: Option<Secret>,
    /// How NeMo Gym's `/verify` finds the code in an answer unless the request says.
    pub gym_extraction: Extraction,
}

/// What runs the sessions.
pub struct SessionsEngine {
    /// The engine (a clone of the service's own, or one in another environment).
    pub engine: Engine,
    /// Why sessions cannot run in it, if they cannot (its environment lacks IPython).
    pub unavailable: Option<String>,
}

/// The service: cheap to clone, every clone the same.
#[derive(Clone)]
pub struct Service {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub engine: Engine,
    /// Runs the sessions: the same engine, or one in another environment.
    pub sessions_engine: Engine,
    /// Why sessions cannot run, when they cannot (the environment lacks IPython).
    pub sessions_unavailable: Option<String>,
    /// BigCodeBench judging.
    pub verifier: Verifier,
    pub sanitizers: Sanitizers,
    pub admission: Admission,
    pub sessions: Sessions,
    pub metrics: Metrics,
    pub settings: Settings,
}

impl Service {
    /// A service over `engine`, its sessions run by `sessions`; `verifier` judges
    /// BigCodeBench answers; `python` runs the sanitizer's syntax checks.
    pub fn new(
        engine: Engine,
        sessions: SessionsEngine,
        verifier: Verifier,
        python: PathBuf,
        settings: Settings,
    ) -> Service {
        let running = engine.max_running();
        Service {
            inner: Arc::new(Inner {
                sanitizers: Sanitizers::new(python, engine.concurrency()),
                admission: Admission::new(
                    running + settings.queue.unwrap_or(QUEUE_PER_PLACE * running),
                ),
                sessions: Sessions::new(settings.max_sessions, settings.session_idle),
                metrics: Metrics::new(),
                verifier,
                engine,
                sessions_engine: sessions.engine,
                sessions_unavailable: sessions.unavailable,
                settings,
            }),
        }
    }
}
