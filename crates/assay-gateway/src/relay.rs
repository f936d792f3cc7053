//! One agent request, whatever its protocol: read it, ask the model within the budget, answer
//! in the agent's protocol, and record the exchange.

use std::sync::Arc;
use std::time::Duration;

use assay_models::{Client, Prompt, Request, Turn};
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;
use tokio::sync::watch;

use crate::answer::Answer;
use crate::budget::Ledger;
use crate::dialect::{Dialect, Terms};
use crate::exchange::{Journal, Pending, RecordedResult};
use crate::failure::{Failure, MAX_BODY};
use crate::sse;

/// How often a stream waiting for the model says something, so that the agent's idle
/// watchdogs (Claude Code's among them) see bytes.
const KEEPALIVE: Duration = Duration::from_secs(5);

/// What every request's handling shares.
pub(crate) struct Relay {
    pub(crate) client: Client,
    /// The placeholder credential agents must present.
    pub(crate) token: String,
    /// The model name replies carry.
    pub(crate) model: String,
    pub(crate) temperature: f64,
    pub(crate) max_tokens: u32,
    /// Whether the client talks to Anthropic (whose thinking blocks may go back to it).
    pub(crate) anthropic: bool,
    pub(crate) ledger: Ledger,
    pub(crate) journal: Arc<Journal>,
    /// Becomes true when the gateway shuts down: requests still waiting for the model end.
    pub(crate) closing: watch::Receiver<bool>,
}

impl Relay {
    /// Answers one request of protocol `D`.
    pub(crate) async fn serve<D: Dialect>(self: Arc<Self>, body: Body) -> Response {
        let mut pending = Pending::open(&self.journal, D::PROTOCOL);
        let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
            Ok(bytes) => bytes,
            Err(err) => {
                return self.refuse::<D>(pending, Failure::Unreadable(err.to_string()));
            }
        };
        let body: Value = match serde_json::from_slice(&bytes) {
            Ok(body) => body,
            Err(err) => {
                pending.request = Value::String(String::from_utf8_lossy(&bytes).into_owned());
                let failure = Failure::BadRequest(format!("the body is not JSON: {err}"));
                return self.refuse::<D>(pending, failure);
            }
        };
        pending.model_asked = body["model"].as_str().unwrap_or_default().to_string();
        pending.stream = body["stream"] == Value::Bool(true);
        let terms = Terms {
            index: pending.index(),
            model: &self.model,
            anthropic: self.anthropic,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
        };
        let parsed = D::parse(&body, &terms);
        pending.request = body;
        let (dialect, request) = match parsed {
            Ok(parsed) => parsed,
            Err(why) => return self.refuse::<D>(pending, Failure::BadRequest(why)),
        };
        pending.results = fresh_results(&request);
        if let Err(stop) = self.ledger.admit() {
            return self.refuse::<D>(pending, Failure::Ended(stop));
        }
        if dialect.stream() {
            self.stream(dialect, request, pending)
        } else {
            match self.ask(&request, pending.index()).await {
                Ok(answer) => {
                    let reply = dialect.reply(&answer);
                    self.record::<D>(pending, Ok((&answer, reply.clone())));
                    Json(reply).into_response()
                }
                Err(failure) => self.refuse::<D>(pending, failure),
            }
        }
    }

    /// Opens the stream at once and answers on it: the opening events, keepalives while the
    /// model is asked, then the answer or the failure.
    fn stream<D: Dialect>(
        self: Arc<Self>,
        mut dialect: D,
        request: Request,
        pending: Pending,
    ) -> Response {
        let (sender, response) = sse::open();
        tokio::spawn(async move {
            sender.send(dialect.opening()).await;
            let asking = self.ask(&request, pending.index());
            tokio::pin!(asking);
            let start = tokio::time::Instant::now() + KEEPALIVE;
            let mut keepalives = tokio::time::interval_at(start, KEEPALIVE);
            let outcome = loop {
                tokio::select! {
                    outcome = &mut asking => break outcome,
                    _ = keepalives.tick() => {
                        sender.send(vec![dialect.keepalive()]).await;
                    }
                }
            };
            let events = match outcome {
                Ok(answer) => {
                    let reply = dialect.reply(&answer);
                    let events = dialect.events(&reply);
                    self.record::<D>(pending, Ok((&answer, reply)));
                    events
                }
                Err(failure) => {
                    let events = dialect.failed(&failure);
                    self.record::<D>(pending, Err(&failure));
                    events
                }
            };
            // An agent that went away has its exchange recorded all the same.
            sender.send(events).await;
        });
        response
    }

    /// Asks the model, unless the gateway shuts down first.
    async fn ask(&self, request: &Request, index: u32) -> Result<Answer, Failure> {
        let mut closing = self.closing.clone();
        tokio::select! {
            result = self.client.generate(request) => match result {
                Ok(response) => {
                    let answer = Answer::new(response, index);
                    self.ledger.charge(&answer.usage);
                    Ok(answer)
                }
                Err(error) => Err(Failure::from_model(error)),
            },
            _ = closing.wait_for(|closed| *closed) => Err(Failure::ShuttingDown),
        }
    }

    /// Records a failure and answers it in `D`'s words.
    fn refuse<D: Dialect>(&self, pending: Pending, failure: Failure) -> Response {
        let response = failure.response(D::WORDING);
        self.record::<D>(pending, Err(&failure));
        response
    }

    /// Records the exchange; after a failure that ends the episode, then publishes the stop,
    /// so that whoever reacts to it finds the exchange that caused it recorded.
    fn record<D: Dialect>(&self, pending: Pending, outcome: Result<(&Answer, Value), &Failure>) {
        match outcome {
            Ok((answer, reply)) => pending.answered(answer, reply),
            Err(failure) => {
                pending.failed(failure, D::WORDING);
                if let Some(stop) = failure.stop() {
                    self.ledger.stop(stop);
                }
            }
        }
    }
}

/// The tool results after the conversation's last reply: what the agent's tools did since the
/// model last spoke.
fn fresh_results(request: &Request) -> Vec<RecordedResult> {
    let Prompt::Chat(chat) = &request.prompt else {
        return Vec::new();
    };
    let since = chat
        .turns
        .iter()
        .rposition(|t| matches!(t, Turn::Assistant { .. }))
        .map_or(0, |i| i + 1);
    chat.turns[since..]
        .iter()
        .filter_map(|turn| match turn {
            Turn::ToolResult { call_id, content } => Some(RecordedResult {
                call_id: call_id.clone(),
                content: content.clone(),
            }),
            _ => None,
        })
        .collect()
}
