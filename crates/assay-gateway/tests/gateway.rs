//! The gateway driven over real HTTP as each agent drives it, in front of the model client
//! talking to the loopback mock of OpenAI's and Anthropic's APIs.

#[path = "../../assay-models/tests/mock/mod.rs"]
mod mock;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use assay_gateway::{Budget, Exchange, Gateway, GatewayConfig, Protocol, Stop};
use assay_models::{ApiKey, Backoff, Client, ClientConfig, Limits};
use mock::{MockServer, Reply, Route};
use serde_json::{json, Value};

/// The real key: never in anything the gateway sends back or records.
const KEY: &str = "sk-real-key-9f8e7d6c5b4a3210";
/// What the agent is given instead.
const TOKEN: &str = "assay-placeholder-token";
const SERVED: &str = "served-model";

#[derive(Clone, Copy, PartialEq)]
enum Upstream {
    OpenAi,
    Anthropic,
}

/// The mock provider, the gateway in front of it on TCP, and what the gateway recorded.
struct Setup {
    upstream: MockServer,
    gateway: Gateway,
    url: String,
    /// What the exchange hook saw, in the order exchanges finished.
    logged: Arc<Mutex<Vec<Exchange>>>,
}

fn client(upstream: Upstream, server: &MockServer) -> Client {
    let (spec, base) = match upstream {
        Upstream::OpenAi => ("openai:real-model", server.openai_base()),
        Upstream::Anthropic => ("anthropic:real-model", server.url()),
    };
    Client::new(ClientConfig {
        spec: spec.parse().unwrap(),
        base_url: Some(base),
        api_key: Some(ApiKey::new(KEY.into())),
        request_timeout: Duration::from_secs(20),
        retries: 0,
        backoff: Backoff {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(5),
        },
        limits: Limits::default(),
        reasoning: Default::default(),
        extra_body: Default::default(),
    })
    .unwrap()
}

fn config(client: Client, budget: Budget, logged: &Arc<Mutex<Vec<Exchange>>>) -> GatewayConfig {
    let logged = logged.clone();
    GatewayConfig {
        client,
        token: TOKEN.into(),
        served_model: SERVED.into(),
        budget,
        temperature: 0.2,
        max_tokens: 4096,
        on_exchange: Some(Arc::new(move |e: &Exchange| {
            logged.lock().unwrap().push(e.clone())
        })),
    }
}

async fn start(upstream: Upstream, budget: Budget) -> Setup {
    let server = MockServer::start().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let logged = Arc::default();
    let config = config(client(upstream, &server), budget, &logged);
    Setup {
        gateway: Gateway::start(config, listener),
        upstream: server,
        url,
        logged,
    }
}

/// How an agent presents its token.
#[derive(Clone, Copy)]
enum Auth {
    Bearer(&'static str),
    ApiKey(&'static str),
    None,
}

/// What the gateway answered.
struct Answer {
    status: u16,
    content_type: String,
    text: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("{e}: {}", self.text))
    }
}

fn http() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// Sends `body` (JSON text) as the agent would, and checks the real key is not in the answer.
async fn send(
    setup: &Setup,
    method: reqwest::Method,
    path: &str,
    auth: Auth,
    body: &str,
) -> Answer {
    let mut request = http()
        .request(method, format!("{}{path}", setup.url))
        .header("content-type", "application/json")
        .body(body.to_string());
    request = match auth {
        Auth::Bearer(token) => request.header("authorization", format!("Bearer {token}")),
        Auth::ApiKey(token) => request
            .header("x-api-key", token)
            .header("anthropic-version", "2023-06-01"),
        Auth::None => request,
    };
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let text = response.text().await.unwrap();
    assert!(!text.contains(KEY), "the real key leaked: {text}");
    Answer {
        status,
        content_type,
        text,
    }
}

async fn post(setup: &Setup, path: &str, auth: Auth, body: &Value) -> Answer {
    send(setup, reqwest::Method::POST, path, auth, &body.to_string()).await
}

/// The events of an SSE body: each one's name (if it has one) and data; comments and
/// `[DONE]` left out.
fn events(text: &str) -> Vec<(Option<String>, Value)> {
    text.split("\n\n")
        .filter_map(|event| {
            let name = event.lines().find_map(|l| l.strip_prefix("event: "));
            let data = event.lines().find_map(|l| l.strip_prefix("data: "))?;
            let data = serde_json::from_str(data).ok()?;
            Some((name.map(String::from), data))
        })
        .collect()
}

/// Shuts the gateway down, checks the record holds no key and is what the hook saw, and
/// gives it.
async fn finish(setup: Setup) -> Vec<Exchange> {
    let logged = setup.logged.clone();
    let exchanges = setup.gateway.shutdown().await;
    let text = serde_json::to_string(&exchanges).unwrap();
    assert!(!text.contains(KEY), "the real key is in the record");
    let back: Vec<Exchange> = serde_json::from_str(&text).unwrap();
    assert_eq!(back.len(), exchanges.len());
    let mut seen: Vec<u32> = logged.lock().unwrap().iter().map(|e| e.index).collect();
    seen.sort();
    let indexes: Vec<u32> = exchanges.iter().map(|e| e.index).collect();
    assert_eq!(seen, indexes);
    assert_eq!(indexes, (0..indexes.len() as u32).collect::<Vec<_>>());
    exchanges
}

/// An OpenAI chat completion calling `name`, with thinking beside it.
fn openai_tool_call(id: &str, name: &str, arguments: &str) -> Reply {
    Reply::ok(json!({
        "id": "chatcmpl-up", "object": "chat.completion", "created": 0, "model": "real-model",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null, "reasoning_content": "I should look.",
            "tool_calls": [{"id": id, "type": "function",
                            "function": {"name": name, "arguments": arguments}}]}}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27},
    }))
}

/// An Anthropic message that thinks, says something and calls `Bash`.
fn anthropic_tool_use() -> Reply {
    Reply::ok(json!({
        "id": "msg_up", "type": "message", "role": "assistant", "model": "real-model",
        "content": [
            {"type": "thinking", "thinking": "Let me list.", "signature": "sig-123"},
            {"type": "text", "text": "Listing files."},
            {"type": "tool_use", "id": "toolu_up_1", "name": "Bash", "input": {"command": "ls"}},
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 30, "output_tokens": 12},
    }))
}

fn bash_tool_chat() -> Value {
    json!([{"type": "function", "function": {"name": "bash", "description": "Run bash",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}])
}

#[tokio::test]
async fn chat_completions_with_a_tool_round_trip() {
    let setup = start(Upstream::OpenAi, Budget::default()).await;
    setup.upstream.push(
        Route::Chat,
        [openai_tool_call(
            "call_up_1",
            "bash",
            "{\"command\":\"ls\"}",
        )],
    );
    // mini-swe-agent (litellm): not streamed.
    let first = json!({
        "model": "openai/anything", "tools": bash_tool_chat(), "max_tokens": 100000,
        "messages": [{"role": "system", "content": "You are a helpful assistant."},
                     {"role": "user", "content": "List the files."}],
    });
    let answer = post(&setup, "/v1/chat/completions", Auth::Bearer(TOKEN), &first).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let reply = answer.json();
    assert_eq!(reply["object"], "chat.completion");
    assert_eq!(reply["model"], SERVED);
    let choice = &reply["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], Value::Null);
    assert_eq!(choice["message"]["reasoning_content"], "I should look.");
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(
        (&call["id"], &call["type"], &call["function"]["name"]),
        (&json!("call_up_1"), &json!("function"), &json!("bash"))
    );
    assert_eq!(call["function"]["arguments"], "{\"command\":\"ls\"}");
    assert_eq!(reply["usage"]["total_tokens"], 27);

    // OpenCode (AI SDK): streamed, with the usage chunk, the result of the call in the history.
    let second = json!({
        "model": "assay/anything", "stream": true, "stream_options": {"include_usage": true},
        "tools": bash_tool_chat(), "temperature": 0.7,
        "messages": [
            {"role": "user", "content": "List the files."},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_up_1", "content": "a.py\nb.py"},
        ],
    });
    let answer = post(&setup, "/chat/completions", Auth::Bearer(TOKEN), &second).await;
    assert_eq!(answer.status, 200);
    assert!(answer.content_type.starts_with("text/event-stream"));
    assert!(answer.text.ends_with("data: [DONE]\n\n"), "{}", answer.text);
    let chunks = events(&answer.text);
    let text: String = chunks
        .iter()
        .filter_map(|(_, c)| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "reply 0");
    assert!(chunks
        .iter()
        .all(|(_, c)| c["object"] == "chat.completion.chunk"));
    let finishes: Vec<&Value> = chunks
        .iter()
        .map(|(_, c)| &c["choices"][0]["finish_reason"])
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(finishes, [&json!("stop")]);
    let usage = &chunks.last().unwrap().1;
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], 10);

    let sent = setup.upstream.requests_to(Route::Chat);
    assert_eq!(sent.len(), 2);
    assert_eq!(
        sent[0].header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
    assert_eq!(sent[0].body["model"], "real-model", "the one real model");
    assert_eq!(sent[0].body["max_tokens"], 4096, "capped");
    assert_eq!(
        sent[0].body["temperature"], 0.2,
        "the gateway's when none is sent"
    );
    assert_eq!(sent[1].body["temperature"], 0.7, "the agent's own");
    assert_eq!(
        sent[1].body["messages"][2],
        json!({"role": "tool", "tool_call_id": "call_up_1", "content": "a.py\nb.py"})
    );
    assert_eq!(
        sent[1].body["messages"][1]["tool_calls"][0]["id"],
        "call_up_1"
    );

    let exchanges = finish(setup).await;
    assert_eq!(exchanges[0].protocol, Protocol::ChatCompletions);
    assert_eq!(exchanges[0].model_asked, "openai/anything");
    assert_eq!(exchanges[0].calls[0].name, "bash");
    assert_eq!(
        exchanges[0].thinking.as_ref().unwrap().text,
        "I should look."
    );
    assert_eq!(exchanges[0].finish_reason.as_deref(), Some("tool_calls"));
    assert!(exchanges[1].stream);
    assert_eq!(exchanges[1].text, "reply 0");
    assert_eq!(
        exchanges[1].reply.as_ref().unwrap()["object"],
        "chat.completion",
        "the non-streamed form"
    );
}

/// A Codex request: instructions, developer and user messages, flat function tools and the
/// freeform `apply_patch`.
fn codex_request(input: Value) -> Value {
    json!({
        "model": "gpt-5-codex", "instructions": "You are Codex.", "stream": true,
        "store": false, "parallel_tool_calls": false, "tool_choice": "auto",
        "reasoning": {"effort": "medium", "summary": "auto"}, "include": [],
        "input": input,
        "tools": [
            {"type": "function", "name": "shell", "description": "Runs a shell command",
             "strict": false, "parameters": {"type": "object", "properties": {
                "command": {"type": "array", "items": {"type": "string"}}}}},
            {"type": "custom", "name": "apply_patch", "description": "Edit files",
             "format": {"type": "grammar", "syntax": "lark", "definition": "start: patch"}},
            {"type": "web_search"},
        ],
    })
}

#[tokio::test]
async fn codex_streams_responses_and_answers_its_calls() {
    let setup = start(Upstream::OpenAi, Budget::default()).await;
    setup.upstream.push(
        Route::Chat,
        [openai_tool_call(
            "call_up_9",
            "shell",
            "{\"command\":[\"ls\"]}",
        )],
    );
    let prompt = json!([
        {"type": "message", "role": "developer",
         "content": [{"type": "input_text", "text": "<permissions>none</permissions>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
    ]);
    let answer = post(
        &setup,
        "/v1/responses",
        Auth::Bearer(TOKEN),
        &codex_request(prompt.clone()),
    )
    .await;
    assert_eq!(answer.status, 200);
    assert!(answer.content_type.starts_with("text/event-stream"));
    let stream = events(&answer.text);
    for (i, (name, data)) in stream.iter().enumerate() {
        assert_eq!(name.as_deref(), data["type"].as_str(), "named by its type");
        assert_eq!(data["sequence_number"], i as u64, "monotonic");
    }
    let kinds: Vec<&str> = stream
        .iter()
        .map(|(_, d)| d["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds[..2], ["response.created", "response.in_progress"]);
    assert_eq!(kinds.last(), Some(&"response.completed"));
    for kind in [
        "response.reasoning_summary_text.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    let completed = &stream.last().unwrap().1["response"];
    assert!(completed["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["usage"]["input_tokens"], 20);
    assert_eq!(completed["usage"]["total_tokens"], 27);
    let output = completed["output"].as_array().unwrap();
    assert_eq!(output[0]["type"], "reasoning");
    assert_eq!(output[0]["summary"][0]["text"], "I should look.");
    let call = &output[1];
    assert_eq!(
        (&call["type"], &call["call_id"], &call["name"]),
        (
            &json!("function_call"),
            &json!("call_up_9"),
            &json!("shell")
        )
    );
    assert_eq!(call["arguments"], "{\"command\":[\"ls\"]}");
    let done: Vec<&Value> = stream
        .iter()
        .filter(|(_, d)| d["type"] == "response.output_item.done")
        .map(|(_, d)| &d["item"])
        .collect();
    assert_eq!(done[1], call, "Codex takes each item from output_item.done");

    // The next turn carries the reasoning (dropped), the call and its output.
    let mut input = prompt.as_array().unwrap().clone();
    input.extend([
        json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": null}),
        json!({"type": "function_call", "call_id": "call_up_9", "name": "shell",
               "arguments": "{\"command\":[\"ls\"]}"}),
        json!({"type": "function_call_output", "call_id": "call_up_9", "output": "a.py"}),
    ]);
    let answer = post(
        &setup,
        "/v1/responses",
        Auth::Bearer(TOKEN),
        &codex_request(json!(input)),
    )
    .await;
    let next = events(&answer.text).pop().unwrap().1;
    assert_eq!(next["type"], "response.completed");
    assert_eq!(next["response"]["output"][0]["type"], "message");
    assert_eq!(
        next["response"]["output"][0]["content"][0]["text"],
        "reply 0"
    );

    let sent = setup.upstream.requests_to(Route::Chat);
    let messages = sent[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(
        messages[0],
        json!({"role": "system", "content": "You are Codex.\n\n<permissions>none</permissions>"})
    );
    assert_eq!(messages[2]["tool_calls"][0]["id"], "call_up_9");
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "call_up_9", "content": "a.py"})
    );
    let tools: Vec<&Value> = sent[1].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["function"]["name"])
        .collect();
    assert_eq!(
        tools,
        [&json!("shell"), &json!("apply_patch")],
        "web_search dropped"
    );
    let exchanges = finish(setup).await;
    assert_eq!(exchanges[0].protocol, Protocol::Responses);
    assert_eq!(
        exchanges[0].reply.as_ref(),
        Some(completed),
        "the streamed reply recorded whole"
    );
}

#[tokio::test]
async fn codexs_freeform_tool_goes_out_as_a_custom_call() {
    let setup = start(Upstream::OpenAi, Budget::default()).await;
    let patch = "*** Begin Patch\n*** Add File: a.py\n+x = 1\n*** End Patch";
    let arguments = json!({"input": patch}).to_string();
    setup.upstream.push(
        Route::Chat,
        [openai_tool_call("call_p", "apply_patch", &arguments)],
    );
    let input = json!([{"type": "message", "role": "user", "content": "add a.py"}]);
    let answer = post(
        &setup,
        "/v1/responses",
        Auth::Bearer(TOKEN),
        &codex_request(input.clone()),
    )
    .await;
    let events = events(&answer.text);
    let completed = &events.last().unwrap().1["response"];
    let call = &completed["output"][1];
    assert_eq!(call["type"], "custom_tool_call");
    assert_eq!(
        (&call["call_id"], &call["input"]),
        (&json!("call_p"), &json!(patch))
    );

    let mut history = input.as_array().unwrap().clone();
    history.extend([
        json!({"type": "custom_tool_call", "call_id": "call_p", "name": "apply_patch", "input": patch}),
        json!({"type": "custom_tool_call_output", "call_id": "call_p", "output": "Success"}),
    ]);
    post(
        &setup,
        "/v1/responses",
        Auth::Bearer(TOKEN),
        &codex_request(json!(history)),
    )
    .await;
    let sent = setup.upstream.requests_to(Route::Chat);
    let apply_patch = &sent[0].body["tools"][1]["function"];
    assert_eq!(apply_patch["parameters"]["required"], json!(["input"]));
    let messages = &sent[1].body["messages"];
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["arguments"],
        arguments
    );
    assert_eq!(messages[3]["tool_call_id"], "call_p");
    finish(setup).await;
}

/// A Claude Code request: system blocks, the Bash tool, a server tool, streamed or not.
fn claude_request(messages: Value, stream: bool) -> Value {
    json!({
        "model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": stream,
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "messages": messages,
        "tools": [
            {"name": "Bash", "description": "Runs bash",
             "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
        ],
        "metadata": {"user_id": "u"},
    })
}

#[tokio::test]
async fn claude_code_against_anthropic_keeps_its_thinking_blocks() {
    let setup = start(Upstream::Anthropic, Budget::default()).await;
    setup.upstream.push(
        Route::Messages,
        [anthropic_tool_use(), anthropic_tool_use()],
    );
    let prompt = json!([{"role": "user", "content": "list files"}]);
    let answer = post(
        &setup,
        "/v1/messages?beta=true",
        Auth::ApiKey(TOKEN),
        &claude_request(prompt.clone(), false),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let reply = answer.json();
    assert_eq!(reply["type"], "message");
    assert_eq!(reply["model"], SERVED);
    assert_eq!(reply["stop_reason"], "tool_use");
    assert_eq!(
        reply["content"],
        json!([
            {"type": "thinking", "thinking": "Let me list.", "signature": "sig-123"},
            {"type": "text", "text": "Listing files."},
            {"type": "tool_use", "id": "toolu_up_1", "name": "Bash", "input": {"command": "ls"}},
        ])
    );
    assert_eq!(reply["usage"]["input_tokens"], 30);

    // Streamed: the same blocks as deltas.
    let answer = post(
        &setup,
        "/v1/messages?beta=true",
        Auth::ApiKey(TOKEN),
        &claude_request(prompt.clone(), true),
    )
    .await;
    let events = events(&answer.text);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
    assert_eq!(names[0], "message_start");
    assert_eq!(names[names.len() - 2..], ["message_delta", "message_stop"]);
    let deltas: Vec<&Value> = events
        .iter()
        .filter(|(n, _)| n.as_deref() == Some("content_block_delta"))
        .map(|(_, d)| &d["delta"])
        .collect();
    assert_eq!(
        deltas[0],
        &json!({"type": "thinking_delta", "thinking": "Let me list."})
    );
    assert_eq!(
        deltas[1],
        &json!({"type": "signature_delta", "signature": "sig-123"})
    );
    assert_eq!(
        deltas[2],
        &json!({"type": "text_delta", "text": "Listing files."})
    );
    assert_eq!(
        deltas[3],
        &json!({"type": "input_json_delta", "partial_json": "{\"command\":\"ls\"}"})
    );
    let message_delta = &events[events.len() - 2].1;
    assert_eq!(message_delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(message_delta["usage"]["output_tokens"], 12);

    // The tool's result goes back with the signed thinking before the call.
    let mut history = prompt.as_array().unwrap().clone();
    history.extend([
        json!({"role": "assistant", "content": reply["content"]}),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_up_1", "content": "a.py"}]}),
    ]);
    let answer = post(
        &setup,
        "/v1/messages",
        Auth::ApiKey(TOKEN),
        &claude_request(json!(history), false),
    )
    .await;
    assert_eq!(answer.json()["content"][0]["text"], "reply 0");
    let sent = setup.upstream.requests_to(Route::Messages);
    assert_eq!(sent[0].header("x-api-key"), Some(KEY));
    assert_eq!(sent[0].body["model"], "real-model");
    assert_eq!(sent[0].body["system"], "You are Claude Code.");
    assert_eq!(sent[0].body["max_tokens"], 4096);
    assert_eq!(
        sent[0].body["tools"].as_array().unwrap().len(),
        1,
        "server tool dropped"
    );
    let messages = &sent[2].body["messages"];
    assert_eq!(messages[1]["content"][0]["signature"], "sig-123");
    assert_eq!(messages[1]["content"][2]["id"], "toolu_up_1");
    assert_eq!(
        messages[2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_up_1", "content": "a.py"})
    );
    let exchanges = finish(setup).await;
    assert_eq!(exchanges[1].protocol, Protocol::Messages);
    assert_eq!(exchanges[1].thinking.as_ref().unwrap().text, "Let me list.");
}

#[tokio::test]
async fn claude_code_against_an_openai_model() {
    let setup = start(Upstream::OpenAi, Budget::default()).await;
    setup.upstream.push(
        Route::Chat,
        [
            openai_tool_call("call_o", "bash", "{\"command\":\"ls\"}"),
            openai_tool_call("call_broken", "bash", "{\"command\": \"ls"),
        ],
    );
    let prompt = json!([{"role": "user", "content": "list files"}]);
    let answer = post(
        &setup,
        "/v1/messages",
        Auth::ApiKey(TOKEN),
        &claude_request(prompt.clone(), false),
    )
    .await;
    let reply = answer.json();
    assert_eq!(
        reply["content"],
        json!([{"type": "tool_use", "id": "call_o", "name": "bash", "input": {"command": "ls"}}]),
        "no thinking blocks from an OpenAI model"
    );
    assert_eq!(reply["stop_reason"], "tool_use");
    let answer = post(
        &setup,
        "/v1/messages",
        Auth::ApiKey(TOKEN),
        &claude_request(prompt.clone(), false),
    )
    .await;
    assert_eq!(
        answer.json()["content"][0]["input"],
        json!({}),
        "broken JSON"
    );

    let mut history = prompt.as_array().unwrap().clone();
    history.extend([
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "x", "signature": "not for OpenAI"},
            {"type": "tool_use", "id": "call_o", "name": "Bash", "input": {"command": "ls"}}]}),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_o",
             "content": [{"type": "text", "text": "permission denied"}], "is_error": true},
            {"type": "text", "text": "keep going"}]}),
    ]);
    post(
        &setup,
        "/v1/messages",
        Auth::ApiKey(TOKEN),
        &claude_request(json!(history), false),
    )
    .await;
    let sent = setup.upstream.requests_to(Route::Chat);
    let messages = &sent[2].body["messages"];
    assert_eq!(messages[2]["tool_calls"][0]["id"], "call_o");
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "call_o", "content": "Error: permission denied"})
    );
    assert_eq!(
        messages[4],
        json!({"role": "user", "content": "keep going"})
    );
    let exchanges = finish(setup).await;
    assert_eq!(
        exchanges[1].calls[0].arguments, "{\"command\": \"ls",
        "what the model wrote is kept"
    );
}

#[tokio::test]
async fn a_slow_model_gets_pings_after_message_start() {
    let setup = start(Upstream::Anthropic, Budget::default()).await;
    setup.upstream.delay_answers(Duration::from_millis(5600));
    let body = claude_request(json!([{"role": "user", "content": "hi"}]), true);
    let sent = Instant::now();
    let mut response = http()
        .post(format!("{}/v1/messages", setup.url))
        .header("x-api-key", TOKEN)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut chunks = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        chunks.push((sent.elapsed(), String::from_utf8(chunk.to_vec()).unwrap()));
    }
    let (first_at, first) = &chunks[0];
    assert!(first.starts_with("event: message_start"), "{first}");
    assert!(
        *first_at < Duration::from_secs(2),
        "sent before the model answers"
    );
    let text: String = chunks.iter().map(|(_, c)| c.as_str()).collect();
    let ping = text.find("event: ping").expect("a ping while waiting");
    assert!(ping < text.find("content_block_start").unwrap());
    assert!(text.contains("\"text\":\"reply 0\""));
    finish(setup).await;
}

#[tokio::test]
async fn serves_on_a_unix_socket() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.sock");
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let logged = Arc::default();
    let gateway = Gateway::start(
        config(
            client(Upstream::OpenAi, &server),
            Budget::default(),
            &logged,
        ),
        listener,
    );
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).to_string();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {TOKEN}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::UnixStream::connect(&path).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"content\":\"reply 0\""), "{answer}");
    let exchanges = gateway.shutdown().await;
    assert_eq!(exchanges.len(), 1);
    assert_eq!(logged.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn the_placeholder_token_is_required() {
    let setup = start(Upstream::OpenAi, Budget::default()).await;
    let chat = json!({"messages": [{"role": "user", "content": "hi"}]});
    let answer = post(&setup, "/v1/chat/completions", Auth::None, &chat).await;
    assert_eq!(answer.status, 401);
    assert_eq!(answer.json()["error"]["code"], "invalid_api_key");
    let answer = post(&setup, "/v1/chat/completions", Auth::Bearer("wrong"), &chat).await;
    assert_eq!(answer.status, 401);
    // The real key is no better than any other wrong one.
    let answer = post(&setup, "/v1/chat/completions", Auth::Bearer(KEY), &chat).await;
    assert_eq!(answer.status, 401);
    let messages = claude_request(json!([{"role": "user", "content": "hi"}]), false);
    let answer = post(&setup, "/v1/messages", Auth::ApiKey("wrong"), &messages).await;
    assert_eq!(answer.status, 401);
    assert_eq!(answer.json()["error"]["type"], "authentication_error");
    assert!(setup.upstream.requests().is_empty());
    let answer = post(&setup, "/v1/chat/completions", Auth::ApiKey(TOKEN), &chat).await;
    assert_eq!(answer.status, 200);
    let answer = send(
        &setup,
        reqwest::Method::GET,
        "/v1/models",
        Auth::Bearer(TOKEN),
        "",
    )
    .await;
    assert_eq!(answer.json()["data"][0]["id"], SERVED);
    assert_eq!(setup.upstream.requests().len(), 1);
    let exchanges = finish(setup).await;
    assert_eq!(
        exchanges.len(),
        1,
        "refused before any protocol: no exchange"
    );
}

#[tokio::test]
async fn probes_unknown_routes_and_bad_bodies() {
    let setup = start(Upstream::OpenAi, Budget::default()).await;
    for path in ["/", "/v1/messages", "/anything"] {
        let answer = send(&setup, reqwest::Method::HEAD, path, Auth::None, "").await;
        assert_eq!(
            (answer.status, answer.text.as_str()),
            (200, ""),
            "HEAD {path}"
        );
    }
    let answer = post(
        &setup,
        "/v1beta/models/gemini:generateContent",
        Auth::Bearer(TOKEN),
        &json!({}),
    )
    .await;
    assert_eq!(answer.status, 404);
    assert!(answer.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("/v1beta/models"));
    let answer = send(
        &setup,
        reqwest::Method::GET,
        "/v1/responses",
        Auth::Bearer(TOKEN),
        "",
    )
    .await;
    assert_eq!(answer.status, 404, "a known path with another method");
    assert!(answer.json()["error"].is_object());

    let answer = send(
        &setup,
        reqwest::Method::POST,
        "/v1/responses",
        Auth::Bearer(TOKEN),
        "{\"input\": ",
    )
    .await;
    assert_eq!(answer.status, 400);
    let message = answer.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("not JSON"), "{message}");
    let answer = post(
        &setup,
        "/v1/messages",
        Auth::ApiKey(TOKEN),
        &json!({"model": "claude", "max_tokens": 5}),
    )
    .await;
    assert_eq!(answer.status, 400);
    let error = answer.json();
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["type"], "invalid_request_error");
    assert!(error["error"]["message"]
        .as_str()
        .unwrap()
        .contains("`messages` is missing"));
    let answer = post(
        &setup,
        "/v1/chat/completions",
        Auth::Bearer(TOKEN),
        &json!({"messages": [{"role": "user", "content": 5}]}),
    )
    .await;
    let message = answer.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("`messages[0].content` must be"),
        "{message}"
    );

    let count = claude_request(json!([{"role": "user", "content": "x".repeat(400)}]), false);
    let answer = post(
        &setup,
        "/v1/messages/count_tokens?beta=true",
        Auth::ApiKey(TOKEN),
        &count,
    )
    .await;
    let tokens = answer.json()["input_tokens"].as_u64().unwrap();
    assert!((100..200).contains(&tokens), "{tokens}");

    assert!(setup.upstream.requests().is_empty());
    assert_eq!(
        *setup.gateway.stopped().borrow(),
        None,
        "bad requests do not stop the episode"
    );
    let exchanges = finish(setup).await;
    assert_eq!(exchanges.len(), 3, "the bad bodies are recorded");
    assert_eq!(
        exchanges[0].request,
        json!("{\"input\": "),
        "as text when not JSON"
    );
    assert!(exchanges
        .iter()
        .all(|e| e.error.is_some() && e.reply.is_none()));
}

#[tokio::test]
async fn the_request_budget_stops_the_gateway() {
    let setup = start(
        Upstream::OpenAi,
        Budget {
            requests: Some(2),
            ..Budget::default()
        },
    )
    .await;
    let chat = json!({"messages": [{"role": "user", "content": "hi"}]});
    for _ in 0..2 {
        assert_eq!(
            post(&setup, "/v1/chat/completions", Auth::Bearer(TOKEN), &chat)
                .await
                .status,
            200
        );
    }
    assert_eq!(*setup.gateway.stopped().borrow(), None);
    let answer = post(&setup, "/v1/chat/completions", Auth::Bearer(TOKEN), &chat).await;
    assert_eq!(answer.status, 400);
    let error = answer.json();
    assert_eq!(error["error"]["type"], "invalid_request_error");
    assert_eq!(
        error["error"]["message"],
        "assay: the episode's request budget is spent"
    );
    assert_eq!(*setup.gateway.stopped().borrow(), Some(Stop::RequestBudget));
    let streamed = codex_request(json!("hi"));
    let answer = post(&setup, "/v1/responses", Auth::Bearer(TOKEN), &streamed).await;
    assert_eq!(answer.status, 400, "refused before a stream opens");
    assert_eq!(setup.upstream.requests().len(), 2);
    let totals = setup.gateway.totals();
    assert_eq!(
        (
            totals.requests,
            totals.usage.prompt_tokens,
            totals.usage.completion_tokens
        ),
        (2, 20, 10)
    );
    let exchanges = finish(setup).await;
    assert_eq!(exchanges.len(), 4);
    assert_eq!(
        exchanges[2].error.as_deref(),
        Some("assay: the episode's request budget is spent")
    );
    assert_eq!(exchanges[2].attempts, 0);
}

#[tokio::test]
async fn the_token_budget_stops_the_gateway() {
    // The mock's answers cost 10 + 5 tokens.
    let setup = start(
        Upstream::Anthropic,
        Budget {
            tokens: Some(15),
            ..Budget::default()
        },
    )
    .await;
    let body = claude_request(json!([{"role": "user", "content": "hi"}]), false);
    assert_eq!(
        post(&setup, "/v1/messages", Auth::ApiKey(TOKEN), &body)
            .await
            .status,
        200
    );
    let mut stopped = setup.gateway.stopped();
    let answer = post(&setup, "/v1/messages", Auth::ApiKey(TOKEN), &body).await;
    assert_eq!(answer.status, 400);
    assert_eq!(
        answer.json()["error"]["message"],
        "assay: the episode's token budget is spent"
    );
    stopped.wait_for(Option::is_some).await.unwrap();
    assert_eq!(*stopped.borrow(), Some(Stop::TokenBudget));
    assert_eq!(setup.upstream.requests().len(), 1);
    finish(setup).await;
}

#[tokio::test]
async fn the_wall_budget_stops_the_gateway_when_it_passes() {
    let setup = start(
        Upstream::OpenAi,
        Budget {
            wall: Some(Duration::from_millis(300)),
            ..Budget::default()
        },
    )
    .await;
    let mut stopped = setup.gateway.stopped();
    let waited = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), stopped.wait_for(Option::is_some))
        .await
        .expect("stopped at the wall budget")
        .unwrap();
    assert!(waited.elapsed() >= Duration::from_millis(250));
    assert_eq!(*stopped.borrow(), Some(Stop::WallBudget));
    let chat = json!({"messages": [{"role": "user", "content": "hi"}]});
    let answer = post(&setup, "/v1/chat/completions", Auth::Bearer(TOKEN), &chat).await;
    assert_eq!(answer.status, 400);
    assert_eq!(
        answer.json()["error"]["message"],
        "assay: the episode's time budget is spent"
    );
    assert!(setup.upstream.requests().is_empty());
    finish(setup).await;
}

fn openai_context_full() -> Reply {
    Reply::openai_error(400, "invalid_request_error", "context_length_exceeded",
        "This model's maximum context length is 8192 tokens. However, you requested 9472 tokens (8192 in the messages, 1280 in the completion).")
}

#[tokio::test]
async fn a_full_context_window_fails_codexs_stream_and_ends_the_episode() {
    let setup = start(Upstream::OpenAi, Budget::default()).await;
    setup.upstream.push(Route::Chat, [openai_context_full()]);
    let answer = post(
        &setup,
        "/v1/responses",
        Auth::Bearer(TOKEN),
        &codex_request(json!("hi")),
    )
    .await;
    assert_eq!(answer.status, 200, "the stream was open");
    let events = events(&answer.text);
    let kinds: Vec<&str> = events
        .iter()
        .map(|(_, d)| d["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.in_progress",
            "response.failed"
        ]
    );
    let failed = &events[2].1["response"];
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"]["code"], "context_length_exceeded");
    assert!(
        !failed.to_string().contains("8192 in the messages"),
        "upstream words stay home"
    );
    assert_eq!(*setup.gateway.stopped().borrow(), Some(Stop::ContextFull));
    // Whatever comes next is refused without asking the model.
    let body = claude_request(json!([{"role": "user", "content": "hi"}]), false);
    let answer = post(&setup, "/v1/messages", Auth::ApiKey(TOKEN), &body).await;
    assert_eq!(answer.status, 400);
    assert_eq!(setup.upstream.requests().len(), 1);
    let exchanges = finish(setup).await;
    let upstream = exchanges[0].upstream_error.as_deref().unwrap();
    assert!(
        upstream.contains("8192 in the messages"),
        "kept in the record: {upstream}"
    );
    assert_eq!(exchanges[0].attempts, 1);
}

#[tokio::test]
async fn a_full_context_window_is_each_protocols_error_when_not_streamed() {
    let setup = start(Upstream::Anthropic, Budget::default()).await;
    setup.upstream.push(
        Route::Messages,
        [Reply::anthropic_error(
            400,
            "invalid_request_error",
            "prompt is too long: 208310 tokens > 200000 maximum",
        )],
    );
    let body = claude_request(json!([{"role": "user", "content": "hi"}]), false);
    let answer = post(&setup, "/v1/messages", Auth::ApiKey(TOKEN), &body).await;
    assert_eq!(answer.status, 400);
    let error = answer.json();
    assert_eq!(error["error"]["type"], "invalid_request_error");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("prompt is too long: "), "{message}");
    assert_eq!(*setup.gateway.stopped().borrow(), Some(Stop::ContextFull));
    finish(setup).await;

    let setup = start(Upstream::OpenAi, Budget::default()).await;
    setup.upstream.push(Route::Chat, [openai_context_full()]);
    let mut body = codex_request(json!("hi"));
    body["stream"] = json!(false);
    let answer = post(&setup, "/v1/responses", Auth::Bearer(TOKEN), &body).await;
    assert_eq!(answer.status, 400);
    let error = answer.json();
    assert_eq!(error["error"]["code"], "context_length_exceeded");
    assert_eq!(error["error"]["type"], "invalid_request_error");
    finish(setup).await;
}

#[tokio::test]
async fn a_failing_model_ends_the_episode_without_its_words_reaching_the_agent() {
    let setup = start(Upstream::OpenAi, Budget::default()).await;
    setup.upstream.push(
        Route::Chat,
        [Reply::openai_error(
            401,
            "invalid_request_error",
            "invalid_api_key",
            &format!(
                "Incorrect API key provided: {KEY}. You can find your API key at platform.example."
            ),
        )],
    );
    let body = claude_request(json!([{"role": "user", "content": "hi"}]), true);
    let answer = post(&setup, "/v1/messages", Auth::ApiKey(TOKEN), &body).await;
    let events = events(&answer.text);
    let (name, error) = events.last().unwrap();
    assert_eq!(name.as_deref(), Some("error"));
    assert_eq!(error["error"]["type"], "api_error");
    assert!(!answer.text.contains("Incorrect API key"));
    assert_eq!(*setup.gateway.stopped().borrow(), Some(Stop::ModelFailed));
    let chat = json!({"messages": [{"role": "user", "content": "hi"}]});
    let answer = post(&setup, "/v1/chat/completions", Auth::Bearer(TOKEN), &chat).await;
    assert_eq!(answer.status, 400, "after the stop, refused as ended");
    assert_eq!(setup.upstream.requests().len(), 1);
    let exchanges = finish(setup).await;
    let upstream = exchanges[0].upstream_error.as_deref().unwrap();
    assert!(
        upstream.contains("HTTP 401") && upstream.contains("<redacted>"),
        "{upstream}"
    );
}

#[tokio::test]
async fn a_model_failure_is_a_bad_gateway_when_not_streamed() {
    let setup = start(Upstream::OpenAi, Budget::default()).await;
    setup
        .upstream
        .push(Route::Chat, [Reply::raw(500, "upstream exploded")]);
    let chat = json!({"messages": [{"role": "user", "content": "hi"}]});
    let answer = post(&setup, "/v1/chat/completions", Auth::Bearer(TOKEN), &chat).await;
    assert_eq!(answer.status, 502);
    assert_eq!(answer.json()["error"]["type"], "server_error");
    assert!(!answer.text.contains("exploded"));
    assert_eq!(*setup.gateway.stopped().borrow(), Some(Stop::ModelFailed));
    finish(setup).await;
}

#[tokio::test]
async fn concurrent_requests_are_numbered_as_received() {
    let setup = start(Upstream::Anthropic, Budget::default()).await;
    setup.upstream.delay_answers(Duration::from_millis(300));
    let body = claude_request(json!([{"role": "user", "content": "hi"}]), false);
    let first = post(&setup, "/v1/messages", Auth::ApiKey(TOKEN), &body);
    let side = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut side = body.clone();
        side["model"] = json!("claude-haiku-4-5");
        post(&setup, "/v1/messages", Auth::ApiKey(TOKEN), &side).await
    };
    let (a, b) = tokio::join!(first, side);
    assert_eq!((a.status, b.status), (200, 200));
    let totals = setup.gateway.totals();
    assert_eq!((totals.requests, totals.usage.prompt_tokens), (2, 20));
    let exchanges = finish(setup).await;
    assert_eq!(exchanges[0].model_asked, "claude-sonnet-4-5");
    assert_eq!(exchanges[1].model_asked, "claude-haiku-4-5");
}

#[tokio::test]
async fn shutdown_ends_requests_still_waiting_for_the_model() {
    let setup = start(Upstream::OpenAi, Budget::default()).await;
    setup.upstream.delay_answers(Duration::from_secs(30));
    let url = setup.url.clone();
    let waiting = tokio::spawn(async move {
        let response = http()
            .post(format!("{url}/v1/responses"))
            .bearer_auth(TOKEN)
            .body(codex_request(json!("hi")).to_string())
            .send()
            .await
            .unwrap();
        response.text().await.unwrap()
    });
    while setup.upstream.requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let asked = Instant::now();
    let exchanges = setup.gateway.shutdown().await;
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "not held by the model"
    );
    assert_eq!(
        exchanges[0].error.as_deref(),
        Some("assay: the gateway is shutting down")
    );
    let text = waiting.await.unwrap();
    let events = events(&text);
    assert_eq!(events.last().unwrap().1["type"], "response.failed");
}
