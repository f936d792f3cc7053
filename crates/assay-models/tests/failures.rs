//! Failure injection: what is retried, how long we wait, what fails for good, and that the API
//! key never leaks.

mod mock;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use assay_models::{
    ApiKey, Backoff, Client, ClientConfig, ConfigError, Limits, Prompt, Request, RequestError,
};
use mock::{MockServer, Reply, Route};

const KEY: &str = "sk-secret-0123456789";

fn config(spec: &str, base: Option<String>) -> ClientConfig {
    ClientConfig {
        spec: spec.parse().unwrap(),
        base_url: base,
        api_key: Some(ApiKey::new(KEY.into())),
        request_timeout: Duration::from_secs(10),
        retries: 3,
        backoff: Backoff {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(5),
        },
        limits: Limits::default(),
        reasoning: Default::default(),
        extra_body: Default::default(),
    }
}

fn openai(server: &MockServer) -> Client {
    Client::new(config("openai:gpt-4o-mini", Some(server.openai_base()))).unwrap()
}

fn chat(n: u32) -> Request {
    Request {
        prompt: Prompt::user("p"),
        n,
        temperature: 0.0,
        top_p: None,
        max_tokens: 64,
        stop: Vec::new(),
        frequency_penalty: None,
        presence_penalty: None,
    }
}

fn gap(server: &MockServer) -> Duration {
    let requests = server.requests();
    requests[1].received - requests[0].received
}

#[tokio::test]
async fn retry_after_seconds_is_honoured() {
    let server = MockServer::start().await;
    server.push(
        Route::Chat,
        [
            Reply::openai_error(429, "requests", "rate_limit_exceeded", "Rate limit reached")
                .with_header("retry-after", "1"),
        ],
    );
    let delays = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&delays);
    let client = openai(&server).on_retry(move |e| seen.lock().unwrap().push(e.delay));
    let response = client.generate(&chat(1)).await.unwrap();
    assert_eq!(response.attempts, 2);
    // The wait chosen is the server's, not our backoff (1 to 5 ms here); and it was waited:
    // the second request came at least that long after the first was received (lower
    // bounds, which a loaded machine can only make easier to meet).
    assert_eq!(*delays.lock().unwrap(), [Duration::from_secs(1)]);
    assert!(gap(&server) >= Duration::from_secs(1), "{:?}", gap(&server));
    assert!(response.latency >= Duration::from_secs(1));
}

#[tokio::test]
async fn retry_after_ms_is_honoured() {
    let server = MockServer::start().await;
    server.push(
        Route::Messages,
        [
            Reply::anthropic_error(529, "overloaded_error", "Overloaded")
                .with_header("retry-after-ms", "250"),
        ],
    );
    let delays = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&delays);
    let client = Client::new(config("anthropic:claude-haiku-4-5", Some(server.url())))
        .unwrap()
        .on_retry(move |e| seen.lock().unwrap().push(e.delay));
    let response = client.generate(&chat(1)).await.unwrap();
    assert_eq!(response.attempts, 2);
    // As above: the server's wait was chosen, then waited. The mock stamps the first request
    // before answering it and the second on arrival, after the client's 250 ms sleep: load
    // can only lengthen the gap.
    assert_eq!(*delays.lock().unwrap(), [Duration::from_millis(250)]);
    assert!(
        gap(&server) >= Duration::from_millis(250),
        "{:?}",
        gap(&server)
    );
}

#[tokio::test]
async fn server_error_then_success_reports_the_retry() {
    let server = MockServer::start().await;
    server.push(
        Route::Chat,
        [Reply::openai_error(500, "server_error", "", "boom")],
    );
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let client = openai(&server).on_retry(move |event| {
        seen.lock()
            .unwrap()
            .push((event.attempt, event.max_attempts, event.cause.to_string()));
    });
    let response = client.generate(&chat(1)).await.unwrap();
    assert_eq!(response.attempts, 2);
    assert_eq!(response.texts, ["reply 0"]);
    assert_eq!(
        *events.lock().unwrap(),
        [(1, 4, "HTTP 500: boom (server_error)".to_string())]
    );
}

#[tokio::test]
async fn a_hanging_server_times_out_and_is_retried() {
    let server = MockServer::start().await;
    server.push(Route::Chat, [Reply::Hang]);
    let client = Client::new(ClientConfig {
        request_timeout: Duration::from_millis(300),
        ..config("openai:m", Some(server.openai_base()))
    })
    .unwrap();
    let causes = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&causes);
    let client = client.on_retry(move |e| seen.lock().unwrap().push(e.cause.to_string()));
    let started = Instant::now();
    let response = client.generate(&chat(1)).await.unwrap();
    assert_eq!(response.attempts, 2);
    assert_eq!(response.texts, ["reply 0"]);
    // Why the first attempt ended: our timeout, not the server giving up (after
    // `mock::HANG`, with a 504, which would be retried just the same).
    assert_eq!(
        *causes.lock().unwrap(),
        ["no complete response within 300ms"]
    );
    // And when: not before the timeout, and long before the hung reply would have come. The
    // server saw the retry while the first request still hung.
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(gap(&server) < mock::HANG, "{:?}", gap(&server));
}

#[tokio::test]
async fn transient_transport_and_body_failures_are_retried() {
    for (reply, expected_cause) in [
        (
            Reply::raw(200, "{\"choices\": ["),
            "unexpected response body (EOF",
        ),
        (
            Reply::raw(200, "{\"object\": \"list\"}"),
            "unexpected response body (missing field `choices`",
        ),
        (Reply::Reset, "request failed: "),
        (
            Reply::Truncated,
            "HTTP 200, then error reading the response body: ",
        ),
        (Reply::raw(408, ""), "HTTP 408: Request Timeout"),
        (Reply::raw(409, ""), "HTTP 409: Conflict"),
        (
            Reply::raw(502, "<html>bad gateway</html>"),
            "HTTP 502: <html>bad gateway</html>",
        ),
    ] {
        let server = MockServer::start().await;
        server.push(Route::Chat, [reply]);
        let causes = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&causes);
        let client =
            openai(&server).on_retry(move |e| seen.lock().unwrap().push(e.cause.to_string()));
        let response = client.generate(&chat(1)).await;
        let response = response.unwrap_or_else(|e| panic!("{expected_cause}: {e}"));
        assert_eq!(response.attempts, 2, "{expected_cause}");
        assert_eq!(response.texts, ["reply 0"], "{expected_cause}");
        let causes = causes.lock().unwrap();
        assert_eq!(causes.len(), 1);
        assert!(causes[0].starts_with(expected_cause), "{causes:?}");
    }
}

#[tokio::test]
async fn a_server_ignoring_n_gives_what_it_has_without_retrying() {
    let server = MockServer::start().await;
    server.respond_with(Route::Chat, |_| Reply::chat(&["only one"]));
    let response = openai(&server).generate(&chat(3)).await.unwrap();
    assert_eq!(response.texts, ["only one"]);
    assert_eq!(response.attempts, 1);
    server.push(Route::Chat, [Reply::ok(serde_json::json!({"choices": []}))]);
    let response = openai(&server).generate(&chat(1)).await.unwrap();
    assert_eq!(
        response.attempts, 2,
        "no choice at all is malformed: retried"
    );
}

#[tokio::test]
async fn exhausted_retries_fail_with_attempts_and_last_cause() {
    let server = MockServer::start().await;
    server.respond_with(Route::Messages, |_| {
        Reply::anthropic_error(529, "overloaded_error", "Overloaded")
    });
    let client = Client::new(ClientConfig {
        retries: 6,
        ..config("anthropic:claude-haiku-4-5", Some(server.url()))
    })
    .unwrap();
    match client.generate(&chat(1)).await {
        Err(RequestError::Failed { attempts, message }) => {
            assert_eq!(attempts, 7);
            assert_eq!(
                message,
                "gave up after 7 attempts: HTTP 529: Overloaded (overloaded_error)"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests().len(), 7);
}

#[tokio::test]
async fn connection_refused_is_retried_then_fails() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let client = Client::new(ClientConfig {
        retries: 1,
        ..config("openai:m", Some(format!("http://127.0.0.1:{port}/v1")))
    })
    .unwrap();
    match client.generate(&chat(1)).await {
        Err(RequestError::Failed { attempts, message }) => {
            assert_eq!(attempts, 2);
            assert!(
                message.starts_with("gave up after 2 attempts: connection failed"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn bad_request_fails_at_once() {
    let server = MockServer::start().await;
    server.push(
        Route::Chat,
        [Reply::openai_error(
            400,
            "invalid_request_error",
            "integer_below_min_value",
            "Invalid 'n': integer below minimum value.",
        )],
    );
    match openai(&server).generate(&chat(1)).await {
        Err(RequestError::Failed { attempts, message }) => {
            assert_eq!(attempts, 1);
            assert_eq!(
                message,
                "HTTP 400: Invalid 'n': integer below minimum value. (integer_below_min_value)"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn unauthorized_is_fatal_and_never_shows_the_key() {
    let server = MockServer::start().await;
    // OpenAI echoes (part of) the key it was sent.
    server.push(
        Route::Chat,
        [Reply::openai_error(
            401,
            "invalid_request_error",
            "invalid_api_key",
            &format!("Incorrect API key provided: {KEY}."),
        )],
    );
    let err = openai(&server).generate(&chat(1)).await.unwrap_err();
    match &err {
        RequestError::Fatal { status, message } => {
            assert_eq!(*status, Some(401));
            assert_eq!(
                message,
                "HTTP 401: Incorrect API key provided: <redacted>. (invalid_api_key) \
                 (check OPENAI_API_KEY)"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(!format!("{err} {err:?}").contains(KEY));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn quota_exhaustion_is_fatal_but_rate_limits_are_not() {
    let server = MockServer::start().await;
    server.push(
        Route::Chat,
        [Reply::openai_error(
            429,
            "insufficient_quota",
            "insufficient_quota",
            "You exceeded your current quota, please check your plan and billing details.",
        )],
    );
    match openai(&server).generate(&chat(1)).await {
        Err(RequestError::Fatal { status, message }) => {
            assert_eq!(status, Some(429));
            assert!(message.contains("exceeded your current quota"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests().len(), 1);

    server.push(
        Route::Messages,
        [Reply::anthropic_error(
            400,
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API.",
        )],
    );
    let client = Client::new(config("anthropic:claude-haiku-4-5", Some(server.url()))).unwrap();
    assert!(matches!(
        client.generate(&chat(1)).await,
        Err(RequestError::Fatal {
            status: Some(400),
            ..
        })
    ));
}

#[tokio::test]
async fn unknown_model_is_fatal() {
    let server = MockServer::start().await;
    server.push(
        Route::Messages,
        [Reply::anthropic_error(
            404,
            "not_found_error",
            "model: claude-nope",
        )],
    );
    let client = Client::new(config("anthropic:claude-nope", Some(server.url()))).unwrap();
    match client.generate(&chat(1)).await {
        Err(RequestError::Fatal { status, message }) => {
            assert_eq!(status, Some(404));
            assert_eq!(message, "HTTP 404: model: claude-nope (not_found_error)");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn one_anthropic_sample_failing_for_good_fails_the_call() {
    let server = MockServer::start().await;
    server.push(
        Route::Messages,
        [Reply::anthropic_error(
            400,
            "invalid_request_error",
            "messages: roles must alternate",
        )],
    );
    let client = Client::new(config("anthropic:claude-haiku-4-5", Some(server.url()))).unwrap();
    match client.generate(&chat(3)).await {
        Err(RequestError::Failed { attempts, message }) => {
            assert_eq!(attempts, 1);
            assert_eq!(
                message,
                "HTTP 400: messages: roles must alternate (invalid_request_error)"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn missing_keys_are_refused_where_required() {
    let without_key = |spec: &str, base: Option<&str>| {
        Client::new(ClientConfig {
            api_key: None,
            ..config(spec, base.map(String::from))
        })
    };
    let err = without_key("openai:gpt-4o", None).err().unwrap();
    assert!(matches!(
        err,
        ConfigError::MissingApiKey {
            env_var: "OPENAI_API_KEY",
            ..
        }
    ));
    assert_eq!(
        err.to_string(),
        "OPENAI_API_KEY is not set: the OpenAI API (api.openai.com) needs an API key; export \
         OPENAI_API_KEY=<your key> first"
    );
    let err = without_key("openai:gpt-4o", Some("https://api.openai.com/v1/"))
        .err()
        .unwrap();
    assert!(matches!(err, ConfigError::MissingApiKey { .. }));
    let err = without_key("anthropic:claude-haiku-4-5", Some("http://127.0.0.1:1"))
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "ANTHROPIC_API_KEY is not set: the Anthropic API needs an API key; export \
         ANTHROPIC_API_KEY=<your key> first"
    );
    // A local OpenAI-compatible server may need none; an empty key counts as none.
    assert!(without_key("openai:local", Some("http://127.0.0.1:8000/v1")).is_ok());
    let empty = Client::new(ClientConfig {
        api_key: Some(ApiKey::new("  ".into())),
        ..config("openai:gpt-4o", None)
    });
    assert!(matches!(empty, Err(ConfigError::MissingApiKey { .. })));

    let bad = Client::new(config("openai:m", Some("localhost:8000".into())));
    assert!(
        matches!(bad, Err(ConfigError::BadBaseUrl { .. })),
        "{:?}",
        bad.err()
    );

    // A key crosses plain http only to loopback.
    let remote = Client::new(config("openai:m", Some("http://10.1.2.3:8000/v1".into())));
    assert_eq!(
        remote.err().unwrap().to_string(),
        "refusing to send OPENAI_API_KEY over plain http to 10.1.2.3: use an https URL, or \
         unset OPENAI_API_KEY for a server that needs no key"
    );
    for local in [
        "http://localhost:8000/v1",
        "http://127.0.0.1:1/v1",
        "http://[::1]:80/v1",
    ] {
        assert!(
            Client::new(config("openai:m", Some(local.into()))).is_ok(),
            "{local}"
        );
    }
    assert!(Client::new(config(
        "openai:m",
        Some("https://openrouter.ai/api/v1".into())
    ))
    .is_ok());
    assert!(without_key("openai:m", Some("http://10.1.2.3:8000/v1")).is_ok());
}

#[test]
fn the_key_never_prints() {
    let key = ApiKey::new(KEY.into());
    assert_eq!(format!("{key}"), "<redacted>");
    assert_eq!(format!("{key:?}"), "<redacted>");
    let config = config("openai:m", None);
    assert!(!format!("{config:?}").contains(KEY));
}

/// Each common server's refusal of a request too long for the model's window, in its real
/// wire form: recognized at once, never retried, the server's words and numbers kept.
#[tokio::test]
async fn a_full_context_window_is_not_retried() {
    let llama_cpp = serde_json::json!({"error": {"code": 400, "message": "request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 4476, "n_ctx": 4096}});
    let tgi = serde_json::json!({"error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 1280 `max_new_tokens`", "error_type": "validation"});
    let vllm = serde_json::json!({"error": {"message": "'max_tokens' or 'max_completion_tokens' is too large: 1280. This model's maximum context length is 2048 tokens and your request has 1000 input tokens (1280 > 2048 - 1000). (parameter=max_tokens, value=1280)", "type": "BadRequestError", "param": null, "code": 400}});
    let cases = [
        (
            "openai",
            Route::Chat,
            Reply::openai_error(400, "invalid_request_error", "context_length_exceeded", "This model's maximum context length is 8192 tokens. However, you requested 9472 tokens (8192 in the messages, 1280 in the completion). Please reduce the length of the messages or completion."),
            (Some(8192), Some(8192), None),
        ),
        ("vllm", Route::Chat, Reply::json(400, vllm), (Some(2048), Some(1000), Some(1048))),
        ("llama.cpp", Route::Chat, Reply::json(400, llama_cpp), (Some(4096), Some(4476), None)),
        (
            "llama-cpp-python",
            Route::Chat,
            Reply::openai_error(500, "internal_server_error", "", "could not broadcast input array from shape (49152,) into shape (0,)"),
            (None, None, None),
        ),
        ("tgi", Route::Chat, Reply::json(422, tgi), (Some(4096), Some(4000), Some(96))),
        (
            "anthropic",
            Route::Messages,
            Reply::anthropic_error(400, "invalid_request_error", "input length and `max_tokens` exceed context limit: 197626 + 8192 > 200000, decrease input length or `max_tokens` and try again"),
            (Some(200000), Some(197626), Some(2374)),
        ),
    ];
    for (server_kind, route, reply, (window, prompt, room)) in cases {
        let server = MockServer::start().await;
        server.push(route, [reply]);
        let client = if route == Route::Messages {
            Client::new(config("anthropic:claude-haiku-4-5", Some(server.url()))).unwrap()
        } else {
            openai(&server)
        };
        let retried = Arc::new(Mutex::new(0));
        let seen = Arc::clone(&retried);
        let client = client.on_retry(move |_| *seen.lock().unwrap() += 1);
        match client.generate(&chat(1)).await {
            Err(RequestError::ContextFull(full)) => {
                assert_eq!(
                    (full.window, full.prompt_tokens, full.room()),
                    (window, prompt, room),
                    "{server_kind}"
                );
                assert!(
                    full.message.starts_with("HTTP "),
                    "{server_kind}: {}",
                    full.message
                );
            }
            other => panic!("{server_kind}: {other:?}"),
        }
        assert_eq!(server.requests().len(), 1, "{server_kind}: sent once");
        assert_eq!(*retried.lock().unwrap(), 0, "{server_kind}");
    }
}
