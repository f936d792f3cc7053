//! A judge's reply read as upstream's scripts read it: the text between the first ``` and
//! the next, trimmed, parsed as JSON, then the prompt's fields, each agent's scores as
//! Python's `int()` takes them. Two things upstream's reading refuses are read too, and said:
//! a fence with a language tag (```` ```json ````, as GPT-4o and Claude usually write it),
//! and the trailing comma of upstream's own example format. What does not read is said in a
//! sentence and counted in no rate.

use assay_records::{JudgePrompt, JudgeVerdict, PerAgent, ReplyLeniency as Leniency};
use serde_json::Value;

const FENCE: &str = "```";

/// A verdict read from a reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    /// The verdict.
    pub verdict: JudgeVerdict,
    /// What upstream's reading would have refused (none: read as upstream reads it).
    pub lenient: Vec<Leniency>,
}

/// The verdict in `reply`, or why there is none.
pub fn read(reply: &str, prompt: JudgePrompt) -> Result<Read, String> {
    let Some(open) = reply.find(FENCE) else {
        return Err("no ``` block in the reply".into());
    };
    let start = open + FENCE.len();
    let Some(length) = reply[start..].find(FENCE) else {
        return Err("the reply's ``` block is never closed".into());
    };
    let (json, lenient) = block_json(&reply[start..start + length])?;
    Ok(Read {
        verdict: verdict(&json, prompt)?,
        lenient,
    })
}

/// The JSON of a ``` block: as upstream parses it, else without a language tag, else without
/// trailing commas; when none reads, the parser's error on the block without its tag (the
/// tag itself is no news).
fn block_json(block: &str) -> Result<(Value, Vec<Leniency>), String> {
    let not_json = |e: serde_json::Error| format!("the reply's ``` block is not JSON ({e})");
    let mut error = match serde_json::from_str(block.trim()) {
        Ok(json) => return Ok((json, Vec::new())),
        Err(e) => not_json(e),
    };
    let mut lenient = Vec::new();
    let mut text = block;
    if let Some((tag, rest)) = block.split_once('\n') {
        let tag = tag.trim();
        if !tag.is_empty()
            && tag
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_+-".contains(c))
        {
            lenient.push(Leniency::LanguageTag);
            text = rest;
            match serde_json::from_str(text.trim()) {
                Ok(json) => return Ok((json, lenient)),
                Err(e) => error = not_json(e),
            }
        }
    }
    let (uncommaed, removed) = without_trailing_commas(text.trim());
    if removed {
        if let Ok(json) = serde_json::from_str(&uncommaed) {
            lenient.push(Leniency::TrailingComma);
            return Ok((json, lenient));
        }
    }
    Err(error)
}

/// `text` without the commas that stand (outside strings) before a closing `}` or `]`, and
/// whether there were any.
fn without_trailing_commas(text: &str) -> (String, bool) {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped, mut removed) = (false, false, false);
    for (at, c) in text.char_indices() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        if c == ',' {
            let next = text[at + 1..].trim_start().chars().next();
            if matches!(next, Some('}' | ']')) {
                removed = true;
                continue;
            }
        }
        in_string = c == '"';
        out.push(c);
    }
    (out, removed)
}

/// The prompt's fields in `json`.
fn verdict(json: &Value, prompt: JudgePrompt) -> Result<JudgeVerdict, String> {
    let pass = per_agent(json, "Pass", |v| {
        Some(match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    })?;
    let scores = |field: &str| per_agent(json, field, int);
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
        let read_winlose = read(winlose, JudgePrompt::Winlose).unwrap();
        assert!(read_winlose.lenient.is_empty());
        let verdict = read_winlose.verdict;
        assert_eq!(verdict.pass.agent2, "Pass");
        assert_eq!(verdict.decision.unwrap().agent2, 1);
        let scores = "```{\"Pass\": {\"Agent1\": \"Pass\", \"Agent2\": \"Pass\"}, \
                      \"ReasoningQuality\": {\"Agent1\": \"7\", \"Agent2\": 8.9}, \
                      \"CodeQuality\": {\"Agent1\": 6, \"Agent2\": true}}``` trailing";
        let verdict = read(scores, JudgePrompt::Scores).unwrap().verdict;
        assert_eq!(verdict.reasoning_quality.unwrap().agent1, 7);
        assert_eq!(verdict.code_quality.unwrap().agent2, 1);
        for (reply, says) in [
            ("I cannot judge this.", "no ``` block"),
            ("```\n{\"Pass\": 1}", "never closed"),
            ("```json\n{\"Pass\": {}}\n```", "no Pass.Agent1"),
            ("```\n{\"Pass\": {\"Agent1\": }}\n```", "not JSON"),
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

    #[test]
    fn a_language_tag_and_trailing_commas_are_read_and_said() {
        let body = "{\"Pass\": {\"Agent1\": \"Pass\", \"Agent2\": \"Failed\",},\n \
                    \"Decision\": {\"Agent1\": 1, \"Agent2\": 0,},}";
        let fenced = format!("Here is my verdict.\n```json\n{body}\n```\nDone.");
        let read_it = read(&fenced, JudgePrompt::Winlose).unwrap();
        assert_eq!(
            read_it.lenient,
            [Leniency::LanguageTag, Leniency::TrailingComma]
        );
        assert_eq!(read_it.verdict.decision.unwrap().agent1, 1);
        // A comma inside a string is the string's.
        let (text, removed) = without_trailing_commas("{\"a\": \"x, }\\\", ]\",}");
        assert_eq!((text.as_str(), removed), ("{\"a\": \"x, }\\\", ]\"}", true));
        let tagged = "```json\n{\"Pass\": {\"Agent1\": \"Pass\", \"Agent2\": \"Pass\"}, \
                      \"Decision\": {\"Agent1\": 1, \"Agent2\": 1}}\n```";
        assert_eq!(
            read(tagged, JudgePrompt::Winlose).unwrap().lenient,
            [Leniency::LanguageTag]
        );
    }
}
