//! `POST /aggregate_metrics`: what NeMo Gym asks a resources server for once a collection's
//! rollouts are verified, `{"verify_responses": [...]}` → `{group_level_metrics,
//! agent_metrics, key_metrics}`, in Gym's shape with assay's arithmetic: a task's samples
//! grouped by Gym's task index (else the task id), a sample correct when its reward is above
//! 0, pass@k the unbiased estimator over the fewest samples any task has, majority@k the
//! correctness of each task's most frequent extracted code. Masked samples (the harness's
//! failures) are no measurement and are left out, counted apart.

use std::collections::BTreeMap;

use axum::extract::rejection::JsonRejection;
use axum::Json;
use serde_json::{json, Map, Value};

use crate::error::ApiError;

/// One task's verified samples.
#[derive(Default)]
struct Group {
    samples: u64,
    passed: u64,
    /// Extracted code → (votes, whether it was correct).
    answers: BTreeMap<String, (u64, bool)>,
}

impl Group {
    /// Whether the code most samples gave (the first in order on ties) was correct.
    fn majority(&self) -> bool {
        let mut best: Option<(u64, bool)> = None;
        for &(votes, correct) in self.answers.values() {
            if best.is_none_or(|(most, _)| votes > most) {
                best = Some((votes, correct));
            }
        }
        best.is_some_and(|(_, correct)| correct)
    }
}

/// `POST /aggregate_metrics`.
pub async fn aggregate_metrics(
    body: Result<Json<Value>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(body) = body?;
    let responses = body["verify_responses"]
        .as_array()
        .ok_or_else(|| ApiError::bad("verify_responses: a list of /verify answers is required"))?;
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    let (mut masked, mut input_tokens, mut output_tokens) = (0u64, 0.0, 0.0);
    for response in responses {
        if response["mask_sample"] == true {
            masked += 1;
            continue;
        }
        let key = match (&response["_ng_task_index"], &response["task_id"]) {
            (Value::Number(index), _) => index.to_string(),
            (_, Value::String(id)) => id.clone(),
            _ => "(no task)".to_string(),
        };
        let correct = response["reward"].as_f64().unwrap_or(0.0) > 0.0;
        let group = groups.entry(key).or_default();
        group.samples += 1;
        group.passed += u64::from(correct);
        let code = response["extracted_model_code"].as_str().unwrap_or("");
        let entry = group
            .answers
            .entry(code.to_string())
            .or_insert((0, correct));
        entry.0 += 1;
        let usage = &response["response"]["usage"];
        input_tokens += usage["input_tokens"].as_f64().unwrap_or(0.0);
        output_tokens += usage["output_tokens"].as_f64().unwrap_or(0.0);
    }
    let measured: u64 = groups.values().map(|g| g.samples).sum();
    let k = groups.values().map(|g| g.samples).min().unwrap_or(0);
    let mut key_metrics = Map::new();
    let mut group_level = Vec::new();
    if k > 0 {
        let tasks = groups.len() as f64;
        let mean = |f: &dyn Fn(&Group) -> f64| groups.values().map(f).sum::<f64>() / tasks;
        key_metrics.insert(
            format!("pass@1[avg-of-{k}]"),
            json!(mean(&|g| g.passed as f64 / g.samples as f64)),
        );
        key_metrics.insert(
            format!("pass@{k}"),
            json!(mean(&|g| assay_score::pass_at_k(g.samples, g.passed, k))),
        );
        key_metrics.insert(
            format!("majority@{k}"),
            json!(mean(&|g| f64::from(u8::from(g.majority())))),
        );
        key_metrics.insert(
            "mean/input_tokens".into(),
            json!(input_tokens / measured as f64),
        );
        key_metrics.insert(
            "mean/output_tokens".into(),
            json!(output_tokens / measured as f64),
        );
        for (task, group) in &groups {
            group_level.push(json!({
                "task": task,
                "samples": group.samples,
                "passed": group.passed,
                "pass@1": group.passed as f64 / group.samples as f64,
                format!("pass@{k}"): assay_score::pass_at_k(group.samples, group.passed, k),
                format!("majority@{k}"): group.majority(),
            }));
        }
    }
    let mut agent_metrics = key_metrics.clone();
    agent_metrics.insert("samples".into(), json!(measured));
    agent_metrics.insert("tasks".into(), json!(groups.len()));
    agent_metrics.insert("masked_samples".into(), json!(masked));
    Ok(Json(json!({
        "group_level_metrics": group_level,
        "agent_metrics": agent_metrics,
        "key_metrics": key_metrics,
    })))
}

/// `GET /reverify_mode`: BigCodeBench's server sets none.
pub async fn reverify_mode() -> Json<&'static str> {
    Json("unknown")
}
