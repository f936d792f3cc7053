//! NeMo Gym's BigCodeBench resources server: `POST /verify` with its request and response,
//! and the session routes Gym calls around it, so that a Gym or NeMo Evaluator config points
//! at assay by its host and port alone.
//!
//! What differs from NeMo's server (docs/serve.md): a task assay has (the same id and the same
//! test) is judged as `assay eval` judges it, in the official environment, under the time
//! budget from its reference's time here, not a flat 20 s; another runs its given test as a
//! unittest job under the official 240 s. The code is found by the official sanitizer unless
//! NeMo's rules are asked for. A harness failure is never a reward: it comes with
//! `mask_sample: true` and a `failure_kind` (Gym 0.7.0's fields).

use assay_records::{Official, OfficialStatus, Status};
use assay_sandbox::UnittestJob;
use assay_tasks::bigcodebench::VERSIONS;
use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::Json;
use serde_json::{json, Map, Value};
use std::time::Duration;

use super::gym_extract::{nemo, Extraction};
use crate::error::ApiError;
use crate::limits::job_limits;
use crate::routes::bigcodebench::sanitized;
use crate::state::{Inner, Service};

/// The official harness's time limit: for tests assay does not have a reference time for.
const OFFICIAL_TIMEOUT: Duration = Duration::from_secs(240);
/// Gym's name for a failure that is no measurement of the answer.
const INFRA_KIND: &str = "assay:infra";

/// `POST /seed_session` and `/close_session`: nothing to keep between calls.
pub async fn no_session() -> Json<Value> {
    Json(json!({}))
}

/// The answer's text as the SDK's `Response.output_text` gives it: the text of every
/// `output_text` part of every `message` item, joined; reasoning items left out. A body with
/// no `output` but an `output_text` (NeMo Evaluator's) gives that.
fn output_text(response: &Value) -> Option<String> {
    match response.get("output").and_then(Value::as_array) {
        Some(items) => Some(
            items
                .iter()
                .filter(|item| item["type"] == "message")
                .filter_map(|item| item["content"].as_array())
                .flatten()
                .filter(|part| part["type"] == "output_text")
                .filter_map(|part| part["text"].as_str())
                .collect(),
        ),
        None => response
            .get("output_text")
            .and_then(Value::as_str)
            .map(str::to_string),
    }
}

fn text_field<'a>(metadata: &'a Value, field: &str) -> Result<&'a str, ApiError> {
    metadata[field].as_str().ok_or_else(|| {
        ApiError::bad(format!(
            "verifier_metadata.{field}: a string is required (NeMo Gym's BigCodeBench rows carry it)"
        ))
    })
}

/// What judging came to, in Gym's terms.
struct Judged {
    status: &'static str,
    details: Value,
    failure: Option<String>,
    /// assay's own verdict, beside Gym's fields.
    assay: Value,
}

/// `POST /verify`.
pub async fn verify(
    State(service): State<Service>,
    body: Result<Json<Value>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(body) = body?;
    let inner = &service.inner;
    let Some(fields) = body.as_object() else {
        return Err(ApiError::bad("the body must be a JSON object"));
    };
    let response = fields
        .get("response")
        .ok_or_else(|| ApiError::bad("response: required (the model's Responses API object)"))?;
    let metadata = fields
        .get("verifier_metadata")
        .ok_or_else(|| ApiError::bad("verifier_metadata: required"))?;
    let test = text_field(metadata, "test")?;
    let entry_point = text_field(metadata, "entry_point")?;
    let code_prompt = metadata["code_prompt"].as_str().unwrap_or("");
    let task_id = metadata["task_id"].as_str();
    let extraction = match metadata.get("extraction") {
        None | Some(Value::Null) => inner.settings.gym_extraction,
        Some(value) => serde_json::from_value(value.clone())
            .map_err(|_| ApiError::bad("verifier_metadata.extraction: `official` or `nemo`"))?,
    };
    let text = output_text(response).unwrap_or_default();
    let mut reply: Map<String, Value> = fields.clone();
    reply.insert("task_id".into(), json!(task_id));
    reply.insert("extracted_model_output".into(), json!(text));
    let (code, judged) = if text.trim().is_empty() {
        (None, None)
    } else {
        let code = match extraction {
            Extraction::Nemo => nemo(&text),
            Extraction::Official => sanitized(inner, entry_point, &text).await?.0,
        };
        if code.trim().is_empty() {
            (Some(code), None)
        } else {
            let known = known_task(inner, task_id, test).await;
            let judged = judge(inner, known, test, code_prompt, &code).await?;
            (Some(code), Some(judged))
        }
    };
    let (status, details, failure, assay) = match (&code, judged) {
        (None, _) => ("empty_output", json!({}), None, Value::Null),
        (Some(_), None) => ("no_code_block", json!({}), None, Value::Null),
        (Some(_), Some(j)) => (j.status, j.details, j.failure, j.assay),
    };
    reply.insert("extracted_model_code".into(), json!(code));
    reply.insert("status".into(), json!(status));
    reply.insert("details".into(), details);
    reply.insert(
        "reward".into(),
        json!(if status == "pass" { 1.0 } else { 0.0 }),
    );
    reply.insert("mask_sample".into(), json!(failure.is_some()));
    reply.insert(
        "failure_kind".into(),
        json!(failure.as_ref().map(|_| INFRA_KIND)),
    );
    reply.insert("failure_reason".into(), json!(failure));
    reply.insert("assay".into(), assay);
    Ok(Json(Value::Object(reply)))
}

/// A task of assay's with this id and exactly this test: the default version first.
async fn known_task(
    inner: &Inner,
    task_id: Option<&str>,
    test: &str,
) -> Option<(String, assay_tasks::bigcodebench::Task)> {
    let verifier = &inner.verifier;
    let task_id = task_id?;
    let default = inner.settings.default_dataset.as_str();
    let versions =
        std::iter::once(default).chain(VERSIONS.iter().copied().filter(|v| *v != default));
    for version in versions {
        if let Ok(task) = verifier.task(version, task_id).await {
            if task.test == test {
                return Some((version.to_string(), task));
            }
        }
    }
    None
}

/// Judges `code`: as `assay eval` does when `known` (a task of assay's, by version), else
/// behind `code_prompt` against `test` under the official limit.
async fn judge(
    inner: &Inner,
    known: Option<(String, assay_tasks::bigcodebench::Task)>,
    test: &str,
    code_prompt: &str,
    code: &str,
) -> Result<Judged, ApiError> {
    if let Some((version, task)) = known {
        let ticket = inner.admission.try_admit()?;
        let verification = inner
            .verify(ticket, &version, &task, code, true, None)
            .await?;
        let record = &verification.record;
        let assay = json!({
            "status": record.status,
            "reason": record.reason,
            "version": version,
            "tests": record.tests,
            "integrity": record.integrity,
            "time_limit_seconds": verification.time_limit.as_secs_f64(),
            "wall_seconds": record.wall_seconds,
        });
        return Ok(gym_terms(
            record.status,
            &record.reason,
            record.official.as_ref(),
            assay,
        ));
    }
    let program = if code_prompt.is_empty() {
        code.to_string()
    } else {
        format!("{code_prompt}\n    pass\n{code}")
    };
    let mut job = UnittestJob::new(program, test);
    job.limits = Some(job_limits(&inner.settings, None, OFFICIAL_TIMEOUT, None)?);
    let outcome = inner.unittest(job).await?;
    let official = assay_eval::bigcodebench::verdict::official(&outcome);
    let assay = json!({
        "status": outcome.status,
        "reason": outcome.reason,
        "tests": outcome.tests,
        "integrity": outcome.integrity,
        "wall_seconds": outcome.usage.wall.as_secs_f64(),
    });
    Ok(gym_terms(
        outcome.status,
        &outcome.reason,
        official.as_ref(),
        assay,
    ))
}

/// A verdict as Gym's server words it: the official status and details; `infra` as an
/// `error` that is the harness's (masked, with its reason).
fn gym_terms(status: Status, reason: &str, official: Option<&Official>, assay: Value) -> Judged {
    match (status, official) {
        (Status::Infra, _) | (_, None) => Judged {
            status: "error",
            details: json!({ "reason": reason }),
            failure: Some(reason.to_string()),
            assay,
        },
        (_, Some(official)) => Judged {
            status: match official.status {
                OfficialStatus::Pass => "pass",
                OfficialStatus::Fail => "fail",
                OfficialStatus::Timeout => "timeout",
            },
            details: official
                .details
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect::<Map<String, Value>>()
                .into(),
            failure: None,
            assay,
        },
    }
}
