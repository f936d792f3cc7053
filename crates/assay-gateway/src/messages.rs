//! Anthropic Messages (`POST /v1/messages`): what Claude Code speaks (streamed, with a
//! non-streamed fallback), and OpenCode's `anthropic` provider.

use assay_models::{Conversation, Request, Tool, ToolCall, Turn};
use serde_json::{json, Value};

use crate::answer::{Answer, Finish};
use crate::dialect::{Dialect, Sampling, Terms};
use crate::exchange::Protocol;
use crate::failure::{Failure, Wording};
use crate::json::Node;
use crate::sse::Event;

/// One Messages request being answered.
pub(crate) struct Messages {
    id: String,
    model: String,
    stream: bool,
}

impl Dialect for Messages {
    const PROTOCOL: Protocol = Protocol::Messages;
    const WORDING: Wording = Wording::Anthropic;

    fn parse(body: &Value, terms: &Terms<'_>) -> Result<(Messages, Request), String> {
        let root = Node::root(body);
        root.object()?;
        let mut conversation = Conversation {
            system: root.get("system").map(|s| s.text()).transpose()?,
            ..Conversation::default()
        };
        for message in root.field("messages")?.items()? {
            let role = message.field("role")?;
            let content = message.field("content")?;
            match role.str()? {
                "user" => user(&content, &mut conversation.turns)?,
                "assistant" => conversation
                    .turns
                    .push(assistant(&content, terms.anthropic)?),
                // Claude Code 2.1 sends system messages among the turns (the API's own
                // clients do not); the conversation has one system prompt, so they join it.
                "system" => {
                    let text = content.text()?;
                    conversation.system = Some(match conversation.system.take() {
                        Some(system) => format!("{system}\n\n{text}"),
                        None => text,
                    });
                }
                other => {
                    return Err(format!(
                        "{} (`{other}`); expected user, assistant or system",
                        role.wrong("a known role")
                    ))
                }
            }
        }
        if let Some(tools) = root.get("tools") {
            for tool in tools.items()? {
                // Tools with another type are Anthropic's server tools (web search, code
                // execution): nothing the model behind the gateway has.
                if tool.kind().is_none_or(|kind| kind == "custom") {
                    conversation.tools.push(Tool {
                        name: tool.field("name")?.str()?.to_string(),
                        description: match tool.get("description") {
                            Some(description) => description.str()?.to_string(),
                            None => String::new(),
                        },
                        parameters: tool.field("input_schema")?.value().clone(),
                    });
                }
            }
        }
        let number = |key| root.get(key).map(|n| n.f64()).transpose();
        let sampling = Sampling {
            temperature: number("temperature")?,
            top_p: number("top_p")?,
            max_tokens: root.get("max_tokens").map(|n| n.count()).transpose()?,
            stop: root
                .get("stop_sequences")
                .map(|s| s.strings())
                .transpose()?
                .unwrap_or_default(),
        };
        let messages = Messages {
            id: format!("msg_assay_{}", terms.index),
            model: terms.model.to_string(),
            stream: root
                .get("stream")
                .map(|s| s.bool())
                .transpose()?
                .unwrap_or(false),
        };
        Ok((messages, terms.request(conversation, sampling)))
    }

    fn stream(&self) -> bool {
        self.stream
    }

    /// The message: Anthropic's thinking blocks as they came, the text, then the calls.
    fn reply(&self, answer: &Answer) -> Value {
        let mut content = answer.thinking_blocks.clone();
        if !answer.text.is_empty() || answer.calls.is_empty() {
            content.push(json!({"type": "text", "text": answer.text}));
        }
        for call in &answer.calls {
            content.push(json!({
                "type": "tool_use", "id": call.id, "name": call.name, "input": input(call),
            }));
        }
        let usage = &answer.usage;
        json!({
            "id": self.id, "type": "message", "role": "assistant", "model": self.model,
            "content": content, "stop_reason": stop_reason(answer.finish()),
            "stop_sequence": null,
            "usage": {
                "input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens,
                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
            },
        })
    }

    /// `message_start`, before the model is asked: Claude Code's watchdogs see the stream
    /// begin. Its usage is not known yet; `message_delta` carries it.
    fn opening(&mut self) -> Vec<Event> {
        let message = json!({
            "id": self.id, "type": "message", "role": "assistant", "model": self.model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        });
        vec![event("message_start", json!({"message": message}))]
    }

    fn keepalive(&mut self) -> Event {
        event("ping", json!({}))
    }

    /// Each content block started, filled in with one delta (a thinking block's signature in
    /// a second), and stopped; then the stop reason and usage, and `message_stop`.
    fn events(&mut self, reply: &Value) -> Vec<Event> {
        let mut events = Vec::new();
        let blocks = reply["content"].as_array().cloned().unwrap_or_default();
        for (index, block) in blocks.into_iter().enumerate() {
            let (start, deltas) = match block["type"].as_str() {
                Some("text") => (
                    json!({"type": "text", "text": ""}),
                    vec![json!({"type": "text_delta", "text": block["text"]})],
                ),
                Some("tool_use") => (
                    json!({"type": "tool_use", "id": block["id"], "name": block["name"],
                           "input": {}}),
                    vec![json!({"type": "input_json_delta",
                                "partial_json": block["input"].to_string()})],
                ),
                Some("thinking") => (
                    json!({"type": "thinking", "thinking": "", "signature": ""}),
                    vec![
                        json!({"type": "thinking_delta", "thinking": block["thinking"]}),
                        json!({"type": "signature_delta", "signature": block["signature"]}),
                    ],
                ),
                // Redacted thinking comes whole in its start.
                _ => (block.clone(), Vec::new()),
            };
            events.push(event(
                "content_block_start",
                json!({"index": index, "content_block": start}),
            ));
            for delta in deltas {
                events.push(event(
                    "content_block_delta",
                    json!({"index": index, "delta": delta}),
                ));
            }
            events.push(event("content_block_stop", json!({"index": index})));
        }
        events.push(event(
            "message_delta",
            json!({
                "delta": {"stop_reason": reply["stop_reason"], "stop_sequence": null},
                "usage": {"input_tokens": reply["usage"]["input_tokens"],
                          "output_tokens": reply["usage"]["output_tokens"]},
            }),
        ));
        events.push(event("message_stop", json!({})));
        events
    }

    fn failed(&mut self, failure: &Failure) -> Vec<Event> {
        vec![event("error", failure.anthropic_body())]
    }
}

/// A named event whose data has its name as `type`.
fn event(name: &str, mut data: Value) -> Event {
    data["type"] = json!(name);
    Event::named(name, &data)
}

/// Adds a user message's turns: its tool results first (the API wants them first in the
/// message, and an OpenAI-style model wants them right after the calls), then its text.
fn user(content: &Node<'_>, turns: &mut Vec<Turn>) -> Result<(), String> {
    if content.value().is_string() {
        turns.push(Turn::User(content.str()?.to_string()));
        return Ok(());
    }
    let mut texts = Vec::new();
    for block in content.items()? {
        if block.kind() != Some("tool_result") {
            texts.push(block.part_text()?);
            continue;
        }
        let mut result = match block.get("content") {
            Some(content) => content.text()?,
            None => String::new(),
        };
        if block.get("is_error").map(|e| e.bool()).transpose()? == Some(true) {
            result.insert_str(0, "Error: ");
        }
        turns.push(Turn::ToolResult {
            call_id: block.field("tool_use_id")?.str()?.to_string(),
            content: result,
        });
    }
    if !texts.is_empty() {
        turns.push(Turn::User(texts.join("\n")));
    }
    Ok(())
}

/// An assistant message as a turn. Thinking blocks are kept for an Anthropic model only,
/// which checks their signatures; the provider's own tool blocks are left out.
fn assistant(content: &Node<'_>, anthropic: bool) -> Result<Turn, String> {
    if content.value().is_string() {
        return Ok(Turn::Assistant {
            text: content.str()?.to_string(),
            calls: Vec::new(),
            thinking_blocks: Vec::new(),
        });
    }
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut thinking_blocks = Vec::new();
    for block in content.items()? {
        match block.kind() {
            Some("text") => text.push_str(block.field("text")?.str()?),
            Some("tool_use") => calls.push(ToolCall {
                id: block.field("id")?.str()?.to_string(),
                name: block.field("name")?.str()?.to_string(),
                arguments: block
                    .get("input")
                    .map_or_else(|| "{}".to_string(), |input| input.value().to_string()),
            }),
            Some("thinking" | "redacted_thinking") if anthropic => {
                thinking_blocks.push(block.value().clone());
            }
            _ => {}
        }
    }
    Ok(Turn::Assistant {
        text,
        calls,
        thinking_blocks,
    })
}

/// A call's `input`: its arguments parsed. Arguments that are not a JSON object (a model that
/// wrote broken JSON) go as `{}`; the record keeps what the model wrote.
fn input(call: &ToolCall) -> Value {
    match serde_json::from_str::<Value>(&call.arguments) {
        Ok(input @ Value::Object(_)) => input,
        _ => {
            tracing::warn!(
                tool = call.name,
                "the model's tool arguments are not a JSON object; the agent gets {{}}"
            );
            json!({})
        }
    }
}

/// Messages' `stop_reason`.
fn stop_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop => "end_turn",
        Finish::Length => "max_tokens",
        Finish::ToolCalls => "tool_use",
        Finish::StopSequence => "stop_sequence",
        Finish::Filtered => "refusal",
    }
}

/// `POST /v1/messages/count_tokens`: an estimate, a token per four characters of the text
/// of the system prompt, the messages and the tools.
pub(crate) fn count_tokens(body: &Value) -> Value {
    let chars: usize = ["system", "messages", "tools"]
        .iter()
        .map(|key| text_chars(&body[*key]))
        .sum();
    json!({"input_tokens": chars.div_ceil(4)})
}

/// The characters of every string in `value`.
fn text_chars(value: &Value) -> usize {
    match value {
        Value::String(s) => s.chars().count(),
        Value::Array(items) => items.iter().map(text_chars).sum(),
        Value::Object(fields) => fields.values().map(text_chars).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_messages_among_the_turns_join_the_system_prompt() {
        let body = json!({"model": "m", "max_tokens": 10, "system": "first",
                          "messages": [{"role": "system", "content": "second"},
                                       {"role": "user", "content": "hi"}]});
        let terms = terms();
        let (_, request) = Messages::parse(&body, &terms).unwrap();
        let chat = chat(&request);
        assert_eq!(chat.system.as_deref(), Some("first\n\nsecond"));
        assert_eq!(chat.turns, [Turn::User("hi".into())]);
        let body = json!({"model": "m", "messages": [{"role": "tool", "content": "x"}]});
        let err = Messages::parse(&body, &terms).err().unwrap();
        assert!(err.contains("expected user, assistant or system"), "{err}");
    }
    use crate::dialect::testing::{chat, data, terms};

    fn claude_code_body() -> Value {
        json!({
            "model": "claude-haiku-4-5", "max_tokens": 32000, "stream": true,
            "system": [{"type": "text", "text": "You are Claude Code."},
                       {"type": "text", "text": "Be careful.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": "list files"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                    {"type": "text", "text": "Listing."},
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
                ]},
                {"role": "user", "content": [
                    {"type": "text", "text": "<system-reminder>x</system-reminder>"},
                    {"type": "tool_result", "tool_use_id": "toolu_1",
                     "content": [{"type": "text", "text": "no such dir"}], "is_error": true},
                    {"type": "image", "source": {"type": "base64"}},
                ]},
            ],
            "tools": [
                {"name": "Bash", "description": "Runs bash", "input_schema": {"type": "object"}},
                {"type": "web_search_20250305", "name": "web_search"},
            ],
            "stop_sequences": ["\nHuman:"], "temperature": 1,
        })
    }

    #[test]
    fn a_claude_code_request_becomes_a_conversation() {
        let (dialect, request) = Messages::parse(&claude_code_body(), &terms()).unwrap();
        assert!(dialect.stream());
        let chat = chat(&request);
        assert_eq!(
            chat.system.as_deref(),
            Some("You are Claude Code.\nBe careful.")
        );
        assert_eq!(
            chat.turns,
            [
                Turn::User("list files".into()),
                Turn::Assistant {
                    text: "Listing.".into(),
                    calls: vec![ToolCall {
                        id: "toolu_1".into(),
                        name: "Bash".into(),
                        arguments: "{\"command\":\"ls\"}".into(),
                    }],
                    thinking_blocks: Vec::new(),
                },
                Turn::ToolResult {
                    call_id: "toolu_1".into(),
                    content: "Error: no such dir".into(),
                },
                Turn::User("<system-reminder>x</system-reminder>\n[image omitted]".into()),
            ]
        );
        assert_eq!(chat.tools.len(), 1);
        assert_eq!(
            (request.temperature, request.max_tokens),
            (1.0, 1000),
            "capped"
        );
        assert_eq!(request.stop, ["\nHuman:"]);
    }

    #[test]
    fn thinking_blocks_go_back_to_anthropic_only() {
        let anthropic = Terms {
            anthropic: true,
            ..terms()
        };
        let (_, request) = Messages::parse(&claude_code_body(), &anthropic).unwrap();
        let Turn::Assistant {
            thinking_blocks, ..
        } = &chat(&request).turns[1]
        else {
            panic!("an assistant turn")
        };
        assert_eq!(thinking_blocks[0]["signature"], "sig");
    }

    #[test]
    fn the_reply_and_its_stream() {
        let (mut dialect, _) = Messages::parse(&claude_code_body(), &terms()).unwrap();
        let answer = Answer {
            text: "Running.".into(),
            calls: vec![
                ToolCall {
                    id: "call_1".into(),
                    name: "Bash".into(),
                    arguments: "{\"command\":\"ls\"}".into(),
                },
                ToolCall {
                    id: "call_2".into(),
                    name: "Bash".into(),
                    arguments: "{\"command\":".into(),
                },
            ],
            thinking_blocks: vec![json!({"type": "thinking", "thinking": "t", "signature": "s"})],
            finish_reason: Some("tool_calls".into()),
            ..Answer::default()
        };
        let reply = dialect.reply(&answer);
        assert_eq!(reply["stop_reason"], "tool_use");
        assert_eq!(reply["content"][2]["input"], json!({"command": "ls"}));
        assert_eq!(reply["content"][3]["input"], json!({}), "broken JSON");
        let mut events = dialect.opening();
        events.push(dialect.keepalive());
        events.extend(dialect.events(&reply));
        let events = data(&events);
        let names: Vec<&str> = events.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
        assert_eq!(names[..3], ["message_start", "ping", "content_block_start"]);
        assert_eq!(names[names.len() - 2..], ["message_delta", "message_stop"]);
        for (name, data) in &events {
            assert_eq!(data["type"].as_str(), name.as_deref());
        }
        let deltas: Vec<&Value> = events
            .iter()
            .filter(|(n, _)| n.as_deref() == Some("content_block_delta"))
            .map(|(_, d)| &d["delta"])
            .collect();
        assert_eq!(deltas[0]["thinking"], "t");
        assert_eq!(deltas[1]["signature"], "s");
        assert_eq!(deltas[2]["text"], "Running.");
        assert_eq!(deltas[3]["partial_json"], "{\"command\":\"ls\"}");
    }

    #[test]
    fn tokens_are_counted_from_the_text() {
        let body = json!({"model": "m", "system": "abcd",
                          "messages": [{"role": "user", "content": "efgh"}]});
        assert_eq!(count_tokens(&body), json!({"input_tokens": 3}));
    }
}
