//! The OpenAI wire format: chat completions and legacy completions, also spoken by vLLM, SGLang,
//! TGI, Ollama, llama.cpp, LM Studio and OpenRouter.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::request::{Conversation, Request, ToolCall, Turn};
use crate::response::{beside, decode, Generation};
use assay_records::{ReasoningSettings, Thinking, TokenUsage};

/// Which field carries the token limit.
///
/// api.openai.com deprecated `max_tokens` in favour of `max_completion_tokens`, and its
/// reasoning models reject `max_tokens`; most OpenAI-compatible servers only know `max_tokens`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum TokenLimit {
    MaxTokens,
    MaxCompletionTokens,
}

impl TokenLimit {
    fn field(self) -> &'static str {
        match self {
            TokenLimit::MaxTokens => "max_tokens",
            TokenLimit::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

/// Whether `model` gets OpenAI's reasoning-model requests: as the user said, or else by its
/// name ([`named_reasoning_model`]).
pub(crate) fn is_reasoning_model(model: &str, reasoning: &ReasoningSettings) -> bool {
    reasoning
        .reasoning_model
        .unwrap_or_else(|| named_reasoning_model(model))
}

/// OpenAI's reasoning models (o1, o3, o4, gpt-5 families, DeepSeek's `-reasoner`) reject
/// `temperature`, `top_p` and `max_tokens`. Judged on the part after the last `/` so that router
/// names like `openai/o3-mini` count too.
fn named_reasoning_model(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    ["o1", "o3", "o4", "gpt-5"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
        || name.ends_with("-reasoner")
}

/// The chat messages of a conversation: the system prompt first, tool calls and their
/// results in OpenAI's shape. Thinking is never sent back: DeepSeek refuses a
/// `reasoning_content` in the input, and the others ignore or strip it.
fn messages(chat: &Conversation) -> Vec<Value> {
    let mut messages: Vec<Value> = chat
        .system
        .iter()
        .map(|system| json!({"role": "system", "content": system}))
        .collect();
    for turn in &chat.turns {
        messages.push(match turn {
            Turn::User(text) => json!({"role": "user", "content": text}),
            Turn::Assistant { text, calls, .. } if calls.is_empty() => {
                json!({"role": "assistant", "content": text})
            }
            Turn::Assistant { text, calls, .. } => json!({
                "role": "assistant",
                "content": if text.is_empty() { Value::Null } else { json!(text) },
                "tool_calls": calls.iter().map(|c| json!({
                    "id": c.id, "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                })).collect::<Vec<_>>(),
            }),
            Turn::ToolResult { call_id, content } => {
                json!({"role": "tool", "tool_call_id": call_id, "content": content})
            }
        });
    }
    messages
}

/// The body for `POST {base}/chat/completions`. `limit` is the field for non-reasoning models.
pub(crate) fn chat_body(
    model: &str,
    chat: &Conversation,
    request: &Request,
    limit: TokenLimit,
    reasoning: &ReasoningSettings,
) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages(chat)));
    if !chat.tools.is_empty() {
        let tools: Vec<Value> = chat
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters,
                }})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    // Reasoning models get neither sampling parameters (they reject them) nor a token limit:
    // their hidden reasoning counts against it, so the official limit would cut many answers
    // to nothing. The official harness sends none either.
    if !is_reasoning_model(model, reasoning) {
        body.insert("temperature".into(), json!(request.temperature));
        if let Some(top_p) = request.top_p {
            body.insert("top_p".into(), json!(top_p));
        }
        body.insert(limit.field().into(), json!(request.max_tokens));
        if let Some(penalty) = request.frequency_penalty {
            body.insert("frequency_penalty".into(), json!(penalty));
        }
        if let Some(penalty) = request.presence_penalty {
            body.insert("presence_penalty".into(), json!(penalty));
        }
    }
    // Sent to whatever model the user gave it for: gpt-oss on vLLM takes it under any name.
    if let Some(effort) = reasoning.effort {
        body.insert("reasoning_effort".into(), json!(effort.as_str()));
    }
    insert_n_and_stop(&mut body, request);
    Value::Object(body)
}

/// The body for `POST {base}/completions`, which only ever knew `max_tokens`.
pub(crate) fn completion_body(model: &str, prompt: &str, request: &Request) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("prompt".into(), json!(prompt));
    body.insert("max_tokens".into(), json!(request.max_tokens));
    body.insert("temperature".into(), json!(request.temperature));
    if let Some(top_p) = request.top_p {
        body.insert("top_p".into(), json!(top_p));
    }
    insert_n_and_stop(&mut body, request);
    Value::Object(body)
}

/// `n` is left out for one sample (every server defaults to 1, some reject the field), `stop`
/// when there are no stop strings.
fn insert_n_and_stop(body: &mut Map<String, Value>, request: &Request) {
    if request.n > 1 {
        body.insert("n".into(), json!(request.n));
    }
    if !request.stop.is_empty() {
        body.insert("stop".into(), json!(request.stop));
    }
}

#[derive(Deserialize)]
struct ChatCompletion {
    choices: Vec<ChatChoice>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct ChatChoice {
    index: Option<u32>,
    message: ChatMessage,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChatMessage {
    /// `null` when the reply was filtered or is a refusal/tool call.
    content: Option<String>,
    /// The thinking, where a reasoning parser set it apart: vLLM before 0.10 and DeepSeek's
    /// API (`reasoning_content`); vLLM since and OpenRouter (`reasoning`).
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Vec<WireCall>,
}

#[derive(Deserialize)]
struct WireCall {
    #[serde(default)]
    id: String,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

#[derive(Deserialize)]
struct TextCompletion {
    choices: Vec<TextChoice>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct TextChoice {
    index: Option<u32>,
    text: String,
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize, Default)]
struct CompletionDetails {
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    /// The usage, absent fields counted as none.
    fn tokens(usage: Option<WireUsage>) -> TokenUsage {
        let usage = usage.unwrap_or_default();
        TokenUsage {
            prompt_tokens: usage.prompt_tokens.unwrap_or(0),
            completion_tokens: usage.completion_tokens.unwrap_or(0),
            reasoning_tokens: usage
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
        }
    }
}

/// Decodes a chat completion holding at least `n` choices.
pub(crate) fn parse_chat(body: &[u8], n: u32) -> Result<Generation, String> {
    let reply: ChatCompletion = decode(body)?;
    let choices = reply.choices.into_iter().map(|c| {
        let message = c.message;
        let calls = message
            .tool_calls
            .into_iter()
            .map(|call| ToolCall {
                id: call.id,
                name: call.function.name,
                arguments: call.function.arguments,
            })
            .collect();
        let thought = message.reasoning_content.or(message.reasoning);
        let choice = Choice {
            text: message.content.unwrap_or_default(),
            finish: c.finish_reason,
            calls,
            thinking: thought.and_then(|t| beside(t, 0)),
        };
        (c.index, choice)
    });
    collect_choices(choices, n, WireUsage::tokens(reply.usage))
}

/// Decodes a text completion holding at least `n` choices.
pub(crate) fn parse_completion(body: &[u8], n: u32) -> Result<Generation, String> {
    let reply: TextCompletion = decode(body)?;
    let choices = reply.choices.into_iter().map(|c| {
        let choice = Choice {
            text: c.text,
            finish: c.finish_reason,
            calls: Vec::new(),
            thinking: None,
        };
        (c.index, choice)
    });
    collect_choices(choices, n, WireUsage::tokens(reply.usage))
}

/// One choice as decoded.
struct Choice {
    text: String,
    finish: Option<String>,
    calls: Vec<ToolCall>,
    thinking: Option<Thinking>,
}

/// Orders choices by `index` (servers may return them in any order; a missing index means
/// list position) and keeps the first `n`. Fewer than `n` is an answer, not an error: several
/// servers (Ollama, llama.cpp, TGI) ignore `n`, and the caller asks again for the rest.
fn collect_choices(
    choices: impl Iterator<Item = (Option<u32>, Choice)>,
    n: u32,
    usage: TokenUsage,
) -> Result<Generation, String> {
    let mut choices: Vec<_> = choices
        .enumerate()
        .map(|(pos, (index, choice))| (index.map_or(pos as u64, u64::from), choice))
        .collect();
    if choices.is_empty() {
        return Err("the response has no choices".into());
    }
    choices.sort_by_key(|(index, _)| *index);
    choices.truncate(n as usize);
    let mut generation = Generation {
        usage,
        ..Generation::default()
    };
    for (_, choice) in choices {
        generation.texts.push(choice.text);
        generation.finish_reasons.push(choice.finish);
        generation.tool_calls.push(choice.calls);
        generation.thinking.push(choice.thinking);
        generation.thinking_blocks.push(Vec::new());
    }
    Ok(generation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_models() {
        for model in [
            "o1",
            "o1-mini",
            "o3-mini",
            "o4-mini",
            "gpt-5",
            "gpt-5-mini",
            "deepseek-reasoner",
            "openai/o3",
        ] {
            assert!(named_reasoning_model(model), "{model}");
        }
        for model in [
            "gpt-4o",
            "gpt-4.1-mini",
            "Qwen/Qwen2.5-Coder-7B",
            "deepseek-chat",
        ] {
            assert!(!named_reasoning_model(model), "{model}");
        }
    }

    #[test]
    fn choices_are_ordered_by_index_and_null_content_is_empty() {
        let body = br#"{"choices":[
            {"index":1,"message":{"role":"assistant","content":null},"finish_reason":"content_filter"},
            {"index":0,"message":{"role":"assistant","content":"a"},"finish_reason":"stop"}],
            "usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}"#;
        let g = parse_chat(body, 2).unwrap();
        assert_eq!(g.texts, ["a", ""]);
        assert_eq!(
            g.finish_reasons,
            [Some("stop".to_string()), Some("content_filter".to_string())]
        );
        assert_eq!(
            g.usage,
            TokenUsage {
                prompt_tokens: 3,
                completion_tokens: 4,
                reasoning_tokens: 0,
            }
        );
    }

    #[test]
    fn fewer_choices_are_kept_and_a_wrong_shape_is_an_error() {
        let body = br#"{"choices":[{"index":0,"text":"x","finish_reason":"stop"}]}"#;
        assert_eq!(parse_completion(body, 3).unwrap().texts, ["x"]);
        let err = parse_completion(br#"{"choices":[]}"#, 1).unwrap_err();
        assert_eq!(err, "the response has no choices");
        let g = parse_completion(body, 1).unwrap();
        assert_eq!(g.usage, TokenUsage::default());
        let err = parse_chat(b"{\"error\":{\"message\":\"upstream down\"}}", 1).unwrap_err();
        assert_eq!(err, "response body is an error: upstream down");
        let err = parse_chat(b"<html>", 1).unwrap_err();
        assert!(err.starts_with("unexpected response body ("), "{err}");
    }
}
