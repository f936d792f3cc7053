//! `POST /v1/unittest`: code and its `unittest` tests, for datasets of one's own, with
//! BigCodeBench's semantics and statuses (one module, the official process guards, every
//! test's result, the integrity checks).

use std::collections::BTreeMap;
use std::time::Duration;

use assay_eval::bigcodebench::verdict::official;
use assay_records::RECORD_OUTPUT_BYTES;
use assay_sandbox::UnittestJob;
use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::files;
use crate::limits::job_limits;
use crate::state::Service;

/// The official harness's time limit: what a job gets unless it asks less.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(240);

/// A unittest job.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnittestRequest {
    /// The caller's own id, echoed.
    #[serde(default)]
    id: Value,
    /// The code under test.
    code: String,
    /// Its tests: a module defining the `unittest.TestCase` subclass `test_class`.
    test: String,
    /// Default `TestCases`.
    test_class: Option<String>,
    /// Files placed in the working directory first: path → base64.
    #[serde(default)]
    files: BTreeMap<String, String>,
    /// Seconds (default 240, at most the service's maximum).
    timeout: Option<f64>,
    /// MiB (default and at most the service's maximum).
    memory_mib: Option<u64>,
    /// The official harness's process guards (default true).
    guards: Option<bool>,
}

/// `POST /v1/unittest`.
pub async fn unittest(
    State(service): State<Service>,
    body: Result<Json<UnittestRequest>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(request) = body?;
    let inner = &service.inner;
    let limits = job_limits(
        &inner.settings,
        request.timeout,
        DEFAULT_TIMEOUT,
        request.memory_mib,
    )?;
    let mut job = UnittestJob::new(request.code, request.test);
    if let Some(class) = request.test_class {
        job.test_class = class;
    }
    job.files = files::decode("files", &request.files)?;
    job.guards = request.guards.unwrap_or(true);
    let time_limit = limits.wall;
    job.limits = Some(limits);
    let outcome = inner.unittest(job).await?;
    let official = official(&outcome);
    Ok(Json(json!({
        "id": request.id,
        "status": outcome.status,
        "official_status": official.as_ref().map(|o| o.status),
        "reason": outcome.reason,
        "official": official,
        "tests": outcome.tests,
        "integrity": outcome.integrity,
        "time_limit_seconds": time_limit.as_secs_f64(),
        "wall_seconds": outcome.usage.wall.as_secs_f64(),
        "cpu_seconds": outcome.usage.cpu.map(|d| d.as_secs_f64()),
        "memory_peak_bytes": outcome.usage.memory_peak_bytes,
        "isolation": outcome.isolation,
        "stdout": outcome.stdout.capped(RECORD_OUTPUT_BYTES),
        "stderr": outcome.stderr.capped(RECORD_OUTPUT_BYTES),
    })))
}
