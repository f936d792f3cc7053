//! A run's figures as metrics: those `assay report` shows (pass@k with its 95% interval, per
//! domain or category, per library, samples per status, tokens, time) and those only its
//! `summary.json` keeps (cost, pass@k with `infra` counted as failing, PyBench's two ways of
//! checking and its LLM judges). The names are in `docs/export.md`.

use std::collections::BTreeMap;

use assay_records::{Kind, Status};
use assay_report::RunFigures;
use serde_json::Value;

use super::{is_pybench, name_part};

/// Every status a sample can have: each is logged, 0 when no sample has it, so that a count
/// that went to 0 (a resume that turned `infra` into `pass`) does not keep its old value.
const STATUSES: [Status; 6] = [
    Status::Pass,
    Status::Fail,
    Status::Error,
    Status::Timeout,
    Status::Oom,
    Status::Infra,
];

/// The metrics of a run whose figures are `figures` and whose `summary.json` is `summary`
/// (`Null` before it has one), and a warning for each name two figures would both take.
pub fn of(
    figures: &RunFigures,
    summary: &Value,
    kind: Kind,
) -> (BTreeMap<String, f64>, Vec<String>) {
    let mut m = Metrics::default();
    for (k, estimate) in &figures.pass_at_k {
        m.put(format!("pass_at_{k}"), estimate.value);
        m.put(format!("pass_at_{k}_low"), estimate.low);
        m.put(format!("pass_at_{k}_high"), estimate.high);
    }
    m.count("tasks", figures.tasks);
    m.count("tasks_judged", figures.judged);
    m.count("tasks_set_apart", figures.infra_tasks);
    for status in STATUSES {
        let n = figures.statuses.get(status.as_str()).copied().unwrap_or(0);
        m.put(format!("samples.{status}"), n as f64);
    }
    for (status, n) in &figures.statuses {
        if !STATUSES.iter().any(|s| s.as_str() == status) {
            m.put(format!("samples.{}", name_part(status)), *n as f64);
        }
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
    (m.values, m.warnings)
}

/// PyBench's `summary.json`: both ways of checking, each with the paper's pass rate (over every
/// task), the rate over the judged tasks, its average turns and its categories; and each LLM
/// judge's figures (`assay judge pybench`), each judging named by its judge, its prompt and its
/// settings' key (two judgings with one judge and prompt differ in their other settings).
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
        let key = judge["key"].as_str().unwrap_or("");
        let name = format!(
            "judge.{}.{}.{}",
            name_part(settings["judge"].as_str().unwrap_or("judge")),
            name_part(settings["prompt"].as_str().unwrap_or("prompt")),
            name_part(key.get(..8).unwrap_or(key))
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
/// average). A name two figures would both take keeps the first and says so: two groups whose
/// names differ only where a tracker takes no character, say.
#[derive(Default)]
struct Metrics {
    values: BTreeMap<String, f64>,
    warnings: Vec<String>,
}

impl Metrics {
    fn put(&mut self, name: String, value: f64) {
        if !value.is_finite() {
            return;
        }
        match self.values.entry(name) {
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(value);
            }
            std::collections::btree_map::Entry::Occupied(slot) => {
                self.warnings.push(format!(
                    "two figures are both named metric `{}` ({} and {value}): the first is logged",
                    slot.key(),
                    slot.get()
                ));
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn judging(key: &str, temperature: f64, pass_rate: f64) -> Value {
        serde_json::json!({
            "settings": {"judge": "openai:judge", "prompt": "winlose", "temperature": temperature},
            "key": key,
            "pass_rate": pass_rate,
        })
    }

    #[test]
    fn two_judgings_with_one_judge_and_prompt_keep_their_own_metrics() {
        let summary = serde_json::json!({"judges": [
            judging("94dbc972baff2f5e", 0.0, 0.75),
            judging("0a1b2c3d4e5f6789", 0.8, 0.5),
        ]});
        let mut m = Metrics::default();
        pybench(&mut m, &summary);
        assert_eq!(
            m.values["judge.openai:judge.winlose.94dbc972.pass_rate"],
            0.75
        );
        assert_eq!(
            m.values["judge.openai:judge.winlose.0a1b2c3d.pass_rate"],
            0.5
        );
        assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    }

    #[test]
    fn a_name_taken_twice_keeps_the_first_and_says_so() {
        let mut m = Metrics::default();
        m.put("library.a_b.tasks".into(), 1.0);
        m.put("library.a_b.tasks".into(), 2.0);
        assert_eq!(m.values["library.a_b.tasks"], 1.0);
        assert_eq!(m.warnings.len(), 1);
        assert!(
            m.warnings[0].contains("`library.a_b.tasks` (1 and 2)"),
            "{:?}",
            m.warnings
        );
    }
}
