//! An in-process mock of the OpenAI (chat + completions) and Anthropic Messages APIs on
//! 127.0.0.1, scriptable per test and recording every request.
//!
//! Self-contained (axum, tokio, serde_json and std only) so that other crates' tests can reuse
//! it with `#[path = "../../assay-models/tests/mock/mod.rs"] mod mock;`.
//!
//! Each route has a queue of [`Reply`]s consumed one per request; when a queue is empty the
//! route's responder answers (by default a success with texts `reply 0`, `reply 1`, ...). A
//! server can also be made slow ([`MockServer::delay_answers`]) and refuse requests beyond a
//! number in flight ([`MockServer::limit_in_flight`]), as a provider at its limit. Routes:
//! `POST /v1/chat/completions`, `POST /v1/completions`, `POST /v1/messages`, so the OpenAI base
//! URL is [`MockServer::openai_base`] and the Anthropic one [`MockServer::url`].

// Each test binary that includes this module uses a different part of it.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

/// How long a [`Reply::Hang`] stalls before answering 504: far beyond any client timeout a test
/// uses, yet bounded.
pub const HANG: Duration = Duration::from_secs(60);

/// How much of the body a [`Reply::Truncated`] sends before closing.
const TRUNCATED_BYTES: usize = 1 << 20;

/// The API endpoints the mock speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Route {
    /// OpenAI `POST /v1/chat/completions`.
    Chat,
    /// OpenAI `POST /v1/completions`.
    Completions,
    /// Anthropic `POST /v1/messages`.
    Messages,
}

impl Route {
    pub fn path(self) -> &'static str {
        match self {
            Route::Chat => "/v1/chat/completions",
            Route::Completions => "/v1/completions",
            Route::Messages => "/v1/messages",
        }
    }
}

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A JSON body with this status and extra headers.
    Json {
        status: u16,
        headers: Vec<(String, String)>,
        body: Value,
    },
    /// Any body text, e.g. malformed JSON.
    Raw {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Never answers in time: sleeps [`HANG`], then 504.
    Hang,
    /// Drops the connection after reading the request, without writing a response.
    Reset,
    /// Sends a 200 with headers promising a long body, then closes after a few bytes.
    Truncated,
    /// Another reply, held back this long first.
    After(Duration, Box<Reply>),
}

impl Reply {
    /// A chat completion with one choice per text (index order), `finish_reason: "stop"` and
    /// usage of 10 prompt tokens plus 5 completion tokens per text.
    pub fn chat(texts: &[&str]) -> Reply {
        let choices: Vec<Value> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                json!({"index": i, "message": {"role": "assistant", "content": t},
                       "finish_reason": "stop", "logprobs": null})
            })
            .collect();
        Reply::ok(json!({
            "id": "chatcmpl-mock", "object": "chat.completion", "created": 0, "model": "mock",
            "choices": choices, "usage": usage_json(texts.len()),
        }))
    }

    /// A legacy text completion, shaped like [`Reply::chat`].
    pub fn completion(texts: &[&str]) -> Reply {
        let choices: Vec<Value> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| json!({"index": i, "text": t, "logprobs": null, "finish_reason": "stop"}))
            .collect();
        Reply::ok(json!({
            "id": "cmpl-mock", "object": "text_completion", "created": 0, "model": "mock",
            "choices": choices, "usage": usage_json(texts.len()),
        }))
    }

    /// An Anthropic message with one text block, `stop_reason: "end_turn"`, usage 10 in / 5 out.
    pub fn message(text: &str) -> Reply {
        Reply::ok(json!({
            "id": "msg_mock", "type": "message", "role": "assistant", "model": "mock",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }))
    }

    /// An OpenAI-style error: `{"error": {"message", "type", "code"}}`.
    pub fn openai_error(status: u16, kind: &str, code: &str, message: &str) -> Reply {
        Reply::json(
            status,
            json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
        )
    }

    /// An Anthropic-style error: `{"type": "error", "error": {"type", "message"}}`.
    pub fn anthropic_error(status: u16, kind: &str, message: &str) -> Reply {
        Reply::json(
            status,
            json!({"type": "error", "error": {"type": kind, "message": message}}),
        )
    }

    pub fn ok(body: Value) -> Reply {
        Reply::json(200, body)
    }

    pub fn json(status: u16, body: Value) -> Reply {
        Reply::Json {
            status,
            headers: Vec::new(),
            body,
        }
    }

    pub fn raw(status: u16, body: &str) -> Reply {
        Reply::Raw {
            status,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    /// Adds a response header (e.g. `retry-after`); no effect on `Hang`, `Reset`, `Truncated`.
    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        match &mut self {
            Reply::Json { headers, .. } | Reply::Raw { headers, .. } => {
                headers.push((name.to_string(), value.to_string()))
            }
            Reply::After(_, reply) => **reply = reply.clone().with_header(name, value),
            Reply::Hang | Reply::Reset | Reply::Truncated => {}
        }
        self
    }

    /// This reply, held back `delay` first (a server that takes its time, even to refuse).
    pub fn after(self, delay: Duration) -> Reply {
        Reply::After(delay, Box::new(self))
    }
}

fn usage_json(texts: usize) -> Value {
    let completion = 5 * texts;
    json!({"prompt_tokens": 10, "completion_tokens": completion, "total_tokens": 10 + completion})
}

/// One request as the mock received it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub route: Route,
    /// Header names lower-cased; repeated headers joined with `, `.
    pub headers: BTreeMap<String, String>,
    /// The JSON body, or `Value::Null` if it was not JSON.
    pub body: Value,
    pub received: Instant,
    /// Requests being answered when it arrived, itself included.
    pub in_flight: usize,
    /// Whether it was refused for being beyond [`MockServer::limit_in_flight`].
    pub refused: bool,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

/// The most requests the server was answering when any of `requests` arrived.
pub fn most_in_flight<'a>(requests: impl IntoIterator<Item = &'a Recorded>) -> usize {
    requests.into_iter().map(|r| r.in_flight).max().unwrap_or(0)
}

/// The most of `received` (in arrival order) within any span shorter than `window`.
pub fn most_within(received: &[Instant], window: Duration) -> usize {
    (0..received.len())
        .map(|i| {
            received[i..]
                .iter()
                .take_while(|&&t| t - received[i] < window)
                .count()
        })
        .max()
        .unwrap_or(0)
}

type Responder = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

#[derive(Default)]
struct Script {
    queues: HashMap<Route, VecDeque<Reply>>,
    responders: HashMap<Route, Responder>,
    requests: Vec<Recorded>,
    in_flight: usize,
    /// Requests in flight at most, and the answer to one beyond them, while `Some`.
    limit: Option<(usize, Reply)>,
    /// The limit is lifted once this many requests have arrived.
    limit_until: Option<usize>,
    /// How long an answer (not a refusal) is held before it is sent.
    delay: Duration,
}

type Shared = Arc<Mutex<Script>>;

enum Running {
    Task(tokio::task::JoinHandle<()>),
    Thread {
        stop: Option<tokio::sync::oneshot::Sender<()>>,
        thread: Option<std::thread::JoinHandle<()>>,
    },
}

/// The running mock; stops when dropped.
pub struct MockServer {
    addr: SocketAddr,
    script: Shared,
    running: Running,
}

impl MockServer {
    /// Starts the server on the current tokio runtime.
    pub async fn start() -> MockServer {
        let (listener, script) = bind().await;
        let addr = listener.local_addr().expect("mock: local address");
        let task = tokio::spawn(serve(listener, script.clone()));
        MockServer {
            addr,
            script,
            running: Running::Task(task),
        }
    }

    /// Starts the server on its own thread and runtime, for synchronous tests (e.g. one that
    /// runs a CLI binary against it).
    pub fn start_on_thread() -> MockServer {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("mock: runtime");
            runtime.block_on(async move {
                let (listener, script) = bind().await;
                let addr = listener.local_addr().expect("mock: local address");
                ready_tx.send((addr, script.clone())).expect("mock: ready");
                tokio::select! {
                    _ = serve(listener, script) => {}
                    _ = stop_rx => {}
                }
            });
        });
        let (addr, script) = ready_rx
            .recv()
            .expect("mock: server thread failed to start");
        MockServer {
            addr,
            script,
            running: Running::Thread {
                stop: Some(stop_tx),
                thread: Some(thread),
            },
        }
    }

    /// `http://127.0.0.1:PORT`: the Anthropic base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`: the OpenAI base URL.
    pub fn openai_base(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// Queues replies for `route`, answered in order before the responder takes over.
    pub fn push(&self, route: Route, replies: impl IntoIterator<Item = Reply>) {
        let mut script = self.script.lock().unwrap();
        script.queues.entry(route).or_default().extend(replies);
    }

    /// Sets how `route` answers once its queue is empty; gets the request's JSON body.
    pub fn respond_with(
        &self,
        route: Route,
        responder: impl Fn(&Value) -> Reply + Send + Sync + 'static,
    ) {
        let mut script = self.script.lock().unwrap();
        script.responders.insert(route, Arc::new(responder));
    }

    /// Holds every answer `delay` before sending it (not the refusals of
    /// [`MockServer::limit_in_flight`]), so that requests overlap.
    pub fn delay_answers(&self, delay: Duration) {
        self.script.lock().unwrap().delay = delay;
    }

    /// Answers `refusal` to a request arriving while `limit` others are being answered, until
    /// [`MockServer::unlimit`].
    pub fn limit_in_flight(&self, limit: usize, refusal: Reply) {
        self.script.lock().unwrap().limit = Some((limit, refusal));
    }

    /// Lifts [`MockServer::limit_in_flight`].
    pub fn unlimit(&self) {
        self.script.lock().unwrap().limit = None;
    }

    /// Lifts [`MockServer::limit_in_flight`] once `requests` have arrived in all (the server
    /// copes again), for a client in another process.
    pub fn unlimit_after(&self, requests: usize) {
        self.script.lock().unwrap().limit_until = Some(requests);
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.script.lock().unwrap().requests.clone()
    }

    /// The requests received on `route`.
    pub fn requests_to(&self, route: Route) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.route == route)
            .collect()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        match &mut self.running {
            Running::Task(task) => task.abort(),
            Running::Thread { stop, thread } => {
                if let Some(stop) = stop.take() {
                    let _ = stop.send(());
                }
                if let Some(thread) = thread.take() {
                    let _ = thread.join();
                }
            }
        }
    }
}

async fn bind() -> (tokio::net::TcpListener, Shared) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("mock: bind 127.0.0.1:0");
    (listener, Shared::default())
}

async fn serve(listener: tokio::net::TcpListener, script: Shared) {
    let mut router = Router::new();
    for route in [Route::Chat, Route::Completions, Route::Messages] {
        router = router.route(
            route.path(),
            post(
                move |State(script): State<Shared>, headers: HeaderMap, body: Bytes| {
                    handle(script, route, headers, body)
                },
            ),
        );
    }
    let _ = axum::serve(listener, router.with_state(script)).await;
}

async fn handle(script: Shared, route: Route, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut recorded_headers = BTreeMap::<String, String>::new();
    for (name, value) in &headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        recorded_headers
            .entry(name.as_str().to_string())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    let _answering = Answering::new(&script);
    let (reply, delay) = {
        let mut script = script.lock().unwrap();
        if script
            .limit_until
            .is_some_and(|until| script.requests.len() >= until)
        {
            script.limit = None;
        }
        let in_flight = script.in_flight;
        let refusal = script
            .limit
            .as_ref()
            .filter(|(limit, _)| in_flight > *limit)
            .map(|(_, refusal)| refusal.clone());
        script.requests.push(Recorded {
            route,
            headers: recorded_headers,
            body: body.clone(),
            received: Instant::now(),
            in_flight,
            refused: refusal.is_some(),
        });
        let delay = script.delay;
        let queued = script.queues.get_mut(&route).and_then(VecDeque::pop_front);
        match (refusal, queued) {
            (Some(refusal), _) => (refusal, Duration::ZERO),
            (None, Some(reply)) => (reply, delay),
            (None, None) => match script.responders.get(&route) {
                Some(responder) => {
                    let responder = Arc::clone(responder);
                    drop(script);
                    (responder(&body), delay)
                }
                None => (default_reply(route, &body), delay),
            },
        }
    };
    let mut delay = delay;
    let mut reply = reply;
    while let Reply::After(more, inner) = reply {
        delay += more;
        reply = *inner;
    }
    tokio::time::sleep(delay).await;
    match reply {
        Reply::Json {
            status,
            headers,
            body,
        } => respond(
            status,
            &headers,
            "application/json",
            Body::from(body.to_string()),
        ),
        Reply::Raw {
            status,
            headers,
            body,
        } => respond(status, &headers, "application/json", Body::from(body)),
        Reply::Hang => {
            tokio::time::sleep(HANG).await;
            respond(504, &[], "text/plain", Body::from("mock: hung"))
        }
        // Unwinding out of the handler ends hyper's connection task, which drops the socket
        // before any response byte is written. `resume_unwind` skips the panic hook, so
        // nothing is printed; the runtime just discards the task.
        Reply::After(..) => unreachable!("delays are taken off above"),
        Reply::Reset => std::panic::resume_unwind(Box::new("mock: reset connection")),
        Reply::Truncated => {
            // A streamed body has no known length, so hyper trusts our Content-Length header
            // and closes the connection when the stream ends short of it. The chunk is larger
            // than hyper's write buffer, so headers and part of the body are flushed first.
            let mut partial = String::from(r#"{"choices": [{"index": 0, "message": {"content": ""#);
            partial.push_str(&"x".repeat(TRUNCATED_BYTES));
            let stream = Body::from(partial).into_data_stream();
            let mut response = respond(200, &[], "application/json", Body::from_stream(stream));
            let promised = (2 * TRUNCATED_BYTES).to_string();
            response
                .headers_mut()
                .insert("content-length", promised.parse().unwrap());
            response
        }
    }
}

/// Counts a request as being answered while it lives (the handler's future, dropped too when
/// the client goes away).
struct Answering(Shared);

impl Answering {
    fn new(script: &Shared) -> Answering {
        script.lock().unwrap().in_flight += 1;
        Answering(script.clone())
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        if let Ok(mut script) = self.0.lock() {
            script.in_flight -= 1;
        }
    }
}

fn respond(status: u16, headers: &[(String, String)], content_type: &str, body: Body) -> Response {
    let mut builder = Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", content_type);
    for (name, value) in headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    builder.body(body).expect("mock: valid response")
}

/// Success with `reply 0`, `reply 1`, ... (as many as the request's `n`); Anthropic: `reply 0`.
fn default_reply(route: Route, request: &Value) -> Reply {
    let n = request.get("n").and_then(Value::as_u64).unwrap_or(1) as usize;
    let texts: Vec<String> = (0..n).map(|i| format!("reply {i}")).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    match route {
        Route::Chat => Reply::chat(&texts),
        Route::Completions => Reply::completion(&texts),
        Route::Messages => Reply::message("reply 0"),
    }
}
