//! `/health` (what the service is and how busy), liveness probes, `/metrics`.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};

use crate::state::Service;

/// `GET /health`.
pub async fn health(State(service): State<Service>) -> Json<Value> {
    let inner = &service.inner;
    let running = inner.engine.jobs_running();
    let admitted = inner.admission.taken();
    Json(json!({
        "status": "ok",
        "version": inner.settings.version,
        "profile": inner.settings.profile,
        "jobs": inner.engine.concurrency(),
        "max_jobs": inner.engine.max_running(),
        "isolation": inner.engine.isolation().level,
        "queue": {
            "admitted": admitted,
            "running": running,
            "capacity": inner.admission.capacity(),
        },
        "sessions": {
            "live": inner.sessions.live(),
            "max": inner.settings.max_sessions,
            "profile": inner.settings.sessions_profile,
            "unavailable": inner.sessions_unavailable,
        },
        "bigcodebench": {
            "default_version": inner.settings.default_dataset,
            "versions": assay_tasks::bigcodebench::VERSIONS,
        },
    }))
}

/// `GET /` and the Kubernetes-style probes: alive (NeMo Gym reads `/`).
pub async fn alive() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// `GET /v1/ping`: SandboxFusion's liveness answer.
pub async fn ping() -> Json<&'static str> {
    Json("pong")
}

/// `GET /metrics`, in the Prometheus text format.
pub async fn metrics(State(service): State<Service>) -> impl IntoResponse {
    let inner = &service.inner;
    let text = inner.metrics.render(
        inner.admission.taken(),
        inner.engine.jobs_running(),
        inner.sessions.live(),
    );
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
}
