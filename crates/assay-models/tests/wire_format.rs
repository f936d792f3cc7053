//! Exact requests sent and responses decoded, against the loopback mock server.

mod mock;

use std::time::Duration;

use assay_models::{ApiKey, Backoff, Client, ClientConfig, Limits, Prompt, Request, RequestError};
use assay_records::TokenUsage;
use mock::{MockServer, Reply, Route};
use serde_json::json;

fn client(spec: &str, base: String, key: Option<&str>) -> Client {
    Client::new(ClientConfig {
        spec: spec.parse().unwrap(),
        base_url: Some(base),
        api_key: key.map(|k| ApiKey::new(k.to_string())),
        request_timeout: Duration::from_secs(10),
        retries: 2,
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

fn chat(user: &str) -> Request {
    Request {
        prompt: Prompt::user(user),
        n: 1,
        temperature: 0.0,
        top_p: None,
        max_tokens: 1280,
        stop: Vec::new(),
        frequency_penalty: None,
        presence_penalty: None,
    }
}

/// More stop strings than OpenAI's limit of four, with special tokens and newlines: they reach
/// the server unchanged (compatible servers take any number).
fn many_stops() -> Vec<String> {
    (0..11)
        .map(|i| match i % 3 {
            0 => format!("<|stop{i}|>"),
            1 => format!("\nstop {i}("),
            _ => format!("</s{i}>"),
        })
        .collect()
}

#[tokio::test]
async fn openai_chat_greedy_sends_the_minimal_body() {
    let server = MockServer::start().await;
    let client = client(
        "openai:gpt-4o-mini",
        server.openai_base(),
        Some("sk-test-123"),
    );
    let response = client.generate(&chat("Write a function.")).await.unwrap();

    let requests = server.requests_to(Route::Chat);
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    // Custom base URL: `max_tokens`; greedy: no `n`; `top_p` and `stop` absent.
    assert_eq!(
        request.body,
        json!({
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": "Write a function."}],
            "temperature": 0.0,
            "max_tokens": 1280,
        })
    );
    assert_eq!(request.header("authorization"), Some("Bearer sk-test-123"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    let agent = request.header("user-agent").unwrap();
    assert_eq!(agent, concat!("assay/", env!("CARGO_PKG_VERSION")));

    assert_eq!(response.texts, ["reply 0"]);
    assert_eq!(response.finish_reasons, [Some("stop".to_string())]);
    assert_eq!(
        response.usage,
        TokenUsage {
            prompt_tokens: 10,
            completion_tokens: 5,
            reasoning_tokens: 0,
        }
    );
    assert_eq!(response.attempts, 1);
}

#[tokio::test]
async fn openai_chat_sampling_sends_n_and_top_p_and_orders_choices() {
    let server = MockServer::start().await;
    // Choices out of order, one filtered with null content.
    server.push(
        Route::Chat,
        [Reply::ok(json!({
            "choices": [
                {"index": 2, "message": {"role": "assistant", "content": "c"}, "finish_reason": "length"},
                {"index": 0, "message": {"role": "assistant", "content": "a"}, "finish_reason": "stop"},
                {"index": 1, "message": {"role": "assistant", "content": null}, "finish_reason": "content_filter"},
            ],
            "usage": {"prompt_tokens": 20, "completion_tokens": 30, "total_tokens": 50},
        }))],
    );
    let client = client("openai:gpt-4o-mini", server.openai_base(), Some("sk-test"));
    let request = Request {
        n: 3,
        temperature: 0.8,
        top_p: Some(0.95),
        stop: vec!["\nif __name__".into()],
        frequency_penalty: None,
        presence_penalty: None,
        ..chat("p")
    };
    let response = client.generate(&request).await.unwrap();

    assert_eq!(
        server.requests_to(Route::Chat)[0].body,
        json!({
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": "p"}],
            "n": 3,
            "temperature": 0.8,
            "top_p": 0.95,
            "max_tokens": 1280,
            "stop": ["\nif __name__"],
        })
    );
    assert_eq!(response.texts, ["a", "", "c"]);
    assert_eq!(
        response.finish_reasons,
        [Some("stop"), Some("content_filter"), Some("length")].map(|r| r.map(String::from))
    );
    assert_eq!(response.usage.completion_tokens, 30);
}

#[tokio::test]
async fn openai_without_key_on_a_custom_base_sends_no_authorization() {
    let server = MockServer::start().await;
    let client = client("openai:local-model", server.openai_base(), None);
    client.generate(&chat("p")).await.unwrap();
    assert_eq!(server.requests()[0].header("authorization"), None);
}

#[tokio::test]
async fn openai_reasoning_models_get_no_token_limit_and_no_sampling_params() {
    let server = MockServer::start().await;
    for model in ["o3-mini", "gpt-5", "deepseek-reasoner"] {
        let client = client(&format!("openai:{model}"), server.openai_base(), Some("k"));
        let request = Request {
            temperature: 0.8,
            top_p: Some(0.95),
            ..chat("p")
        };
        client.generate(&request).await.unwrap();
    }
    let bodies: Vec<_> = server.requests().into_iter().map(|r| r.body).collect();
    for (body, model) in bodies.iter().zip(["o3-mini", "gpt-5", "deepseek-reasoner"]) {
        assert_eq!(
            *body,
            json!({
                "model": model,
                "messages": [{"role": "user", "content": "p"}],
            })
        );
    }
}

#[tokio::test]
async fn openai_completions_send_prompt_and_all_stop_strings() {
    let server = MockServer::start().await;
    server.push(Route::Completions, [Reply::completion(&["    return 1\n"])]);
    let client = client("openai:Qwen/Qwen2.5-Coder-7B", server.openai_base(), None);
    let request = Request {
        prompt: Prompt::Completion {
            prompt: "def f():\n".into(),
        },
        stop: many_stops(),
        frequency_penalty: None,
        presence_penalty: None,
        ..chat("")
    };
    let response = client.generate(&request).await.unwrap();

    let recorded = server.requests_to(Route::Completions);
    assert_eq!(recorded.len(), 1);
    assert_eq!(
        recorded[0].body,
        json!({
            "model": "Qwen/Qwen2.5-Coder-7B",
            "prompt": "def f():\n",
            "max_tokens": 1280,
            "temperature": 0.0,
            "stop": many_stops(),
        })
    );
    assert_eq!(response.texts, ["    return 1\n"]);
    assert_eq!(response.finish_reasons, [Some("stop".to_string())]);
}

#[tokio::test]
async fn anthropic_sends_messages_body_and_headers() {
    let server = MockServer::start().await;
    server.push(
        Route::Messages,
        [Reply::ok(json!({
            "type": "message", "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "let me see", "signature": "sig"},
                {"type": "text", "text": "def task_func():"},
                {"type": "text", "text": "\n    return 1"},
            ],
            "stop_reason": "stop_sequence",
            "usage": {"input_tokens": 42, "output_tokens": 7},
        }))],
    );
    let client = client(
        "anthropic:claude-sonnet-4-5",
        server.url(),
        Some("sk-ant-test"),
    );
    let stops: Vec<String> = many_stops().into_iter().take(6).collect();
    let request = Request {
        stop: stops.clone(),
        frequency_penalty: None,
        presence_penalty: None,
        ..chat("Complete this.")
    };
    let response = client.generate(&request).await.unwrap();

    let recorded = server.requests_to(Route::Messages);
    assert_eq!(recorded.len(), 1);
    assert_eq!(
        recorded[0].body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 1280,
            "messages": [{"role": "user", "content": "Complete this."}],
            "temperature": 0.0,
            "stop_sequences": stops,
        })
    );
    assert_eq!(recorded[0].header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(recorded[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(recorded[0].header("content-type"), Some("application/json"));
    assert_eq!(recorded[0].header("authorization"), None);

    assert_eq!(response.texts, ["def task_func():\n    return 1"]);
    assert_eq!(response.finish_reasons, [Some("stop_sequence".to_string())]);
    assert_eq!(
        response.usage,
        TokenUsage {
            prompt_tokens: 42,
            completion_tokens: 7,
            reasoning_tokens: 0,
        }
    );
}

#[tokio::test]
async fn anthropic_n_samples_are_n_requests_with_usage_summed() {
    let server = MockServer::start().await;
    server.push(
        Route::Messages,
        [
            Reply::message("x"),
            Reply::message("y"),
            Reply::message("z"),
        ],
    );
    let client = client("anthropic:claude-haiku-4-5", server.url(), Some("k"));
    let request = Request {
        n: 3,
        temperature: 0.8,
        top_p: Some(0.95),
        ..chat("p")
    };
    let response = client.generate(&request).await.unwrap();

    let recorded = server.requests_to(Route::Messages);
    assert_eq!(recorded.len(), 3);
    for r in &recorded {
        assert_eq!(
            r.body,
            json!({
                "model": "claude-haiku-4-5",
                "max_tokens": 1280,
                "messages": [{"role": "user", "content": "p"}],
                "temperature": 0.8,
                "top_p": 0.95,
            })
        );
    }
    // Identical requests: which reply answered which is the server's business; all must be there.
    let mut texts = response.texts.clone();
    texts.sort();
    assert_eq!(texts, ["x", "y", "z"]);
    assert_eq!(response.finish_reasons.len(), 3);
    assert_eq!(
        response.usage,
        TokenUsage {
            prompt_tokens: 30,
            completion_tokens: 15,
            reasoning_tokens: 0,
        }
    );
    assert_eq!(response.attempts, 1);
}

#[tokio::test]
async fn anthropic_refuses_raw_completion_prompts_up_front() {
    let server = MockServer::start().await;
    let client = client("anthropic:claude-haiku-4-5", server.url(), Some("k"));
    let request = Request {
        prompt: Prompt::Completion { prompt: "x".into() },
        ..chat("")
    };
    match client.generate(&request).await {
        Err(RequestError::Fatal {
            status: None,
            message,
        }) => {
            assert!(message.contains("completions"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert!(server.requests().is_empty());
}

#[test]
fn mock_on_its_own_thread_serves_synchronous_callers() {
    let server = MockServer::start_on_thread();
    server.respond_with(Route::Chat, |body| {
        let prompt = body["messages"][0]["content"].as_str().unwrap_or("");
        Reply::chat(&[&format!("echo: {prompt}")])
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = client("openai:m", server.openai_base(), None);
    let response = runtime.block_on(client.generate(&chat("hi"))).unwrap();
    assert_eq!(response.texts, ["echo: hi"]);
}

/// An agent's conversation: a system prompt, two user turns, a tool call and its result.
fn conversation() -> Request {
    use assay_models::{Conversation, Tool, ToolCall, Turn};
    Request {
        prompt: Prompt::Chat(Conversation {
            system: Some("You run code.".into()),
            turns: vec![
                Turn::User("[INFO] files".into()),
                Turn::User("Sum it.".into()),
                Turn::Assistant {
                    text: "Let me run it.".into(),
                    calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "python".into(),
                        arguments: r#"{"code": "1 + 1"}"#.into(),
                    }],
                    thinking_blocks: Vec::new(),
                },
                Turn::ToolResult {
                    call_id: "call_1".into(),
                    content: "2".into(),
                },
            ],
            tools: vec![Tool {
                name: "python".into(),
                description: "Runs a cell.".into(),
                parameters: json!({"type": "object", "properties": {"code": {"type": "string"}}}),
            }],
        }),
        n: 1,
        temperature: 0.2,
        top_p: Some(0.5),
        max_tokens: 1000,
        stop: Vec::new(),
        frequency_penalty: Some(1.02),
        presence_penalty: None,
    }
}

#[tokio::test]
async fn openai_conversations_carry_the_system_prompt_tools_and_their_calls() {
    let server = MockServer::start().await;
    server.push(
        Route::Chat,
        [Reply::ok(json!({
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "call_2", "type": "function",
                                "function": {"name": "python", "arguments": "{\"code\": \"x\"}"}}],
            }}],
        }))],
    );
    let client = client("openai:gpt-4o", server.openai_base(), Some("k"));
    let response = client.generate(&conversation()).await.unwrap();
    let body = &server.requests_to(Route::Chat)[0].body;
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You run code."},
            {"role": "user", "content": "[INFO] files"},
            {"role": "user", "content": "Sum it."},
            {"role": "assistant", "content": "Let me run it.", "tool_calls": [{"id": "call_1",
              "type": "function", "function": {"name": "python", "arguments": "{\"code\": \"1 + 1\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "2"},
        ])
    );
    assert_eq!(body["tools"][0]["function"]["name"], "python");
    assert_eq!(body["frequency_penalty"], 1.02);
    assert_eq!(
        (body["temperature"].as_f64(), body["top_p"].as_f64()),
        (Some(0.2), Some(0.5))
    );
    assert_eq!(response.texts, [""]);
    let call = &response.tool_calls[0][0];
    assert_eq!(
        (
            call.id.as_str(),
            call.name.as_str(),
            call.arguments.as_str()
        ),
        ("call_2", "python", "{\"code\": \"x\"}")
    );
}

#[tokio::test]
async fn anthropic_conversations_use_system_tool_use_and_tool_result_blocks() {
    let server = MockServer::start().await;
    server.push(
        Route::Messages,
        [Reply::ok(json!({
            "type": "message", "role": "assistant", "stop_reason": "tool_use",
            "content": [{"type": "text", "text": "Running."},
                        {"type": "tool_use", "id": "toolu_2", "name": "python", "input": {"code": "y"}}],
            "usage": {"input_tokens": 7, "output_tokens": 3},
        }))],
    );
    let client = client("anthropic:claude-sonnet-4-5", server.url(), Some("k"));
    let response = client.generate(&conversation()).await.unwrap();
    let body = &server.requests_to(Route::Messages)[0].body;
    assert_eq!(body["system"], "You run code.");
    assert_eq!(
        body["messages"][2],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Let me run it."},
            {"type": "tool_use", "id": "call_1", "name": "python", "input": {"code": "1 + 1"}}]})
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "2"}]})
    );
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    assert!(
        body.get("frequency_penalty").is_none(),
        "Anthropic has none"
    );
    assert_eq!(response.texts, ["Running."]);
    assert_eq!(response.tool_calls[0][0].arguments, "{\"code\":\"y\"}");
}
