//! The Anthropic Messages wire format.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::request::{Conversation, Request, ToolCall, Turn};
use crate::response::{beside, decode, Generation};
use assay_records::TokenUsage;

/// The API version header value; fixes the request and response shapes below.
pub(crate) const API_VERSION: &str = "2023-06-01";

/// The body for `POST {base}/v1/messages`, for one sample (the API has no `n`).
///
/// `top_p` is only sent when asked for: recent Claude models reject `temperature` and `top_p`
/// together. With extended thinking (`budget`), the rules that come with it: `max_tokens`
/// must exceed the budget (the answer's limit is added to it, so thinking never eats the
/// answer's room), the temperature is not sent (only its default is allowed), nor a `top_p`
/// below 0.95.
pub(crate) fn message_body(
    model: &str,
    chat: &Conversation,
    request: &Request,
    budget: Option<u32>,
) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    let limit = budget.map_or(request.max_tokens, |b| b.saturating_add(request.max_tokens));
    body.insert("max_tokens".into(), json!(limit));
    if let Some(budget) = budget {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    }
    if let Some(system) = &chat.system {
        body.insert("system".into(), json!(system));
    }
    body.insert("messages".into(), Value::Array(messages(chat)));
    if !chat.tools.is_empty() {
        let tools: Vec<Value> = chat
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if budget.is_none() {
        body.insert("temperature".into(), json!(request.temperature));
    }
    let top_p = request.top_p.filter(|p| budget.is_none() || *p >= 0.95);
    if let Some(top_p) = top_p {
        body.insert("top_p".into(), json!(top_p));
    }
    if !request.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(request.stop));
    }
    Value::Object(body)
}

/// The turns in Anthropic's shape: tool calls are `tool_use` blocks (their arguments parsed;
/// text that is not JSON goes as a string), results `tool_result` blocks of a user message.
fn messages(chat: &Conversation) -> Vec<Value> {
    chat.turns
        .iter()
        .map(|turn| match turn {
            Turn::User(text) => json!({"role": "user", "content": text}),
            Turn::Assistant { text, calls, .. } if calls.is_empty() => {
                json!({"role": "assistant", "content": text})
            }
            Turn::Assistant {
                text,
                calls,
                thinking_blocks,
            } => {
                let mut blocks: Vec<Value> = thinking_blocks.clone();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in calls {
                    let input: Value =
                        serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!({}));
                    blocks.push(json!({
                        "type": "tool_use", "id": call.id, "name": call.name, "input": input,
                    }));
                }
                json!({"role": "assistant", "content": blocks})
            }
            Turn::ToolResult { call_id, content } => json!({
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call_id, "content": content}],
            }),
        })
        .collect()
}

#[derive(Deserialize)]
struct Message {
    /// The blocks whole, whatever fields they carry: thinking blocks go back as they came.
    content: Vec<Value>,
    stop_reason: Option<String>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

/// Decodes a message into one sample: the concatenation of its `text` blocks. Thinking
/// (`thinking` and `redacted_thinking` blocks) is not part of the answer: it is returned
/// beside it, its blocks kept as they came to be sent back.
pub(crate) fn parse_message(body: &[u8]) -> Result<Generation, String> {
    let message: Message = decode(body)?;
    let of = |kind: &'static str| {
        message
            .content
            .iter()
            .filter(move |block| block["type"].as_str() == Some(kind))
    };
    // In the order they came, as the API wants them back.
    let thinking_blocks: Vec<Value> = message
        .content
        .iter()
        .filter(|b| matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")))
        .cloned()
        .collect();
    let thought: Vec<&str> = of("thinking")
        .filter_map(|block| block["thinking"].as_str())
        .collect();
    let redacted = of("redacted_thinking").count();
    let text: String = of("text")
        .filter_map(|block| block["text"].as_str())
        .collect();
    let calls = of("tool_use")
        .map(|block| ToolCall {
            id: block["id"].as_str().unwrap_or_default().to_string(),
            name: block["name"].as_str().unwrap_or_default().to_string(),
            arguments: match &block["input"] {
                Value::Null => "{}".to_string(),
                input => input.to_string(),
            },
        })
        .collect();
    let usage = message.usage.unwrap_or_default();
    Ok(Generation {
        texts: vec![text],
        finish_reasons: vec![message.stop_reason],
        tool_calls: vec![calls],
        thinking: vec![beside(thought.join("\n\n"), redacted)],
        thinking_blocks: vec![thinking_blocks],
        // Anthropic counts thinking in `output_tokens` and reports no part of it apart.
        usage: TokenUsage {
            prompt_tokens: usage.input_tokens.unwrap_or(0),
            completion_tokens: usage.output_tokens.unwrap_or(0),
            reasoning_tokens: 0,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_blocks_are_concatenated_and_thinking_ignored() {
        let body = br#"{"id":"msg_1","type":"message","role":"assistant","model":"m",
            "content":[{"type":"thinking","thinking":"hmm","signature":"s"},
                       {"type":"text","text":"def f():"},{"type":"text","text":"\n    pass"}],
            "stop_reason":"stop_sequence","stop_sequence":"\nif __name__",
            "usage":{"input_tokens":12,"output_tokens":5}}"#;
        let g = parse_message(body).unwrap();
        assert_eq!(g.texts, ["def f():\n    pass"]);
        assert_eq!(g.finish_reasons, [Some("stop_sequence".to_string())]);
        assert_eq!(
            g.usage,
            TokenUsage {
                prompt_tokens: 12,
                completion_tokens: 5,
                reasoning_tokens: 0,
            }
        );
    }

    #[test]
    fn a_body_without_content_is_an_error() {
        assert!(parse_message(br#"{"type":"message"}"#).is_err());
    }
}
