//! Reasoning models on the wire: the knobs in each provider's request, thinking returned in
//! each provider's fields or written into the text, and reasoning tokens, against the
//! loopback mock server answering in the providers' own shapes.

mod mock;

use std::time::Duration;

use assay_models::{
    ApiKey, Backoff, Client, ClientConfig, ConfigError, Conversation, Limits, Prompt, Request,
    Tool, ToolCall, Turn,
};
use assay_records::{Effort, ReasoningSettings, ThinkingSource};
use mock::{MockServer, Reply, Route};
use serde_json::json;

fn config(spec: &str, base: String, reasoning: ReasoningSettings) -> ClientConfig {
    ClientConfig {
        spec: spec.parse().unwrap(),
        base_url: Some(base),
        api_key: Some(ApiKey::new("k".into())),
        request_timeout: Duration::from_secs(10),
        retries: 0,
        backoff: Backoff {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(5),
        },
        limits: Limits::default(),
        reasoning,
        extra_body: Default::default(),
    }
}

fn client(spec: &str, base: String, reasoning: ReasoningSettings) -> Client {
    Client::new(config(spec, base, reasoning)).unwrap()
}

fn chat(max_tokens: u32) -> Request {
    Request {
        prompt: Prompt::user("Write f."),
        n: 1,
        temperature: 0.0,
        top_p: None,
        max_tokens,
        stop: Vec::new(),
        frequency_penalty: None,
        presence_penalty: None,
    }
}

/// A chat completion whose one message has these fields, with usage that counts reasoning.
fn completion(message: serde_json::Value, finish: &str) -> Reply {
    Reply::ok(json!({
        "id": "c", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 300, "total_tokens": 310,
                  "completion_tokens_details": {"reasoning_tokens": 250}},
    }))
}

#[tokio::test]
async fn vllm_reasoning_content_and_openrouter_reasoning_are_kept_beside_the_answer() {
    let server = MockServer::start().await;
    server.push(
        Route::Chat,
        [
            // vLLM with --reasoning-parser (before 0.10), DeepSeek's API.
            completion(
                json!({"role": "assistant", "content": "def f():\n    return 1",
                       "reasoning_content": "Draft: ```python\ndef f(): return 0\n```"}),
                "stop",
            ),
            // vLLM since 0.10, OpenRouter.
            completion(
                json!({"role": "assistant", "content": "def f():\n    return 2",
                       "reasoning": "Thinking it over."}),
                "stop",
            ),
            // The token limit came while it thought: no answer, the thinking cut.
            completion(
                json!({"role": "assistant", "content": null,
                       "reasoning_content": "Still drafting ```python\nx = 0"}),
                "length",
            ),
        ],
    );
    let client = client(
        "openai:qwen3",
        server.openai_base(),
        ReasoningSettings::default(),
    );
    let first = client.generate(&chat(1280)).await.unwrap();
    assert_eq!(first.texts, ["def f():\n    return 1"]);
    assert_eq!(first.answers, first.texts);
    let thought = first.thinking[0].as_ref().unwrap();
    assert_eq!(thought.source, ThinkingSource::Field);
    assert!(thought.text.starts_with("Draft:") && !thought.cut);
    assert_eq!(first.usage.reasoning_tokens, 250);
    assert_eq!(first.usage.completion_tokens, 300);

    let second = client.generate(&chat(1280)).await.unwrap();
    assert_eq!(
        second.thinking[0].as_ref().unwrap().text,
        "Thinking it over."
    );

    let cut = client.generate(&chat(1280)).await.unwrap();
    assert_eq!(cut.answers, [""]);
    assert!(cut.thinking[0].as_ref().unwrap().cut);
    assert_eq!(cut.thinking_blocks, [Vec::<serde_json::Value>::new()]);
}

#[tokio::test]
async fn thinking_written_into_the_text_is_set_apart_and_the_raw_text_kept() {
    let server = MockServer::start().await;
    let answer = "```python\ndef f():\n    return 1\n```";
    server.push(
        Route::Chat,
        [
            completion(
                json!({"role": "assistant",
                       "content": format!("<think>\n```python\ndef f(): return 0\n```\n</think>\n\n{answer}")}),
                "stop",
            ),
            // The chat template opened the tag: only the closing tag appears.
            completion(
                json!({"role": "assistant", "content": format!("Hmm.\n</think>\n{answer}")}),
                "stop",
            ),
            completion(
                json!({"role": "assistant", "content": "<think>\n```python\ndef f(): return 0\n```\nbut"}),
                "length",
            ),
        ],
    );
    let r1 = client(
        "openai:r1",
        server.openai_base(),
        ReasoningSettings::default(),
    );
    let whole = r1.generate(&chat(1280)).await.unwrap();
    assert!(whole.texts[0].starts_with("<think>"));
    assert_eq!(whole.answers, [answer]);
    let thought = whole.thinking[0].as_ref().unwrap();
    assert_eq!(thought.source, ThinkingSource::Text);
    assert_eq!(thought.text, "```python\ndef f(): return 0\n```");

    let opened = r1.generate(&chat(1280)).await.unwrap();
    assert_eq!(opened.answers, [answer]);
    assert_eq!(opened.thinking[0].as_ref().unwrap().text, "Hmm.");

    let cut = r1.generate(&chat(1280)).await.unwrap();
    assert_eq!(cut.answers, [""]);
    assert!(cut.thinking[0].as_ref().unwrap().cut);

    // Tags switched off: the text is the answer, as the official harness takes it.
    let server = MockServer::start().await;
    server.push(
        Route::Chat,
        [completion(
            json!({"role": "assistant", "content": "<think>x</think>y"}),
            "stop",
        )],
    );
    let none = ReasoningSettings {
        think_tags: Some(Vec::new()),
        ..ReasoningSettings::default()
    };
    let plain = client("openai:r1", server.openai_base(), none);
    let response = plain.generate(&chat(1280)).await.unwrap();
    assert_eq!(response.answers, ["<think>x</think>y"]);
    assert_eq!(response.thinking, [None]);
}

#[tokio::test]
async fn the_effort_reaches_the_request_and_a_model_said_to_reason_gets_no_sampling() {
    let server = MockServer::start().await;
    let reasoning = ReasoningSettings {
        effort: Some(Effort::High),
        ..ReasoningSettings::default()
    };
    // A name that does not tell: sampling parameters still go, with the effort.
    client(
        "openai:gpt-oss-20b",
        server.openai_base(),
        reasoning.clone(),
    )
    .generate(&chat(1280))
    .await
    .unwrap();
    let said = ReasoningSettings {
        reasoning_model: Some(true),
        ..reasoning
    };
    client("openai:my-deployment", server.openai_base(), said)
        .generate(&Request {
            top_p: Some(0.95),
            frequency_penalty: Some(1.0),
            presence_penalty: None,
            ..chat(1280)
        })
        .await
        .unwrap();
    let not = ReasoningSettings {
        reasoning_model: Some(false),
        ..ReasoningSettings::default()
    };
    client("openai:o3-mini", server.openai_base(), not)
        .generate(&chat(1280))
        .await
        .unwrap();
    let bodies: Vec<_> = server
        .requests_to(Route::Chat)
        .into_iter()
        .map(|r| r.body)
        .collect();
    assert_eq!(
        bodies[0],
        json!({"model": "gpt-oss-20b", "messages": [{"role": "user", "content": "Write f."}],
               "temperature": 0.0, "max_tokens": 1280, "reasoning_effort": "high"})
    );
    assert_eq!(
        bodies[1],
        json!({"model": "my-deployment", "messages": [{"role": "user", "content": "Write f."}],
               "reasoning_effort": "high"})
    );
    assert_eq!(bodies[2]["temperature"], 0.0);
    assert_eq!(bodies[2]["max_tokens"], 1280);
}

#[tokio::test]
async fn anthropic_thinking_budget_follows_its_request_rules_and_blocks_come_back_apart() {
    let server = MockServer::start().await;
    server.push(
        Route::Messages,
        [Reply::ok(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
            "content": [
                {"type": "thinking", "thinking": "Draft ```python\nx = 0\n```", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "ENCRYPTED"},
                {"type": "text", "text": "def f():\n    return 1"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 12, "output_tokens": 900},
        }))],
    );
    let reasoning = ReasoningSettings {
        thinking_budget: Some(2048),
        ..ReasoningSettings::default()
    };
    let client = client("anthropic:claude-sonnet-4-5", server.url(), reasoning);
    let response = client
        .generate(&Request {
            temperature: 0.0,
            top_p: Some(0.5),
            ..chat(1280)
        })
        .await
        .unwrap();
    let body = &server.requests_to(Route::Messages)[0].body;
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(body["max_tokens"], 2048 + 1280);
    assert!(body.get("temperature").is_none(), "{body}");
    assert!(body.get("top_p").is_none(), "{body}");
    assert_eq!(response.answers, ["def f():\n    return 1"]);
    let thought = response.thinking[0].as_ref().unwrap();
    assert_eq!(thought.text, "Draft ```python\nx = 0\n```");
    assert_eq!(thought.redacted, 1);
    assert_eq!(response.thinking_blocks[0].len(), 2);
    assert_eq!(response.thinking_blocks[0][0]["signature"], "sig-1");
    assert_eq!(response.usage.completion_tokens, 900);
}

#[tokio::test]
async fn anthropic_tool_use_turns_send_their_signed_thinking_back_unchanged() {
    let server = MockServer::start().await;
    let signed = json!({"type": "thinking", "thinking": "Run it.", "signature": "sig-9"});
    let redacted = json!({"type": "redacted_thinking", "data": "ENC"});
    let chat = Conversation {
        system: None,
        turns: vec![
            Turn::User("Sum it.".into()),
            // A reply without tool calls: its thinking is not sent back.
            Turn::Assistant {
                text: "Let me look.".into(),
                calls: Vec::new(),
                thinking_blocks: vec![
                    json!({"type": "thinking", "thinking": "x", "signature": "s"}),
                ],
            },
            Turn::User("Go on.".into()),
            Turn::Assistant {
                text: String::new(),
                calls: vec![ToolCall {
                    id: "toolu_1".into(),
                    name: "python".into(),
                    arguments: r#"{"code": "1 + 1"}"#.into(),
                }],
                thinking_blocks: vec![signed.clone(), redacted.clone()],
            },
            Turn::ToolResult {
                call_id: "toolu_1".into(),
                content: "2".into(),
            },
        ],
        tools: vec![Tool {
            name: "python".into(),
            description: "Runs a cell.".into(),
            parameters: json!({"type": "object"}),
        }],
    };
    let reasoning = ReasoningSettings {
        thinking_budget: Some(1024),
        ..ReasoningSettings::default()
    };
    client("anthropic:claude", server.url(), reasoning)
        .generate(&Request {
            prompt: Prompt::Chat(chat),
            ..self::chat(1000)
        })
        .await
        .unwrap();
    let body = &server.requests_to(Route::Messages)[0].body;
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": "Let me look."})
    );
    assert_eq!(
        body["messages"][3]["content"],
        json!([signed, redacted,
               {"type": "tool_use", "id": "toolu_1", "name": "python", "input": {"code": "1 + 1"}}])
    );
}

#[test]
fn settings_a_provider_does_not_take_are_refused_before_any_request() {
    let base = "http://127.0.0.1:9/v1".to_string();
    let refused = |spec: &str, reasoning: ReasoningSettings| match Client::new(config(
        spec,
        base.clone(),
        reasoning,
    )) {
        Err(ConfigError::Reasoning(message)) => message,
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("{spec}: accepted"),
    };
    let budget = |tokens| ReasoningSettings {
        thinking_budget: Some(tokens),
        ..ReasoningSettings::default()
    };
    assert!(refused("openai:o3", budget(2048)).contains("--reasoning-effort"));
    assert!(refused("anthropic:claude", budget(512)).contains("at least 1024"));
    let effort = ReasoningSettings {
        effort: Some(Effort::Low),
        ..ReasoningSettings::default()
    };
    assert!(refused("anthropic:claude", effort).contains("--thinking-budget"));
}
