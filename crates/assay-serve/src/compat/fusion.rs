//! SandboxFusion's `POST /run_code`, so that verl's reward path, tinker-cookbook and the
//! `sandbox-fusion` client work with only their endpoint changed. Python only: the one
//! language assay's sandbox runs. What differs from SandboxFusion (docs/serve.md): the
//! script runs in assay's sandbox (namespaces, Landlock, seccomp, cgroups) whatever the
//! request asks; `memory_limit_MB` is always applied (-1 or absent: the service's maximum);
//! `run_timeout` is held to the service's maximum; `compile_timeout` has nothing to limit.

use std::collections::BTreeMap;

use assay_records::Status;
use assay_sandbox::ScriptOutcome;
use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::files;
use crate::routes::run::{fetched, script_job};
use crate::state::Service;

/// SandboxFusion's `RunCodeRequest`; fields it has that assay does not use are tolerated.
#[derive(Debug, Deserialize)]
pub struct RunCodeRequest {
    code: String,
    #[serde(default = "python")]
    language: String,
    run_timeout: Option<f64>,
    #[serde(rename = "memory_limit_MB")]
    memory_limit_mb: Option<i64>,
    stdin: Option<String>,
    /// Path → base64 (a null is no file, as the client's model allows).
    #[serde(default)]
    files: BTreeMap<String, Option<String>>,
    #[serde(default)]
    fetch_files: Vec<String>,
}

fn python() -> String {
    "python".into()
}

/// `POST /run_code`.
pub async fn run_code(
    State(service): State<Service>,
    body: Result<Json<RunCodeRequest>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(request) = body?;
    if request.language != "python" {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "language: assay runs `python` only, not `{}`",
                request.language
            ),
        ));
    }
    let given: BTreeMap<String, String> = request
        .files
        .into_iter()
        .filter_map(|(path, data)| Some((path, data?)))
        .collect();
    let inputs = files::decode("files", &given)?;
    let memory_mib = match request.memory_limit_mb {
        Some(mib) if mib > 0 => Some(mib as u64),
        _ => None,
    };
    let inner = &service.inner;
    let job = script_job(
        inner,
        request.code,
        request.stdin,
        inputs,
        request.run_timeout,
        memory_mib,
    )?;
    let outcome = inner.script(job, "run_code").await?;
    let files = files::encode(fetched(&outcome, Some(&request.fetch_files)));
    Ok(Json(response(&outcome, files)))
}

/// The outcome in SandboxFusion's terms: `Success` only for a run that ended with code 0;
/// `SandboxError` only for the harness's own failures, never for the code's.
fn response(outcome: &ScriptOutcome, files: BTreeMap<String, String>) -> Value {
    if outcome.status == Status::Infra {
        return json!({
            "status": "SandboxError",
            "message": outcome.reason,
            "compile_result": null,
            "run_result": null,
            "executor_pod_name": null,
            "files": {},
        });
    }
    let run_status = match outcome.status {
        Status::Timeout => "TimeLimitExceeded",
        _ => "Finished",
    };
    let success = outcome.status == Status::Pass && outcome.exit_code == Some(0);
    json!({
        "status": if success { "Success" } else { "Failed" },
        "message": if success { "" } else { outcome.reason.as_str() },
        "compile_result": null,
        "run_result": {
            "status": run_status,
            "execution_time": outcome.usage.wall.as_secs_f64(),
            "return_code": outcome.exit_code,
            "stdout": outcome.stdout.text,
            "stderr": outcome.stderr.text,
        },
        "executor_pod_name": null,
        "files": files,
    })
}
