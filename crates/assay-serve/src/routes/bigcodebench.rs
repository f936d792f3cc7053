//! `POST /v1/bigcodebench/verify` and `/verify_batch`: an answer to a BigCodeBench task
//! judged as `assay eval` judges it (the official sanitizer, calibration, the per-task time
//! budget from the reference's time here, the verdict with its integrity findings).

use std::convert::Infallible;

use assay_eval::bigcodebench::verifier::Verification;
use assay_models::{default_think_tags, part};
use assay_records::{OfficialStatus, Status};
use assay_tasks::bigcodebench::Task;
use axum::body::{Body, Bytes};
use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::stream::{self, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::admission::Ticket;
use crate::error::ApiError;
use crate::state::{Inner, Service};

/// The prompt style an answer was asked in: recorded, not used in judging (the sanitizer and
/// the tests are the same for both).
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SplitField {
    /// The Complete prompt.
    Complete,
    /// The Instruct prompt.
    Instruct,
}

/// One answer to judge.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyRequest {
    /// The caller's own id, echoed.
    #[serde(default)]
    pub id: Value,
    /// `BigCodeBench/13`.
    pub task_id: String,
    /// Dataset version (default: the service's).
    pub version: Option<String>,
    /// The prompt style (echoed).
    pub split: Option<SplitField>,
    /// A model's raw answer: thinking set apart, then the official sanitizer.
    pub answer: Option<String>,
    /// Text continuing the Complete prompt (the official samples' `completion`).
    pub completion: Option<String>,
    /// A whole program, judged as given (the official samples' `solution`).
    pub solution: Option<String>,
    /// Behind the official calibration prefix (default: the service's, normally true).
    pub calibrated: Option<bool>,
}

/// A batch of answers.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    /// The answers, each with its `id`.
    pub requests: Vec<Value>,
}

/// The program an answer submits, and why it is empty when the model gave nothing to run.
pub(crate) async fn solution_of(
    inner: &Inner,
    task: &Task,
    request: &VerifyRequest,
) -> Result<(String, Option<String>), ApiError> {
    match (&request.answer, &request.completion, &request.solution) {
        (Some(answer), None, None) => sanitized(inner, &task.entry_point, answer).await,
        (None, Some(completion), None) => {
            Ok((format!("{}{completion}", task.complete_prompt), None))
        }
        (None, None, Some(solution)) => Ok((solution.clone(), None)),
        _ => Err(ApiError::bad(
            "give exactly one of `answer` (a raw model answer), `completion` or `solution`",
        )),
    }
}

/// A raw answer's code: its thinking set apart, then the official sanitizer, as
/// `assay generate` does.
pub(crate) async fn sanitized(
    inner: &Inner,
    entry_point: &str,
    answer: &str,
) -> Result<(String, Option<String>), ApiError> {
    let parted = part(answer, &default_think_tags());
    if parted.thinking.as_ref().is_some_and(|t| t.cut) {
        let note = "the answer ended inside its thinking, so it has no code".to_string();
        return Ok((String::new(), Some(note)));
    }
    let code = inner
        .sanitizers
        .sanitize(parted.answer, entry_point.to_string())
        .await?;
    Ok((code, None))
}

/// Judges `request`, holding `ticket` (its place in the queue) while it runs.
async fn judge(inner: &Inner, request: VerifyRequest, ticket: Ticket) -> Result<Value, ApiError> {
    let version = request
        .version
        .clone()
        .unwrap_or_else(|| inner.settings.default_dataset.clone());
    let task = inner
        .verifier
        .task(&version, &request.task_id)
        .await
        .map_err(|e| ApiError::not_found(e.to_string()))?;
    let (solution, note) = solution_of(inner, &task, &request).await?;
    let calibrated = request.calibrated.unwrap_or(inner.settings.calibrated);
    let verification = inner
        .verify(ticket, &version, &task, &solution, calibrated, note)
        .await?;
    Ok(result_json(
        request,
        &version,
        &solution,
        calibrated,
        verification,
    ))
}

/// A verdict as the API gives it: the record `results.jsonl` keeps (docs/run-directory.md),
/// without its index, with what the request said and the budgets it ran under.
fn result_json(
    request: VerifyRequest,
    version: &str,
    solution: &str,
    calibrated: bool,
    verification: Verification,
) -> Value {
    let Verification {
        record,
        time_limit,
        reference,
    } = verification;
    let official_status = record.official.as_ref().map(|o| o.status);
    let mut value = serde_json::to_value(&record).expect("records serialize");
    let fields = value.as_object_mut().expect("a record is an object");
    fields.remove("index");
    let mut result = json!({
        "id": request.id,
        "version": version,
        "split": request.split,
        "calibrated": calibrated,
        "official_status": official_status,
        "reward": reward(record.status, official_status),
        "solution": solution,
        "time_limit_seconds": time_limit.as_secs_f64(),
        "reference": reference.map(|r| json!({"status": r.status, "seconds": r.seconds})),
        // A record leaves out what is empty; an API answer always has its fields.
        "integrity": [],
        "infra": null,
    });
    result
        .as_object_mut()
        .expect("an object")
        .extend(std::mem::take(fields));
    result
}

/// 1 for a pass, 0 for an answer's failure, none when the harness, not the answer, decided
/// (`infra`): such a result is no measurement.
fn reward(status: Status, official: Option<OfficialStatus>) -> Option<f64> {
    match (status, official) {
        (Status::Infra, _) | (_, None) => None,
        (Status::Pass, _) => Some(1.0),
        _ => Some(0.0),
    }
}

/// `POST /v1/bigcodebench/verify`.
pub async fn verify(
    State(service): State<Service>,
    body: Result<Json<VerifyRequest>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(request) = body?;
    let ticket = service.inner.admission.try_admit()?;
    Ok(Json(judge(&service.inner, request, ticket).await?))
}

/// `POST /v1/bigcodebench/verify_batch`: every answer judged, each result a line of NDJSON
/// as soon as it is in (order of completion, each with its `id`). An answer that cannot be
/// judged gives `{"id", "error"}` in its place. The answers start longest first (by their
/// tasks' reference times), at most as many at once as the engine runs. The batch takes one
/// place in the queue to be admitted; its answers then wait for places as they free. A
/// client that goes away stops the batch: its running jobs are killed.
pub async fn verify_batch(
    State(service): State<Service>,
    body: Result<Json<BatchRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(batch) = body?;
    let first = service.inner.admission.try_admit()?;
    let window = service.inner.engine.max_running();
    // Longest first, as an evaluation orders its samples: the slowest tasks start while the
    // rest run, rather than end the batch alone. Results come in order of completion anyway.
    let mut expected = Vec::with_capacity(batch.requests.len());
    for item in &batch.requests {
        let version = item["version"]
            .as_str()
            .unwrap_or(&service.inner.settings.default_dataset);
        let task_id = item["task_id"].as_str().unwrap_or("");
        expected.push(
            service
                .inner
                .verifier
                .expected_seconds(version, task_id)
                .await,
        );
    }
    let mut order: Vec<usize> = (0..batch.requests.len()).collect();
    order.sort_by(|&a, &b| expected[b].total_cmp(&expected[a]));
    let mut requests: Vec<Option<Value>> = batch.requests.into_iter().map(Some).collect();
    let mut first = Some(first);
    let items: Vec<(Value, Option<Ticket>)> = order
        .into_iter()
        .filter_map(|i| requests[i].take())
        .map(|item| (item, first.take()))
        .collect();
    let lines = stream::iter(items)
        .map(move |(item, ticket)| {
            let service = service.clone();
            async move {
                let id = item.get("id").cloned().unwrap_or(Value::Null);
                let result = match serde_json::from_value::<VerifyRequest>(item) {
                    Err(e) => Err(ApiError::bad(e.to_string())),
                    Ok(request) => {
                        let ticket = match ticket {
                            Some(ticket) => ticket,
                            None => service.inner.admission.admit().await,
                        };
                        judge(&service.inner, request, ticket).await
                    }
                };
                let value = match result {
                    Ok(value) => value,
                    Err(e) => json!({ "id": id, "error": e.message() }),
                };
                let mut line = serde_json::to_vec(&value).expect("JSON values serialize");
                line.push(b'\n');
                Ok::<_, Infallible>(Bytes::from(line))
            }
        })
        .buffer_unordered(window);
    Ok((
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(lines),
    )
        .into_response())
}
