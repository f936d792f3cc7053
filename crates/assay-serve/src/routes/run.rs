//! `POST /v1/run`: a script, its stdin and files in; its output, exit status and files out
//! (SandboxFusion's `run_code`, in assay's terms).

use std::collections::BTreeMap;
use std::time::Duration;

use assay_sandbox::{OutputFile, ScriptJob, ScriptOutcome};
use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::files;
use crate::limits::job_limits;
use crate::state::{Inner, Service};

/// A script's time limit unless it asks another (SandboxFusion's `run_timeout` default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// A script to run.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// The caller's own id, echoed.
    #[serde(default)]
    id: Value,
    /// The script, run as `__main__` (`main.py`).
    code: String,
    /// Its standard input.
    stdin: Option<String>,
    /// Files placed in the working directory first: path → base64.
    #[serde(default)]
    files: BTreeMap<String, String>,
    /// Files to read back (default: every file left in the working directory).
    fetch_files: Option<Vec<String>>,
    /// `sys.argv[1:]`.
    #[serde(default)]
    argv: Vec<String>,
    /// Seconds (default 10, at most the service's maximum).
    timeout: Option<f64>,
    /// MiB (default and at most the service's maximum).
    memory_mib: Option<u64>,
}

/// A script job: `code` with `stdin`, `files` (decoded already) and its limits.
pub(crate) fn script_job(
    inner: &Inner,
    code: String,
    stdin: Option<String>,
    files: Vec<assay_sandbox::InputFile>,
    timeout: Option<f64>,
    memory_mib: Option<u64>,
) -> Result<ScriptJob, ApiError> {
    let mut job = ScriptJob::new(code);
    job.stdin = stdin;
    job.files = files;
    job.limits = Some(job_limits(
        &inner.settings,
        timeout,
        DEFAULT_TIMEOUT,
        memory_mib,
    )?);
    Ok(job)
}

/// The files of `outcome` that `wanted` names (all of them when it names none).
pub(crate) fn fetched<'a>(
    outcome: &'a ScriptOutcome,
    wanted: Option<&'a [String]>,
) -> impl Iterator<Item = &'a OutputFile> {
    outcome.files.iter().filter(move |f| {
        wanted.is_none_or(|paths| paths.iter().any(|p| p.trim_start_matches("./") == f.path))
    })
}

/// `POST /v1/run`.
pub async fn run(
    State(service): State<Service>,
    body: Result<Json<RunRequest>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(request) = body?;
    let inner = &service.inner;
    let files = files::decode("files", &request.files)?;
    let mut job = script_job(
        inner,
        request.code,
        request.stdin,
        files,
        request.timeout,
        request.memory_mib,
    )?;
    job.argv = request.argv;
    let time_limit = job.limits.as_ref().map(|l| l.wall.as_secs_f64());
    let outcome = inner.script(job, "run").await?;
    let files = files::encode(fetched(&outcome, request.fetch_files.as_deref()));
    Ok(Json(json!({
        "id": request.id,
        "status": outcome.status,
        "reason": outcome.reason,
        "exit_code": outcome.exit_code,
        "error": outcome.error,
        "stdout": outcome.stdout,
        "stderr": outcome.stderr,
        "time_limit_seconds": time_limit,
        "wall_seconds": outcome.usage.wall.as_secs_f64(),
        "cpu_seconds": outcome.usage.cpu.map(|d| d.as_secs_f64()),
        "memory_peak_bytes": outcome.usage.memory_peak_bytes,
        "isolation": outcome.isolation,
        "files": files,
    })))
}
