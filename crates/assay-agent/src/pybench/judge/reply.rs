//! A judge's reply read as upstream's scripts read it: the text between the first ``` and
//! the next, trimmed, parsed as JSON (a ```` ```json ```` fence therefore does not read, as
//! upstream's did not), then the prompt's fields, each agent's scores as Python's `int()`
//! takes them. What does not read is said in a sentence and counted in no rate.

use assay_records::{JudgePrompt, JudgeVerdict, PerAgent};
use serde_json::Value;

const FENCE: &str = "```";

/// The verdict in `reply`, or why there is none.
pub fn read(reply: &str, prompt: JudgePrompt) -> Result<JudgeVerdict, String> {
    let Some(open) = reply.find(FENCE) else {
        return Err("no ``` block in the reply".into());
    };
    let start = open + FENCE.len();
    let Some(length) = reply[start..].find(FENCE) else {
        return Err("the reply's ``` block is never closed".into());
    };
    let block = reply[start..start + length].trim();
    let json: Value = serde_json::from_str(block)
        .map_err(|e| format!("the reply's ``` block is not JSON ({e})"))?;
    let pass = per_agent(&json, "Pass", |v| {
        Some(match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    })?;
    let scores = |field: &str| per_agent(&json, field, int);
    Ok(match prompt {
        JudgePrompt::Winlose => JudgeVerdict {
            pass,
            decision: Some(scores("Decision")?),
            reasoning_quality: None,
            code_quality: None,
        },
        JudgePrompt::Scores => JudgeVerdict {
            pass,
            decision: None,
            reasoning_quality: Some(scores("ReasoningQuality")?),
            code_quality: Some(scores("CodeQuality")?),
        },
    })
}

/// `json[field]["Agent1"]` and `["Agent2"]`, each taken by `take`.
fn per_agent<T>(
    json: &Value,
    field: &str,
    take: impl Fn(&Value) -> Option<T>,
) -> Result<PerAgent<T>, String> {
    let agent = |name: &str| {
        let value = json
            .get(field)
            .and_then(|f| f.get(name))
            .ok_or_else(|| format!("the verdict has no {field}.{name}"))?;
        take(value).ok_or_else(|| format!("{field}.{name} is not an integer: {value}"))
    };
    Ok(PerAgent {
        agent1: agent("Agent1")?,
        agent2: agent("Agent2")?,
    })
}

/// What Python's `int()` makes of a JSON value: integers, floats cut toward zero, booleans,
/// and strings of an integer.
fn int(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite())
                .map(|f| f.trunc() as i64)
        }),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_read_as_upstream_reads_them() {
        let winlose = "Agent2 is better.\n```\n{\"Pass\": {\"Agent1\": \"Failed\", \"Agent2\": \
                       \"Pass\"}, \"Decision\": {\"Agent1\": 0, \"Agent2\": 1}}\n```";
        let verdict = read(winlose, JudgePrompt::Winlose).unwrap();
        assert_eq!(verdict.pass.agent2, "Pass");
        assert_eq!(verdict.decision.unwrap().agent2, 1);
        let scores = "```{\"Pass\": {\"Agent1\": \"Pass\", \"Agent2\": \"Pass\"}, \
                      \"ReasoningQuality\": {\"Agent1\": \"7\", \"Agent2\": 8.9}, \
                      \"CodeQuality\": {\"Agent1\": 6, \"Agent2\": true}}``` trailing";
        let verdict = read(scores, JudgePrompt::Scores).unwrap();
        assert_eq!(verdict.reasoning_quality.unwrap().agent1, 7);
        assert_eq!(verdict.code_quality.unwrap().agent2, 1);
        for (reply, says) in [
            ("I cannot judge this.", "no ``` block"),
            ("```\n{\"Pass\": 1}", "never closed"),
            ("```json\n{\"Pass\": {}}\n```", "not JSON"),
            (
                "```\n{\"Pass\": {\"Agent1\": \"Pass\", \"Agent2\": \"Pass\"}}\n```",
                "no Decision.Agent1",
            ),
            (
                "```\n{\"Pass\": {\"Agent1\": \"Pass\", \"Agent2\": \"Pass\"}, \"Decision\": \
                 {\"Agent1\": \"score1\", \"Agent2\": 1}}\n```",
                "Decision.Agent1 is not an integer",
            ),
        ] {
            let err = read(reply, JudgePrompt::Winlose).unwrap_err();
            assert!(err.contains(says), "{reply}: {err}");
        }
    }
}
