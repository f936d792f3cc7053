//! The service: what every request shares, its routes, and serving them.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use assay_eval::bigcodebench::verifier::Verifier;
use assay_sandbox::Engine;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::Response;
use axum::routing::{delete, get, post};
use axum::Router;

use crate::admission::Admission;
use crate::auth::{self, Secret};
use crate::compat::gym_extract::Extraction;
use crate::compat::{fusion, gym, gym_metrics};
use crate::metrics::Metrics;
use crate::routes::{bigcodebench, health, run, unittest};
use crate::sanitizers::Sanitizers;
use crate::sessions::{self, Sessions};

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

    /// Every route, behind the secret if there is one.
    pub fn router(&self) -> Router {
        let api = Router::new()
            .route("/", get(health::alive))
            .route("/health", get(health::health))
            .route("/healthz", get(health::alive))
            .route("/livez", get(health::alive))
            .route("/readyz", get(health::alive))
            .route("/metrics", get(health::metrics))
            .route("/v1/ping", get(health::ping))
            .route("/v1/bigcodebench/verify", post(bigcodebench::verify))
            .route(
                "/v1/bigcodebench/verify_batch",
                post(bigcodebench::verify_batch),
            )
            .route("/v1/unittest", post(unittest::unittest))
            .route("/v1/run", post(run::run))
            .route("/v1/sessions", post(sessions::create).get(sessions::list))
            .route("/v1/sessions/{id}", delete(sessions::remove))
            .route("/v1/sessions/{id}/execute", post(sessions::execute))
            .route("/v1/sessions/{id}/files", get(sessions::files))
            .route("/verify", post(gym::verify))
            .route("/seed_session", post(gym::seed_session))
            .route("/close_session", post(gym::close_session))
            .route("/aggregate_metrics", post(gym_metrics::aggregate_metrics))
            .route("/reverify_mode", get(gym_metrics::reverify_mode))
            .route("/run_code", post(fusion::run_code))
            .layer(from_fn_with_state(self.clone(), count))
            .layer(DefaultBodyLimit::max(self.inner.settings.max_body_bytes))
            .with_state(self.clone());
        match &self.inner.settings.secret {
            None => api,
            Some(secret) => Router::new()
                .nest(&format!("/{}", secret.segment()), api.clone())
                .merge(api.route_layer(from_fn_with_state(secret.clone(), auth::bearer))),
        }
    }
}

/// Counts each request by its route's pattern (the secret, when the path carried it, left
/// out) and its status.
async fn count(State(service): State<Service>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string());
    let response = next.run(request).await;
    let route = match (route, &service.inner.settings.secret) {
        (Some(route), Some(secret)) => {
            let prefix = format!("/{}", secret.segment());
            match route.strip_prefix(&prefix) {
                Some("") => "/".to_string(),
                Some(rest) => rest.to_string(),
                None => route,
            }
        }
        (Some(route), None) => route,
        (None, _) => "(no route)".to_string(),
    };
    service
        .inner
        .metrics
        .request(&route, response.status().as_u16());
    response
}

/// Serves `service` on `listener` until `stop` completes. Jobs still running then are
/// killed (their futures dropped), sessions closed. Idle sessions are closed as they expire.
pub async fn serve(
    service: Service,
    listener: tokio::net::TcpListener,
    stop: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let reaper = tokio::spawn(sessions::reap(service.clone()));
    let served = tokio::select! {
        served = axum::serve(listener, service.router()) => served,
        () = stop => Ok(()),
    };
    reaper.abort();
    service.inner.sessions.close_all().await;
    served
}
