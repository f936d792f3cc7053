//! OpenAI Responses (`POST /v1/responses`): all the Codex CLI speaks (always streamed; it
//! fails a stream that ends without `response.completed`), and OpenCode's `openai` provider.
//!
//! Requests are stateless: Codex sends the whole conversation each time (`store: false`), so
//! `previous_response_id` is never needed.

use assay_models::{Conversation, Request, Tool, ToolCall, Turn};
use serde_json::{json, Value};

use crate::answer::Answer;
use crate::chat::{arguments, function};
use crate::dialect::{unix_now, Dialect, Sampling, Terms};
use crate::exchange::Protocol;
use crate::failure::{Failure, Wording};
use crate::json::Node;
use crate::sse::Event;

/// One Responses request being answered.
pub(crate) struct Responses {
    id: String,
    /// The exchange's index, for the output items' ids.
    index: u32,
    created_at: u64,
    model: String,
    stream: bool,
    /// The freeform (`custom`) tools offered: the model calls them as functions of one string,
    /// and the agent gets `custom_tool_call`s back.
    custom_tools: Vec<String>,
    /// The next event's `sequence_number`.
    sequence: u64,
}

impl Dialect for Responses {
    const PROTOCOL: Protocol = Protocol::Responses;
    const WORDING: Wording = Wording::OpenAi;

    fn parse(body: &Value, terms: &Terms<'_>) -> Result<(Responses, Request), String> {
        let root = Node::root(body);
        root.object()?;
        let mut conversation = Conversation::default();
        let mut system = Vec::new();
        if let Some(instructions) = root.get("instructions") {
            system.push(instructions.str()?.to_string());
        }
        match root.get("input") {
            None => {}
            Some(input) if input.value().is_string() => {
                conversation
                    .turns
                    .push(Turn::User(input.str()?.to_string()));
            }
            Some(input) => {
                for item in input.items()? {
                    read_item(&item, &mut conversation.turns, &mut system)?;
                }
            }
        }
        conversation.system = (!system.is_empty()).then(|| system.join("\n\n"));
        let mut custom_tools = Vec::new();
        if let Some(tools) = root.get("tools") {
            for tool in tools.items()? {
                match tool.kind() {
                    Some("function") => conversation.tools.push(function(&tool)?),
                    Some("custom") => {
                        let tool = custom(&tool)?;
                        custom_tools.push(tool.name.clone());
                        conversation.tools.push(tool);
                    }
                    // The provider's own tools (web search, tool search, image generation)
                    // and namespaces of them: nothing the model behind the gateway has.
                    _ => {}
                }
            }
        }
        let number = |key| root.get(key).map(|n| n.f64()).transpose();
        let sampling = Sampling {
            temperature: number("temperature")?,
            top_p: number("top_p")?,
            max_tokens: root
                .get("max_output_tokens")
                .map(|n| n.count())
                .transpose()?,
            stop: Vec::new(),
        };
        let responses = Responses {
            id: format!("resp_assay_{}", terms.index),
            index: terms.index,
            created_at: unix_now(),
            model: terms.model.to_string(),
            stream: root
                .get("stream")
                .map(|s| s.bool())
                .transpose()?
                .unwrap_or(false),
            custom_tools,
            sequence: 0,
        };
        Ok((responses, terms.request(conversation, sampling)))
    }

    fn stream(&self) -> bool {
        self.stream
    }

    /// The response object: the reasoning's summary, the message, then the calls.
    fn reply(&self, answer: &Answer) -> Value {
        let mut output = Vec::new();
        if let Some(thought) = answer.thought() {
            output.push(json!({
                "id": format!("rs_assay_{}", self.index), "type": "reasoning",
                "summary": [{"type": "summary_text", "text": thought}],
            }));
        }
        if !answer.text.is_empty() {
            output.push(json!({
                "id": format!("msg_assay_{}", self.index), "type": "message",
                "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": answer.text, "annotations": []}],
            }));
        }
        for (i, call) in answer.calls.iter().enumerate() {
            output.push(if self.custom_tools.contains(&call.name) {
                json!({
                    "id": format!("ctc_assay_{}_{i}", self.index), "type": "custom_tool_call",
                    "call_id": call.id, "name": call.name, "input": custom_input(&call.arguments),
                    "status": "completed",
                })
            } else {
                json!({
                    "id": format!("fc_assay_{}_{i}", self.index), "type": "function_call",
                    "call_id": call.id, "name": call.name, "arguments": call.arguments,
                    "status": "completed",
                })
            });
        }
        let usage = &answer.usage;
        let mut response = self.response("completed", output);
        response["usage"] = json!({
            "input_tokens": usage.prompt_tokens,
            "output_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
            // The client reports no cached tokens.
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        });
        response
    }

    /// `response.created` and `response.in_progress`: Codex knows the request was taken.
    fn opening(&mut self) -> Vec<Event> {
        let response = self.response("in_progress", Vec::new());
        vec![
            self.event("response.created", json!({"response": response})),
            self.event("response.in_progress", json!({"response": response})),
        ]
    }

    fn keepalive(&mut self) -> Event {
        Event::comment("keepalive")
    }

    /// Each output item added, filled in (its text or arguments in one delta) and done, then
    /// `response.completed` with the whole response.
    fn events(&mut self, reply: &Value) -> Vec<Event> {
        let mut events = Vec::new();
        let items = reply["output"].as_array().cloned().unwrap_or_default();
        for (output_index, item) in items.into_iter().enumerate() {
            events.push(self.event(
                "response.output_item.added",
                json!({"output_index": output_index, "item": started(&item)}),
            ));
            let at = json!({"item_id": item["id"], "output_index": output_index});
            match item["type"].as_str() {
                Some("message") => {
                    let part = &item["content"][0];
                    let text = &part["text"];
                    let at = with(&at, json!({"content_index": 0}));
                    let empty = json!({"type": "output_text", "text": "", "annotations": []});
                    events.extend([
                        self.event(
                            "response.content_part.added",
                            with(&at, json!({"part": empty})),
                        ),
                        self.event(
                            "response.output_text.delta",
                            with(&at, json!({"delta": text})),
                        ),
                        self.event(
                            "response.output_text.done",
                            with(&at, json!({"text": text})),
                        ),
                        self.event(
                            "response.content_part.done",
                            with(&at, json!({"part": part})),
                        ),
                    ]);
                }
                Some("function_call") => {
                    let arguments = &item["arguments"];
                    events.extend([
                        self.event(
                            "response.function_call_arguments.delta",
                            with(&at, json!({"delta": arguments})),
                        ),
                        self.event(
                            "response.function_call_arguments.done",
                            with(&at, json!({"arguments": arguments})),
                        ),
                    ]);
                }
                Some("custom_tool_call") => {
                    let input = &item["input"];
                    events.extend([
                        self.event(
                            "response.custom_tool_call_input.delta",
                            with(&at, json!({"delta": input})),
                        ),
                        self.event(
                            "response.custom_tool_call_input.done",
                            with(&at, json!({"input": input})),
                        ),
                    ]);
                }
                Some("reasoning") => {
                    let part = &item["summary"][0];
                    let text = &part["text"];
                    let at = with(&at, json!({"summary_index": 0}));
                    let empty = json!({"type": "summary_text", "text": ""});
                    events.extend([
                        self.event(
                            "response.reasoning_summary_part.added",
                            with(&at, json!({"part": empty})),
                        ),
                        self.event(
                            "response.reasoning_summary_text.delta",
                            with(&at, json!({"delta": text})),
                        ),
                        self.event(
                            "response.reasoning_summary_text.done",
                            with(&at, json!({"text": text})),
                        ),
                        self.event(
                            "response.reasoning_summary_part.done",
                            with(&at, json!({"part": part})),
                        ),
                    ]);
                }
                _ => {}
            }
            events.push(self.event(
                "response.output_item.done",
                json!({"output_index": output_index, "item": item}),
            ));
        }
        events.push(self.event("response.completed", json!({"response": reply})));
        events
    }

    /// `response.failed`, its `error.code` what Codex acts on (`context_length_exceeded`).
    fn failed(&mut self, failure: &Failure) -> Vec<Event> {
        let (kind, code) = failure.openai_type_and_code();
        let mut response = self.response("failed", Vec::new());
        response["error"] = json!({
            "code": code.unwrap_or(kind), "message": failure.message(Wording::OpenAi),
        });
        vec![self.event("response.failed", json!({"response": response}))]
    }
}

impl Responses {
    /// The response object with `status` and `output`, without usage.
    fn response(&self, status: &str, output: Vec<Value>) -> Value {
        json!({
            "id": self.id, "object": "response", "created_at": self.created_at,
            "status": status, "model": self.model, "output": output,
            "usage": null, "error": null,
        })
    }

    /// An event of type `kind`: named so, and numbered in its data.
    fn event(&mut self, kind: &str, mut data: Value) -> Event {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        Event::named(kind, &data)
    }
}

/// `fields` added to a copy of `base` (both objects).
fn with(base: &Value, fields: Value) -> Value {
    let mut all = base.clone();
    if let (Some(all), Value::Object(fields)) = (all.as_object_mut(), fields) {
        all.extend(fields);
    }
    all
}

/// An output item as `response.output_item.added` has it: begun, nothing in it yet.
fn started(item: &Value) -> Value {
    let mut item = item.clone();
    let empty = match item["type"].as_str() {
        Some("message") => Some(("content", json!([]))),
        Some("function_call") => Some(("arguments", json!(""))),
        Some("custom_tool_call") => Some(("input", json!(""))),
        Some("reasoning") => Some(("summary", json!([]))),
        _ => None,
    };
    if let Some((field, empty)) = empty {
        item[field] = empty;
    }
    if item.get("status").is_some() {
        item["status"] = json!("in_progress");
    }
    item
}

/// Adds one input item to the conversation. Tool calls join the assistant turn before them;
/// reasoning (the model's own, encrypted or summarized) and the provider's tool items are left
/// out: the model behind the gateway never made them.
fn read_item(
    item: &Node<'_>,
    turns: &mut Vec<Turn>,
    system: &mut Vec<String>,
) -> Result<(), String> {
    item.object()?;
    let kind = match item.kind() {
        Some(kind) => kind,
        // The short form of a message: `{role, content}`.
        None if item.get("role").is_some() => "message",
        None => return Err(item.wrong("an input item with a `type`")),
    };
    match kind {
        "message" => {
            let role = item.field("role")?;
            let text = match item.get("content") {
                Some(content) => content.text()?,
                None => String::new(),
            };
            match role.str()? {
                "user" => turns.push(Turn::User(text)),
                "assistant" => turns.push(Turn::Assistant {
                    text,
                    calls: Vec::new(),
                    thinking_blocks: Vec::new(),
                }),
                "system" | "developer" => system.push(text),
                other => {
                    return Err(format!(
                        "{} (`{other}`); expected user, assistant, system or developer",
                        role.wrong("a known role")
                    ))
                }
            }
        }
        "function_call" => push_call(
            turns,
            ToolCall {
                id: item.field("call_id")?.str()?.to_string(),
                name: item.field("name")?.str()?.to_string(),
                arguments: arguments(item.get("arguments"))?,
            },
        ),
        "custom_tool_call" => push_call(
            turns,
            ToolCall {
                id: item.field("call_id")?.str()?.to_string(),
                name: item.field("name")?.str()?.to_string(),
                // As the model was offered the tool: a function of one string.
                arguments: json!({"input": item.field("input")?.str()?}).to_string(),
            },
        ),
        "function_call_output" | "custom_tool_call_output" => turns.push(Turn::ToolResult {
            call_id: item.field("call_id")?.str()?.to_string(),
            content: match item.get("output") {
                Some(output) => output.text()?,
                None => String::new(),
            },
        }),
        other => tracing::debug!(item = other, "Responses input item left out"),
    }
    Ok(())
}

/// A call joined to the assistant turn before it, or a turn of its own.
fn push_call(turns: &mut Vec<Turn>, call: ToolCall) {
    if let Some(Turn::Assistant { calls, .. }) = turns.last_mut() {
        calls.push(call);
    } else {
        turns.push(Turn::Assistant {
            text: String::new(),
            calls: vec![call],
            thinking_blocks: Vec::new(),
        });
    }
}

/// A freeform tool (`{type: "custom", name, description, format}`, Codex's `apply_patch`)
/// as a function of one string, `input`, whose grammar, if it has one, is told in its
/// description.
fn custom(spec: &Node<'_>) -> Result<Tool, String> {
    let mut description = match spec.get("description") {
        Some(description) => description.str()?.to_string(),
        None => String::new(),
    };
    let format = spec.get("format");
    let grammar = format.as_ref().and_then(|f| f.get("definition"));
    if let (Some(format), Some(grammar)) = (&format, grammar) {
        let syntax = format.get("syntax").map(|s| s.str()).transpose()?;
        description.push_str(&format!(
            "\n\nThe `input` string follows this {} grammar:\n{}",
            syntax.unwrap_or("formal"),
            grammar.str()?
        ));
    }
    Ok(Tool {
        name: spec.field("name")?.str()?.to_string(),
        description,
        parameters: json!({
            "type": "object",
            "properties": {"input": {"type": "string", "description": "The tool's input, as free text."}},
            "required": ["input"],
            "additionalProperties": false,
        }),
    })
}

/// The free text of a call to a freeform tool: its `input` argument, or, should the model not
/// have written the JSON it was asked for, all it wrote.
fn custom_input(arguments: &str) -> String {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|args| args.get("input")?.as_str().map(String::from))
        .unwrap_or_else(|| arguments.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::testing::{chat, data, terms};
    use assay_records::{Thinking, ThinkingSource};

    /// A Codex turn: instructions, a developer message, the user's prompt, the model's
    /// reasoning and shell call, its output, and an apply_patch call.
    fn codex_body() -> Value {
        json!({
            "model": "gpt-5-codex", "instructions": "You are Codex.", "stream": true,
            "store": false, "parallel_tool_calls": false, "reasoning": {"effort": "medium"},
            "input": [
                {"type": "message", "role": "developer",
                 "content": [{"type": "input_text", "text": "sandbox: none"}]},
                {"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": "fix it"},
                             {"type": "input_image", "image_url": "data:"}]},
                {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"},
                {"type": "function_call", "call_id": "call_a", "name": "shell",
                 "arguments": "{\"command\":[\"ls\"]}"},
                {"type": "function_call", "call_id": "call_b", "name": "shell",
                 "arguments": "{\"command\":[\"pwd\"]}"},
                {"type": "function_call_output", "call_id": "call_a", "output": "a.py"},
                {"type": "function_call_output", "call_id": "call_b",
                 "output": [{"type": "input_text", "text": "/w"}]},
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "patching"}]},
                {"type": "custom_tool_call", "call_id": "call_c", "name": "apply_patch",
                 "input": "*** Begin Patch"},
                {"type": "custom_tool_call_output", "call_id": "call_c", "output": "Done"},
            ],
            "tools": [
                {"type": "function", "name": "shell", "description": "Runs a command",
                 "strict": false, "parameters": {"type": "object"}},
                {"type": "custom", "name": "apply_patch", "description": "Edit files.",
                 "format": {"type": "grammar", "syntax": "lark", "definition": "start: x"}},
                {"type": "web_search"},
                {"type": "namespace", "name": "mcp", "tools": []},
            ],
            "max_output_tokens": 50,
        })
    }

    #[test]
    fn a_codex_request_becomes_a_conversation() {
        let (dialect, request) = Responses::parse(&codex_body(), &terms()).unwrap();
        assert!(dialect.stream());
        assert_eq!(dialect.custom_tools, ["apply_patch"]);
        let chat = chat(&request);
        assert_eq!(
            chat.system.as_deref(),
            Some("You are Codex.\n\nsandbox: none")
        );
        let call = |id: &str, name: &str, arguments: &str| ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        };
        let result = |id: &str, content: &str| Turn::ToolResult {
            call_id: id.into(),
            content: content.into(),
        };
        assert_eq!(
            chat.turns,
            [
                Turn::User("fix it\n[image omitted]".into()),
                Turn::Assistant {
                    text: String::new(),
                    calls: vec![
                        call("call_a", "shell", "{\"command\":[\"ls\"]}"),
                        call("call_b", "shell", "{\"command\":[\"pwd\"]}"),
                    ],
                    thinking_blocks: Vec::new(),
                },
                result("call_a", "a.py"),
                result("call_b", "/w"),
                Turn::Assistant {
                    text: "patching".into(),
                    calls: vec![call(
                        "call_c",
                        "apply_patch",
                        "{\"input\":\"*** Begin Patch\"}"
                    )],
                    thinking_blocks: Vec::new(),
                },
                result("call_c", "Done"),
            ]
        );
        let names: Vec<&str> = chat.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["shell", "apply_patch"]);
        assert!(chat.tools[1]
            .description
            .contains("lark grammar:\nstart: x"));
        assert_eq!(chat.tools[1].parameters["required"], json!(["input"]));
        assert_eq!(request.max_tokens, 50);
    }

    #[test]
    fn a_plain_string_input_is_the_users() {
        let body = json!({"input": "hi", "instructions": null});
        let (dialect, request) = Responses::parse(&body, &terms()).unwrap();
        assert!(!dialect.stream());
        assert_eq!(chat(&request).turns, [Turn::User("hi".into())]);
        let err = Responses::parse(&json!({"input": [{"content": "x"}]}), &terms());
        assert_eq!(
            err.err().unwrap(),
            "`input[0]` must be an input item with a `type`"
        );
    }

    #[test]
    fn the_stream_is_numbered_and_ends_completed() {
        let (mut dialect, _) = Responses::parse(&codex_body(), &terms()).unwrap();
        let answer = Answer {
            text: "done".into(),
            calls: vec![
                ToolCall {
                    id: "call_x".into(),
                    name: "shell".into(),
                    arguments: "{\"command\":[\"ls\"]}".into(),
                },
                ToolCall {
                    id: "call_y".into(),
                    name: "apply_patch".into(),
                    arguments: "{\"input\":\"*** Begin Patch\"}".into(),
                },
            ],
            thinking: Some(Thinking {
                source: ThinkingSource::Field,
                text: "hmm".into(),
                cut: false,
                redacted: 0,
            }),
            ..Answer::default()
        };
        let reply = dialect.reply(&answer);
        let kinds: Vec<&str> = reply["output"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["reasoning", "message", "function_call", "custom_tool_call"]
        );
        assert_eq!(reply["output"][3]["input"], "*** Begin Patch");
        let mut events = dialect.opening();
        events.extend(dialect.events(&reply));
        let events = data(&events);
        for (i, (name, data)) in events.iter().enumerate() {
            assert_eq!(data["sequence_number"], i as u64);
            assert_eq!(name.as_deref(), data["type"].as_str());
        }
        assert_eq!(events[0].1["type"], "response.created");
        assert_eq!(events[0].1["response"]["status"], "in_progress");
        let last = &events[events.len() - 1].1;
        assert_eq!(last["type"], "response.completed");
        assert_eq!(last["response"], reply);
        let added = &events[2].1;
        assert_eq!(added["item"]["summary"], json!([]));
    }

    #[test]
    fn a_full_window_fails_the_response_with_codexs_code() {
        let (mut dialect, _) = Responses::parse(&codex_body(), &terms()).unwrap();
        dialect.opening();
        let failure = Failure::ContextFull {
            what: "the prompt does not fit".into(),
            cause: "HTTP 400".into(),
        };
        let events = data(&dialect.failed(&failure));
        assert_eq!(events[0].1["type"], "response.failed");
        assert_eq!(events[0].1["sequence_number"], 2);
        assert_eq!(
            events[0].1["response"]["error"]["code"],
            "context_length_exceeded"
        );
    }
}
