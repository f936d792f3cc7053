//! A run's figures as metrics: those `assay report` shows (pass@k with its 95% interval, per
//! domain or category, per library, samples per status, tokens, time) and those only its
//! `summary.json` keeps (cost, pass@k with `infra` counted as failing, PyBench's two ways of
//! checking and its LLM judges). The names are in `docs/export.md`.

use std::collections::BTreeMap;

use assay_records::Kind;
use assay_report::RunFigures;
use serde_json::Value;

use super::{is_pybench, name_part};

/// The metrics of a run whose figures are `figures` and whose `summary.json` is `summary`
/// (`Null` before it has one).
pub fn of(figures: &RunFigures, summary: &Value, kind: Kind) -> BTreeMap<String, f64> {
    let mut m = Metrics::default();
    for (k, estimate) in &figures.pass_at_k {
        m.put(format!("pass_at_{k}"), estimate.value);
        m.put(format!("pass_at_{k}_low"), estimate.low);
        m.put(format!("pass_at_{k}_high"), estimate.high);
    }
    m.count("tasks", figures.tasks);
    m.count("tasks_judged", figures.judged);
    m.count("tasks_set_apart", figures.infra_tasks);
    for (status, n) in &figures.statuses {
        m.put(format!("samples.{}", name_part(status)), *n as f64);
    }
    let group = if is_pybench(kind) {
        "category"
    } else {
        "domain"
    };
    for (prefix, groups) in [(group, &figures.by_group), ("library", &figures.by_library)] {
        for (name, figure) in groups {
            let name = name_part(name);
            m.put(format!("{prefix}.{name}.pass_at_1"), figure.pass_at_1);
            m.count(&format!("{prefix}.{name}.tasks"), figure.tasks);
        }
    }
    if let Some(tokens) = &figures.tokens {
        m.put("tokens.prompt".into(), tokens.prompt_tokens as f64);
        m.put("tokens.completion".into(), tokens.completion_tokens as f64);
        m.put("tokens.reasoning".into(), tokens.reasoning_tokens as f64);
    }
    if let Some(seconds) = figures.wall_seconds {
        m.put("wall_seconds".into(), seconds);
    }
    m.count("cut_while_thinking", figures.cut_while_thinking);
    if !is_pybench(kind) {
        m.count("samples_gamed", figures.gamed.samples);
        m.count("answers_thinking", figures.thinking);
    }
    m.number("cost_usd", &summary["cost_usd"]);
    m.number("reasoning_cost_usd", &summary["reasoning_cost_usd"]);
    if let Some(rates) = summary["pass_at_k_infra_as_fail"].as_object() {
        for (k, value) in rates {
            let k = k.strip_prefix("pass@").unwrap_or(k);
            m.number(&format!("pass_at_{}_infra_as_fail", name_part(k)), value);
        }
    }
    if is_pybench(kind) {
        pybench(&mut m, summary);
    }
    m.0
}

/// PyBench's `summary.json`: both ways of checking, each with the paper's pass rate (over every
/// task), the rate over the judged tasks, its average turns and its categories; and each LLM
/// judge's figures (`assay judge pybench`).
fn pybench(m: &mut Metrics, summary: &Value) {
    for way in ["faithful", "fixed"] {
        let figures = &summary[way];
        for field in ["pass_rate", "pass_rate_judged", "average_turns", "passed"] {
            m.number(&format!("{way}.{field}"), &figures[field]);
        }
        for (category, figure) in figures["categories"].as_object().into_iter().flatten() {
            let category = name_part(category);
            m.number(
                &format!("{way}.category.{category}.pass_rate"),
                &figure["pass_rate"],
            );
        }
    }
    m.number("average_turns_raw", &summary["average_turns_raw"]);
    for judge in summary["judges"].as_array().into_iter().flatten() {
        let settings = &judge["settings"];
        let name = format!(
            "judge.{}.{}",
            name_part(settings["judge"].as_str().unwrap_or("judge")),
            name_part(settings["prompt"].as_str().unwrap_or("prompt"))
        );
        for field in [
            "pass_rate",
            "pass_rate_all",
            "reference_pass_rate",
            "average_turns",
        ] {
            m.number(&format!("{name}.{field}"), &judge[field]);
        }
        for field in ["win", "tie", "lose"] {
            m.number(&format!("{name}.{field}"), &judge["win_tie_lose"][field]);
        }
        m.number(
            &format!("{name}.agreement"),
            &judge["agreement"]["observed"],
        );
        m.number(&format!("{name}.kappa"), &judge["agreement"]["kappa"]);
        m.number(&format!("{name}.cost_usd"), &judge["cost_usd"]);
    }
}

/// Metrics by name; only finite values (a tracker takes no NaN from a figure with nothing to
/// average).
#[derive(Default)]
struct Metrics(BTreeMap<String, f64>);

impl Metrics {
    fn put(&mut self, name: String, value: f64) {
        if value.is_finite() {
            self.0.insert(name, value);
        }
    }

    fn count(&mut self, name: &str, n: usize) {
        self.put(name.to_string(), n as f64);
    }

    /// `value` when it is a number (absent fields are `Null`, and left out).
    fn number(&mut self, name: &str, value: &Value) {
        if let Some(value) = value.as_f64() {
            self.put(name.to_string(), value);
        }
    }
}
