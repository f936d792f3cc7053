//! The service's routes, and serving them.

use std::future::Future;

use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::Response;
use axum::routing::{delete, get, post};
use axum::Router;

use crate::auth;
use crate::compat::{fusion, gym, gym_metrics};
use crate::routes::{bigcodebench, health, run, sessions, unittest};
use crate::state::Service;

impl Service {
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
            .route("/seed_session", post(gym::no_session))
            .route("/close_session", post(gym::no_session))
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
    let reaper = tokio::spawn(reap(service.clone()));
    let served = tokio::select! {
        served = axum::serve(listener, service.router()) => served,
        () = stop => Ok(()),
    };
    reaper.abort();
    service.inner.sessions.close_all().await;
    served
}

/// How often idle sessions are looked for.
const REAP_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Closes sessions idle past the limit, until the service stops.
async fn reap(service: Service) {
    let mut tick = tokio::time::interval(REAP_EVERY);
    loop {
        tick.tick().await;
        for live in service.inner.sessions.expire_idle() {
            tracing::info!("closing an idle session");
            crate::sessions::close(live).await;
        }
    }
}
