//! What the LLM judge said of one PyBench episode (`assay judge pybench`): for each judging the
//! run's `summary.json` keeps, the request of each order it asked, as `judgements.jsonl` has
//! it (the verdict read, or why it could not be read, or why the request failed; the reply and
//! what the judge thought), and where this task stands in the judging's figures (the judge and
//! the checks disagreeing on it, its preference changing with the order).
//!
//! A record is found by the keys the judging's figures read for the task (`answers`), the
//! last line of a key winning (a rerun appends what it asks again). The request itself (both
//! trajectories in full) is left out: the episode page shows the run's side already.

use assay_records::{JudgeFigures, JudgeOrder, JudgementRecord};
use serde_json::{json, Value};

/// The judge's verdicts on `task_id`, one entry per judging in `judges`.
pub fn verdicts(judges: &[JudgeFigures], records: &[JudgementRecord], task_id: &str) -> Value {
    let judgings: Vec<Value> = judges
        .iter()
        .map(|f| {
            let settings = &f.settings;
            // The last line of a request wins: a rerun appends what it asks again.
            let last = |key: &str| records.iter().rev().find(|r| r.key == key);
            let keys = f.answers.get(task_id);
            let paper = keys.and_then(|k| last(&k.paper));
            let mut orders = vec![order(JudgeOrder::Paper, paper, false)];
            if f.both_orders {
                // Identical trajectories in both orders are one request, asked once.
                let swapped = keys.and_then(|k| k.swapped.as_deref());
                let same = keys.is_some_and(|k| Some(k.paper.as_str()) == swapped);
                let record = if same { None } else { swapped.and_then(last) };
                orders.push(order(JudgeOrder::Swapped, record, same));
            }
            let agreement = &f.agreement;
            let listed = |tasks: &[String]| tasks.iter().any(|t| t == task_id);
            let disagreement = if listed(&agreement.judge_only_tasks) {
                Some("judge_only")
            } else if listed(&agreement.checks_only_tasks) {
                Some("checks_only")
            } else {
                None
            };
            let position = f.position.as_ref();
            json!({
                "judge": settings.judge,
                "prompt": settings.prompt,
                "reference": settings.reference,
                "checks": agreement.checks,
                "disagreement": disagreement,
                "changed": position.is_some_and(|p| listed(&p.changed_tasks)),
                "pass_changed": position.is_some_and(|p| listed(&p.pass_changed_tasks)),
                "orders": orders,
            })
        })
        .collect();
    Value::Array(judgings)
}

/// One order of a judging: its record without the request, or that it was the paper's
/// request again.
fn order(order: JudgeOrder, record: Option<&JudgementRecord>, same_as_paper: bool) -> Value {
    let record = record.map(|r| {
        let mut shown = serde_json::to_value(r).expect("a record serializes");
        if let Some(fields) = shown.as_object_mut() {
            fields.remove("request");
        }
        shown
    });
    json!({"order": order, "record": record, "same_as_paper": same_as_paper})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(task: &str, key: &str, order: &str, reply: &str, extra: Value) -> JudgementRecord {
        let mut line = json!({
            "task_id": task, "key": key, "judge": "openai:j", "prompt": "winlose", "order": order,
            "request": {"system": "s", "user": "both trajectories"}, "reply": reply,
            "finish_reason": "stop", "usage": {"prompt_tokens": 10, "completion_tokens": 2},
            "latency_seconds": 0.5, "attempts": 1,
        });
        for (key, value) in extra.as_object().unwrap() {
            line[key] = value.clone();
        }
        serde_json::from_value(line).unwrap()
    }

    /// A judging of `prompt` that read `answers` (task, paper key, swapped key).
    fn judging(prompt: &str, both_orders: bool, answers: Value) -> JudgeFigures {
        let mut f = serde_json::from_value::<JudgeFigures>(json!({
            "settings": {"judge": "openai:j", "prompt": prompt, "reference": "r",
                         "reference_digest": "d", "temperature": 0.2, "max_tokens": 1000},
            "key": "k", "episodes_digest": "e", "both_orders": both_orders, "tasks": 2, "read": 2,
            "unreadable": {}, "failed": {}, "passed": 1, "pass_rate": 0.5, "pass_rate_all": 0.5,
            "categories": {}, "reference_pass_rate": 0.5,
            "win_tie_lose": {"win": 1, "tie": 0, "lose": 1, "by": "decision"},
            "average_turns": 5.0, "average_turns_checks": 5.0,
            "agreement": {"checks": "faithful", "tasks": 2, "both_pass": 0, "judge_only": 1,
                          "checks_only": 0, "both_fail": 1, "observed": 0.5,
                          "judge_only_tasks": ["PyBench/3"], "checks_only_tasks": []},
            "requests": 3, "tokens": {"prompt_tokens": 30, "completion_tokens": 6},
            "answers": answers,
        }))
        .unwrap();
        if both_orders {
            f.position = Some(
                serde_json::from_value(json!({
                    "pairs": 2, "consistent": 1, "follows_first": 0, "follows_second": 1,
                    "other": 0, "rate": 0.5, "changed_tasks": ["PyBench/3"], "pass_same": 2,
                    "pass_only_second": 0, "pass_only_first": 0, "pass_changed_tasks": [],
                }))
                .unwrap(),
            );
        }
        f
    }

    #[test]
    fn each_judging_shows_the_last_line_of_each_request_it_read_for_the_task() {
        let verdict = json!({"verdict": {"pass": {"agent1": "Failed", "agent2": "Pass"},
                                         "decision": {"agent1": 0, "agent2": 1}}});
        let records = [
            record(
                "PyBench/3",
                "a",
                "paper",
                "first",
                json!({"error": "HTTP 500"}),
            ),
            record("PyBench/3", "a", "paper", "again", verdict.clone()),
            record(
                "PyBench/3",
                "b",
                "swapped",
                "<script>x</script>",
                json!({"unreadable": "no ``` block in the reply"}),
            ),
            record("PyBench/30", "c", "paper", "another task", verdict.clone()),
            record(
                "PyBench/3",
                "d",
                "paper",
                "scored",
                json!({"thinking": "hm"}),
            ),
            record("PyBench/3", "e", "paper", "another judging's", json!({})),
            record("PyBench/4", "f", "paper", "the same both ways", verdict),
        ];
        let winlose = json!({"PyBench/3": {"paper": "a", "swapped": "b"},
                             "PyBench/4": {"paper": "f", "swapped": "f"}});
        let judges = [
            judging("winlose", true, winlose),
            judging("scores", false, json!({"PyBench/3": {"paper": "d"}})),
        ];
        let shown = verdicts(&judges, &records, "PyBench/3");
        let [winlose, scores] = shown.as_array().unwrap().as_slice() else {
            panic!("{shown}");
        };
        assert_eq!(winlose["disagreement"], "judge_only");
        assert_eq!(winlose["changed"], true);
        assert_eq!(winlose["pass_changed"], false);
        let paper = &winlose["orders"][0];
        assert_eq!(paper["order"], "paper");
        assert_eq!(paper["record"]["reply"], "again", "the last record wins");
        assert_eq!(paper["record"]["verdict"]["pass"]["agent2"], "Pass");
        assert!(paper["record"].get("request").is_none());
        let swapped = &winlose["orders"][1];
        assert_eq!(swapped["record"]["reply"], "<script>x</script>");
        assert_eq!(swapped["record"]["unreadable"], "no ``` block in the reply");
        assert_eq!(swapped["same_as_paper"], false);
        assert_eq!(scores["orders"].as_array().unwrap().len(), 1);
        assert_eq!(scores["orders"][0]["record"]["thinking"], "hm");
        assert_eq!(scores["changed"], false);

        // Identical trajectories: one request, recorded in the paper's order.
        let same = verdicts(&judges, &records, "PyBench/4");
        assert_eq!(same[0]["orders"][1]["record"], Value::Null);
        assert_eq!(same[0]["orders"][1]["same_as_paper"], true);
        assert_eq!(same[0]["disagreement"], Value::Null);
        // A task the judge was not asked about.
        let none = verdicts(&judges, &records, "PyBench/9");
        assert_eq!(none[0]["orders"][0]["record"], Value::Null);
        assert_eq!(none[0]["orders"][1]["same_as_paper"], false);
        // Records no judging in the summary read are not shown.
        assert_eq!(verdicts(&[], &records, "PyBench/3"), json!([]));
    }
}
