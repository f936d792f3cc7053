//! The HTTP answers: the app's three static files, and the JSON the app asks for. Reading
//! files and computing figures block, so each request does it on tokio's blocking pool.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::files::{presentation, resolve, Refusal, MAX_SERVED_BYTES};
use crate::run::{task_number, Filter};
use crate::Viewer;

const INDEX: &str = include_str!("../assets/index.html");
const SCRIPT: &str = include_str!("../assets/app.js");
/// The judge's figures and verdicts, apart from the app that draws them.
const JUDGE_SCRIPT: &str = include_str!("../assets/judge.js");
const STYLE: &str = include_str!("../assets/app.css");

pub async fn index() -> Response {
    static_file("text/html; charset=utf-8", INDEX)
}

pub async fn script() -> Response {
    static_file("text/javascript; charset=utf-8", SCRIPT)
}

pub async fn judge_script() -> Response {
    static_file("text/javascript; charset=utf-8", JUDGE_SCRIPT)
}

pub async fn style() -> Response {
    static_file("text/css; charset=utf-8", STYLE)
}

fn static_file(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// An answer the app shows as an error: `{"error": message}` with its status.
pub struct Problem(StatusCode, String);

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        (self.0, Json(json!({"error": self.1}))).into_response()
    }
}

fn problem(status: StatusCode, message: impl Into<String>) -> Problem {
    Problem(status, message.into())
}

/// Runs `work` on the blocking pool; its error is the answer.
async fn blocking<F>(work: F) -> Response
where
    F: FnOnce() -> Result<Response, Problem> + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(response)) => response,
        Ok(Err(problem)) => problem.into_response(),
        Err(e) => problem(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

fn no_run(id: usize) -> Problem {
    problem(StatusCode::NOT_FOUND, format!("no run {id}"))
}

fn failed(e: crate::ViewError) -> Problem {
    problem(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

pub async fn runs(State(viewer): State<Arc<Viewer>>) -> Response {
    blocking(move || {
        // Each run on its own thread: a first read of full runs is parsing-bound.
        let summaries: Vec<_> = std::thread::scope(|scope| {
            let readers: Vec<_> = viewer
                .runs
                .iter()
                .map(|r| scope.spawn(|| r.summary()))
                .collect();
            readers
                .into_iter()
                .map(|reader| reader.join().expect("a run's summary does not panic"))
                .collect()
        });
        Ok(Json(summaries).into_response())
    })
    .await
}

pub async fn samples(
    State(viewer): State<Arc<Viewer>>,
    Path(id): Path<usize>,
    Query(filter): Query<Filter>,
) -> Response {
    blocking(move || {
        let run = viewer.run(id).ok_or_else(|| no_run(id))?;
        let page = run.page(&filter).map_err(failed)?;
        Ok(Json(page).into_response())
    })
    .await
}

pub async fn sample(
    State(viewer): State<Arc<Viewer>>,
    Path((id, index)): Path<(usize, usize)>,
) -> Response {
    blocking(move || {
        let run = viewer.run(id).ok_or_else(|| no_run(id))?;
        match run.detail(index).map_err(failed)? {
            Some(detail) => Ok(Json(detail).into_response()),
            None => Err(problem(
                StatusCode::NOT_FOUND,
                format!("run {id} has no sample {index}"),
            )),
        }
    })
    .await
}

pub async fn file(
    State(viewer): State<Arc<Viewer>>,
    Path((id, path)): Path<(usize, String)>,
) -> Response {
    blocking(move || {
        let run = viewer.run(id).ok_or_else(|| no_run(id))?;
        let root = run
            .root
            .as_ref()
            .ok_or_else(|| problem(StatusCode::NOT_FOUND, "an official file has no files"))?;
        let file = resolve(root, &path).map_err(|refusal| match refusal {
            Refusal::NotServed => problem(StatusCode::NOT_FOUND, format!("{path} is not served")),
            Refusal::TooLarge(bytes) => problem(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "{path} has {bytes} bytes, more than the {MAX_SERVED_BYTES} served; it is at {}",
                    root.join(&path).display()
                ),
            ),
        })?;
        let bytes = std::fs::read(&file)
            .map_err(|e| problem(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        let (content_type, disposition) = presentation(&file);
        let mut response = bytes.into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        headers.insert(
            header::CONTENT_DISPOSITION,
            HeaderValue::from_static(disposition),
        );
        // What a sample wrote never runs as a page of this origin.
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("sandbox; default-src 'none'; img-src 'self'"),
        );
        Ok(response)
    })
    .await
}

/// `?base=<id>&run=<id>`.
#[derive(Deserialize)]
pub struct DiffQuery {
    base: usize,
    run: usize,
}

/// Two runs task by task: the report's comparison (paired difference with its interval,
/// McNemar's test) and every task's outcome in each, with the first sample of it to link to.
pub async fn diff(State(viewer): State<Arc<Viewer>>, Query(q): Query<DiffQuery>) -> Response {
    blocking(move || {
        let base = viewer.run(q.base).ok_or_else(|| no_run(q.base))?;
        let run = viewer.run(q.run).ok_or_else(|| no_run(q.run))?;
        let (base, run) = (
            base.compared().map_err(failed)?,
            run.compared().map_err(failed)?,
        );
        let (base_run, run_run) = (&base.run, &run.run);
        let comparison = assay_report::compare(base_run, run_run);
        let (base_first, run_first) = (&base.first_samples, &run.first_samples);
        let ids: BTreeSet<&String> = base_run.tasks.keys().chain(run_run.tasks.keys()).collect();
        let mut tasks: Vec<Value> = ids
            .into_iter()
            .map(|id| {
                let (b, r) = (base_run.tasks.get(id), run_run.tasks.get(id));
                let change = match (b.filter(|t| t.samples > 0), r.filter(|t| t.samples > 0)) {
                    (Some(b), Some(r)) => match (b.passes(), r.passes()) {
                        (false, true) => "won",
                        (true, false) => "lost",
                        (true, true) => "both pass",
                        (false, false) => "both fail",
                    },
                    (Some(_), None) => "only in base",
                    (None, Some(_)) => "only in run",
                    (None, None) => "set apart",
                };
                json!({
                    "task_id": id,
                    "base": b,
                    "run": r,
                    "change": change,
                    "base_index": base_first.get(id.as_str()),
                    "run_index": run_first.get(id.as_str()),
                })
            })
            .collect();
        tasks.sort_by_key(|t| t["task_id"].as_str().map_or(u64::MAX, task_number));
        Ok(Json(json!({
            "base": base.figures,
            "run": run.figures,
            "comparison": comparison,
            "tasks": tasks,
        }))
        .into_response())
    })
    .await
}
