//! Interpreter sessions over HTTP: a persistent Python interpreter, as PyBench's agent drives
//! one, kept by id between requests. A session's id is all it takes to run code in it, so the
//! service makes ids nobody can guess unless the client brings its own (an ingress that
//! routes by `X-Session-ID` needs the id before the session exists).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use assay_agent::pybench::observation;
use assay_sandbox::SessionSpec;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::Json;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::error::ApiError;
use crate::files;
use crate::limits::job_limits;
use crate::sessions::{close, Live};
use crate::state::Service;

/// A cell's time limit unless it asks another (PyBench's interpreter has none; the agent's
/// loop gives each cell this much).
const CELL_TIMEOUT: Duration = Duration::from_secs(60);
/// How much of a session's files `files` reads back at most.
const FILES_BYTES: u64 = 256 << 20;
/// The header that names a session (NeMo Skills' sandbox uses the same).
const SESSION_HEADER: &str = "x-session-id";

/// A session id nobody can guess: 128 random bits.
fn new_id() -> Result<String, ApiError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| ApiError::internal(format!("no randomness for a session id: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn valid_id(id: &str) -> Result<(), ApiError> {
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if id.is_empty() || id.len() > 128 || !id.chars().all(plain) {
        return Err(ApiError::bad(format!(
            "session id {id:?}: 1 to 128 letters, digits, - or _"
        )));
    }
    Ok(())
}

fn header_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// A session to open.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateRequest {
    /// Files in its working directory before the first cell: path → base64.
    #[serde(default)]
    files: BTreeMap<String, String>,
    /// The environment it runs in: must be the service's (say which, to be sure).
    profile: Option<String>,
    /// Its id (default: a random one; `X-Session-ID` may give it too).
    session_id: Option<String>,
}

/// `POST /v1/sessions`.
pub async fn create(
    State(service): State<Service>,
    headers: HeaderMap,
    body: Result<Json<CreateRequest>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(request) = body?;
    let inner = &service.inner;
    let sessions = &inner.sessions;
    let served = &inner.settings.sessions_profile;
    if let Some(profile) = request.profile.as_ref().filter(|p| *p != served) {
        return Err(ApiError::bad(format!(
            "profile: this service's sessions run in `{served}`, not `{profile}` (start it \
             with --sessions-profile {profile})"
        )));
    }
    if let Some(why) = &inner.sessions_unavailable {
        return Err(ApiError::bad(why.clone()));
    }
    let id = match request.session_id.or_else(|| header_id(&headers)) {
        Some(id) => {
            valid_id(&id)?;
            id
        }
        None => new_id()?,
    };
    let files = files::decode("files", &request.files)?;
    {
        let open = sessions.open.lock().unwrap_or_else(PoisonError::into_inner);
        let mut opening = sessions
            .opening
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if open.contains_key(&id) {
            return Err(ApiError::conflict(format!(
                "session `{id}` is open already"
            )));
        }
        if open.len() + *opening >= sessions.max {
            return Err(ApiError::conflict(format!(
                "{} sessions are open, the most this service keeps; close one \
                 (DELETE /v1/sessions/{{id}}) or wait for idle ones to expire",
                sessions.max
            )));
        }
        *opening += 1;
    }
    let spec = SessionSpec {
        files,
        limits: Some(job_limits(&inner.settings, None, CELL_TIMEOUT, None)?),
        ..SessionSpec::default()
    };
    let opened = inner.sessions_engine.open_session(spec).await;
    *sessions
        .opening
        .lock()
        .unwrap_or_else(PoisonError::into_inner) -= 1;
    let session = opened.map_err(|e| ApiError::internal(format!("opening the session: {e}")))?;
    let live = Arc::new(Live {
        session,
        created: SystemTime::now(),
        last_used: Mutex::new(Instant::now()),
        cells: Default::default(),
    });
    let clash = {
        let mut open = sessions.open.lock().unwrap_or_else(PoisonError::into_inner);
        match open.contains_key(&id) {
            true => Some(live),
            false => {
                open.insert(id.clone(), live);
                None
            }
        }
    };
    if let Some(live) = clash {
        close(live).await;
        return Err(ApiError::conflict(format!(
            "session `{id}` is open already"
        )));
    }
    Ok(Json(json!({ "session_id": id })))
}

/// A cell to run.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecuteRequest {
    /// The code.
    code: String,
    /// Seconds (default 60, at most the service's maximum).
    timeout: Option<f64>,
}

/// `POST /v1/sessions/{id}/execute`: runs a cell; its outputs as a notebook has them, and
/// `text`, what PyBench's agent reads of them.
pub async fn execute(
    State(service): State<Service>,
    Path(id): Path<String>,
    body: Result<Json<ExecuteRequest>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(request) = body?;
    let inner = &service.inner;
    let live = inner.sessions.get(&id)?;
    let limits = job_limits(&inner.settings, request.timeout, CELL_TIMEOUT, None)?;
    live.touch();
    let outcome = live
        .session
        .exec_with(&request.code, limits.wall, limits.wall)
        .await;
    live.touch();
    live.cells
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    inner
        .metrics
        .job("cell", outcome.status, outcome.wall.as_secs_f64());
    let figures: Vec<Value> = outcome
        .figures
        .iter()
        .map(|png| json!({ "mime": "image/png", "data": STANDARD.encode(png) }))
        .collect();
    Ok(Json(json!({
        "session_id": id,
        "status": outcome.status,
        "reason": outcome.reason,
        "text": observation::render(&outcome, limits.wall),
        "output": outcome.output,
        "result": outcome.result,
        "error": outcome.error,
        "figures": figures,
        "session_alive": outcome.session_alive,
        "wall_seconds": outcome.wall.as_secs_f64(),
    })))
}

/// `GET /v1/sessions/{id}/files`: the files in the session's working directory.
pub async fn files(
    State(service): State<Service>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let live = service.inner.sessions.get(&id)?;
    live.touch();
    let tree = live
        .session
        .files_under(None, FILES_BYTES)
        .await
        .map_err(|e| ApiError::internal(format!("reading the session's files: {e}")))?;
    let truncated: Vec<&str> = tree
        .files
        .iter()
        .filter(|f| f.truncated)
        .map(|f| f.path.as_str())
        .collect();
    Ok(Json(json!({
        "session_id": id,
        "files": files::encode(&tree.files),
        "dirs": tree.dirs,
        "truncated": truncated,
    })))
}

/// `DELETE /v1/sessions/{id}`.
pub async fn remove(
    State(service): State<Service>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let live = service.inner.sessions.take(&id).ok_or_else(|| {
        ApiError::not_found(format!("no session `{id}` (closed or expired already)"))
    })?;
    live.session.interrupt();
    close(live).await;
    Ok(Json(json!({ "session_id": id, "deleted": true })))
}

/// `GET /v1/sessions`.
pub async fn list(State(service): State<Service>) -> Json<Value> {
    let sessions = &service.inner.sessions;
    let open = sessions.open.lock().unwrap_or_else(PoisonError::into_inner);
    let seconds = |t: SystemTime| {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    };
    let mut listed: Vec<Value> = open
        .iter()
        .map(|(id, live)| {
            let last = live.last_used_at();
            json!({
                "session_id": id,
                "created": seconds(live.created),
                "last_used": seconds(last),
                "cells": live.cells.load(std::sync::atomic::Ordering::Relaxed),
            })
        })
        .collect();
    let created = |v: &Value| v["created"].as_f64().unwrap_or(0.0);
    listed.sort_by(|a, b| created(a).total_cmp(&created(b)));
    Json(json!({ "sessions": listed, "max": sessions.max }))
}
