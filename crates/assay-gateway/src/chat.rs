//! OpenAI Chat Completions (`POST /v1/chat/completions`): what mini-swe-agent (through
//! litellm) and OpenCode's OpenAI-compatible provider speak.

use assay_models::{Conversation, Request, Tool, ToolCall, Turn};
use serde_json::{json, Value};

use crate::answer::{Answer, Finish};
use crate::dialect::{unix_now, Dialect, Sampling, Terms};
use crate::exchange::Protocol;
use crate::failure::{Failure, Wording};
use crate::json::Node;
use crate::sse::Event;

/// One Chat Completions request being answered.
pub(crate) struct Chat {
    id: String,
    created: u64,
    model: String,
    stream: bool,
    /// `stream_options.include_usage`: a last chunk carries the usage.
    include_usage: bool,
}

impl Dialect for Chat {
    const PROTOCOL: Protocol = Protocol::ChatCompletions;
    const WORDING: Wording = Wording::OpenAi;

    fn parse(body: &Value, terms: &Terms<'_>) -> Result<(Chat, Request), String> {
        let root = Node::root(body);
        root.object()?;
        let mut conversation = Conversation::default();
        let mut system = Vec::new();
        for message in root.field("messages")?.items()? {
            let role = message.field("role")?;
            let text = match message.get("content") {
                Some(content) => content.text()?,
                None => String::new(),
            };
            match role.str()? {
                "system" | "developer" => system.push(text),
                "user" => conversation.turns.push(Turn::User(text)),
                "assistant" => conversation.turns.push(Turn::Assistant {
                    text,
                    calls: calls(&message)?,
                    thinking_blocks: Vec::new(),
                }),
                "tool" => conversation.turns.push(Turn::ToolResult {
                    call_id: message.field("tool_call_id")?.str()?.to_string(),
                    content: text,
                }),
                other => {
                    return Err(format!(
                        "{} (`{other}`); expected system, developer, user, assistant or tool",
                        role.wrong("a known role")
                    ))
                }
            }
        }
        conversation.system = (!system.is_empty()).then(|| system.join("\n\n"));
        if let Some(tools) = root.get("tools") {
            for tool in tools.items()? {
                // Only functions can be offered to the model; other kinds (`custom`) are not
                // offered.
                if tool.kind().is_none_or(|kind| kind == "function") {
                    conversation.tools.push(function(&tool.field("function")?)?);
                }
            }
        }
        let number = |key| root.get(key).map(|n| n.f64()).transpose();
        let max_tokens = root
            .get("max_completion_tokens")
            .or_else(|| root.get("max_tokens"));
        let sampling = Sampling {
            temperature: number("temperature")?,
            top_p: number("top_p")?,
            max_tokens: max_tokens.map(|n| n.count()).transpose()?,
            stop: root
                .get("stop")
                .map(|s| s.strings())
                .transpose()?
                .unwrap_or_default(),
        };
        let include_usage = root
            .get("stream_options")
            .and_then(|options| options.get("include_usage"))
            .map(|flag| flag.bool())
            .transpose()?;
        let chat = Chat {
            id: format!("chatcmpl-assay-{}", terms.index),
            created: unix_now(),
            model: terms.model.to_string(),
            stream: root
                .get("stream")
                .map(|s| s.bool())
                .transpose()?
                .unwrap_or(false),
            include_usage: include_usage.unwrap_or(false),
        };
        Ok((chat, terms.request(conversation, sampling)))
    }

    fn stream(&self) -> bool {
        self.stream
    }

    fn reply(&self, answer: &Answer) -> Value {
        let mut message = json!({"role": "assistant", "content": answer.text});
        if !answer.calls.is_empty() {
            let calls: Vec<Value> = answer
                .calls
                .iter()
                .enumerate()
                .map(|(i, call)| {
                    json!({"index": i, "id": call.id, "type": "function",
                           "function": {"name": call.name, "arguments": call.arguments}})
                })
                .collect();
            message["tool_calls"] = Value::Array(calls);
            if answer.text.is_empty() {
                message["content"] = Value::Null;
            }
        }
        // Where vLLM and DeepSeek put it; clients that show thinking read it there.
        if let Some(thought) = answer.thought() {
            message["reasoning_content"] = json!(thought);
        }
        let usage = &answer.usage;
        json!({
            "id": self.id, "object": "chat.completion", "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": finish_reason(answer.finish()), "logprobs": null}],
            "usage": {
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "total_tokens": usage.prompt_tokens + usage.completion_tokens,
                "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
            },
        })
    }

    fn opening(&mut self) -> Vec<Event> {
        // The first chunk already carries the answer.
        Vec::new()
    }

    fn keepalive(&mut self) -> Event {
        Event::comment("keepalive")
    }

    /// The role, the thinking, the text and the calls each in one chunk (the calls' arguments
    /// whole), then the finish reason, the usage if asked for, and `[DONE]`.
    fn events(&mut self, reply: &Value) -> Vec<Event> {
        let message = &reply["choices"][0]["message"];
        let mut deltas = vec![json!({"role": "assistant", "content": ""})];
        if let Some(thought) = message.get("reasoning_content") {
            deltas.push(json!({"reasoning_content": thought}));
        }
        if let Some(text) = message["content"].as_str().filter(|t| !t.is_empty()) {
            deltas.push(json!({"content": text}));
        }
        if let Some(calls) = message.get("tool_calls") {
            deltas.push(json!({"tool_calls": calls}));
        }
        let mut events: Vec<Event> = deltas
            .into_iter()
            .map(|delta| Event::data(&self.chunk(delta, &Value::Null)))
            .collect();
        let finish = &reply["choices"][0]["finish_reason"];
        events.push(Event::data(&self.chunk(json!({}), finish)));
        if self.include_usage {
            let mut last = self.chunk(json!({}), &Value::Null);
            last["choices"] = json!([]);
            last["usage"] = reply["usage"].clone();
            events.push(Event::data(&last));
        }
        events.push(Event::done());
        events
    }

    /// OpenAI's error, as a data chunk: the SDKs raise it as the request's error.
    fn failed(&mut self, failure: &Failure) -> Vec<Event> {
        vec![Event::data(&failure.openai_body())]
    }
}

impl Chat {
    fn chunk(&self, delta: Value, finish_reason: &Value) -> Value {
        json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason,
                         "logprobs": null}],
        })
    }
}

/// The calls of an assistant message.
fn calls(message: &Node<'_>) -> Result<Vec<ToolCall>, String> {
    let Some(calls) = message.get("tool_calls") else {
        return Ok(Vec::new());
    };
    calls
        .items()?
        .iter()
        .map(|call| {
            let function = call.field("function")?;
            Ok(ToolCall {
                id: call.field("id")?.str()?.to_string(),
                name: function.field("name")?.str()?.to_string(),
                arguments: arguments(function.get("arguments"))?,
            })
        })
        .collect()
}

/// A call's arguments as JSON text: as sent, or written out when a client sent them parsed.
pub(crate) fn arguments(arguments: Option<Node<'_>>) -> Result<String, String> {
    Ok(match arguments {
        None => "{}".into(),
        Some(node) => match node.value() {
            Value::String(text) => text.clone(),
            Value::Object(_) => node.value().to_string(),
            _ => return Err(node.wrong("a JSON string or an object")),
        },
    })
}

/// A function tool: `{name, description, parameters}` (nested under `function` in Chat
/// Completions, flat in Responses).
pub(crate) fn function(spec: &Node<'_>) -> Result<Tool, String> {
    Ok(Tool {
        name: spec.field("name")?.str()?.to_string(),
        description: match spec.get("description") {
            Some(description) => description.str()?.to_string(),
            None => String::new(),
        },
        parameters: spec.get("parameters").map_or_else(
            || json!({"type": "object", "properties": {}}),
            |p| p.value().clone(),
        ),
    })
}

/// Chat Completions' `finish_reason`.
fn finish_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop | Finish::StopSequence => "stop",
        Finish::Length => "length",
        Finish::ToolCalls => "tool_calls",
        Finish::Filtered => "content_filter",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::testing::{chat, data, terms};
    use assay_records::TokenUsage;

    #[test]
    fn a_litellm_conversation_with_a_tool_round_trip() {
        let body = json!({
            "model": "openai/whatever",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "run ls"},
                                             {"type": "image_url", "image_url": {"url": "x"}}]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "a.py"},
            ],
            "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}},
                      {"type": "custom", "custom": {"name": "grammar"}}],
            "temperature": 0, "max_tokens": 99, "stop": "END",
        });
        let (dialect, request) = Chat::parse(&body, &terms()).unwrap();
        assert!(!dialect.stream());
        let chat = chat(&request);
        assert_eq!(chat.system.as_deref(), Some("be brief"));
        assert_eq!(
            chat.turns,
            [
                Turn::User("run ls\n[image omitted]".into()),
                Turn::Assistant {
                    text: String::new(),
                    calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "bash".into(),
                        arguments: "{\"command\":\"ls\"}".into()
                    }],
                    thinking_blocks: Vec::new()
                },
                Turn::ToolResult {
                    call_id: "call_1".into(),
                    content: "a.py".into()
                },
            ]
        );
        assert_eq!(chat.tools.len(), 1);
        assert_eq!(chat.tools[0].name, "bash");
        assert_eq!((request.temperature, request.max_tokens), (0.0, 99));
        assert_eq!(request.stop, ["END"]);
    }

    #[test]
    fn bad_shapes_are_named() {
        let err = |body: Value| Chat::parse(&body, &terms()).err().unwrap();
        assert_eq!(err(json!({})), "`messages` is missing");
        assert_eq!(err(json!([])), "the body must be an object");
        assert_eq!(
            err(json!({"messages": [{"role": "function", "content": ""}]})),
            "`messages[0].role` must be a known role (`function`); expected system, developer, \
             user, assistant or tool"
        );
        assert_eq!(
            err(json!({"messages": [], "max_tokens": -1})),
            "`max_tokens` must be a non-negative integer"
        );
    }

    #[test]
    fn a_streamed_reply_carries_the_same_answer() {
        let body = json!({"messages": [], "stream": true,
                          "stream_options": {"include_usage": true}});
        let (mut dialect, _) = Chat::parse(&body, &terms()).unwrap();
        let answer = Answer {
            text: "ok".into(),
            calls: vec![ToolCall {
                id: "c".into(),
                name: "bash".into(),
                arguments: "{}".into(),
            }],
            usage: TokenUsage {
                prompt_tokens: 3,
                completion_tokens: 2,
                reasoning_tokens: 0,
            },
            ..Answer::default()
        };
        let reply = dialect.reply(&answer);
        assert_eq!(reply["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(reply["usage"]["total_tokens"], 5);
        let events = dialect.events(&reply);
        assert_eq!(events.last(), Some(&Event::done()));
        let chunks = data(&events);
        let deltas: Vec<&Value> = chunks
            .iter()
            .map(|(_, c)| &c["choices"][0]["delta"])
            .collect();
        assert_eq!(deltas[1]["content"], "ok");
        assert_eq!(deltas[2]["tool_calls"][0]["function"]["name"], "bash");
        let usage = &chunks[chunks.len() - 2].1;
        assert_eq!(usage["usage"]["prompt_tokens"], 3);
        assert_eq!(chunks[3].1["choices"][0]["finish_reason"], "tool_calls");
    }
}
