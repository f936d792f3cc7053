//! The model gateway coding agents talk to while assay evaluates them.
//!
//! assay runs an agent CLI (Codex, Claude Code, mini-swe-agent, OpenCode) in a sandbox and
//! gives it a loopback endpoint and a placeholder token. The agent speaks its own protocol —
//! OpenAI Chat Completions, OpenAI Responses or Anthropic Messages, streamed or not — and the
//! gateway translates each request into one [`assay_models::Request`], asks the user's model
//! with the real [`Client`] (which holds the key, retries, paces and recognizes a full context
//! window), and translates the answer back. Nothing of the upstream reaches the agent: not the
//! key, not its URL, not its error messages.
//!
//! The gateway keeps the episode's account: every request and its answer is an [`Exchange`],
//! and when a [`Budget`] is spent, the context window is full or the model fails for good, it
//! stops serving the episode ([`Stop`]) and refuses whatever the agent asks next, so that the
//! runner can end the agent.

mod answer;
mod budget;
mod chat;
mod dialect;
mod exchange;
mod failure;
mod json;
mod messages;
mod relay;
mod responses;
mod routes;
mod sse;

use std::sync::Arc;
use std::time::Duration;

use assay_models::{Client, Provider};
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use budget::{Budget, Stop, Totals};
pub use exchange::{Exchange, ExchangeHook, Protocol, RecordedCall, RecordedResult};

use exchange::Journal;
use relay::Relay;

/// How long [`Gateway::shutdown`] waits for requests in flight to be answered (they are told
/// the gateway is shutting down) and for connections to close.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Everything [`Gateway::start`] needs.
pub struct GatewayConfig {
    /// The user's model: the only thing that holds the real key.
    pub client: Client,
    /// The placeholder credential the agent is given; requests must carry it as
    /// `Authorization: Bearer T`, `x-api-key: T` or `x-goog-api-key: T`, else 401.
    pub token: String,
    /// The model name the gateway reports back (whatever name the agent asked for is accepted
    /// and answered by the one real model).
    pub served_model: String,
    /// What the episode may spend.
    pub budget: Budget,
    /// The temperature when the agent sends none; the agent's own value otherwise.
    pub temperature: f64,
    /// The most tokens a reply may have: the agent's `max_tokens` (`max_output_tokens`,
    /// `max_completion_tokens`) when smaller, this when it sends none.
    pub max_tokens: u32,
    /// Called with each exchange as it finishes (e.g. to append it to a file).
    pub on_exchange: Option<ExchangeHook>,
}

/// A running gateway. Serves until [`Gateway::shutdown`] or until dropped.
pub struct Gateway {
    relay: Arc<Relay>,
    close: watch::Sender<bool>,
    server: Option<JoinHandle<()>>,
    wall: JoinHandle<()>,
}

impl Gateway {
    /// Serves on `listener` (a `tokio::net::TcpListener`, or the `UnixListener` assay binds in
    /// the sandbox's workspace) from now on. Must be called within a tokio runtime.
    pub fn start<L>(config: GatewayConfig, listener: L) -> Gateway
    where
        L: axum::serve::Listener,
        L::Addr: std::fmt::Debug,
    {
        let (close, closing) = watch::channel(false);
        let relay = Arc::new(Relay {
            anthropic: config.client.spec().provider == Provider::Anthropic,
            client: config.client,
            token: config.token,
            model: config.served_model,
            temperature: config.temperature,
            max_tokens: config.max_tokens,
            ledger: budget::Ledger::new(config.budget),
            journal: Arc::new(Journal::new(config.on_exchange)),
            closing: closing.clone(),
        });
        let app = routes::router(relay.clone());
        let mut closed = closing;
        let server = tokio::spawn(async move {
            let shutdown = async move {
                // Also when the gateway is dropped, which drops the sender.
                let _ = closed.wait_for(|closed| *closed).await;
            };
            if let Err(err) = axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
            {
                tracing::warn!("the model gateway stopped serving: {err}");
            }
        });
        let wall = tokio::spawn({
            let relay = relay.clone();
            async move { relay.ledger.watch_wall().await }
        });
        Gateway {
            relay,
            close,
            server: Some(server),
            wall,
        }
    }

    /// Every exchange so far, in the order the requests were received (those still being
    /// answered are not among them yet).
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.relay.journal.exchanges()
    }

    /// Why the gateway stopped serving the episode, once it has: `None` until then. Wait for
    /// it with `changed()` or `wait_for(Option::is_some)`.
    pub fn stopped(&self) -> watch::Receiver<Option<Stop>> {
        self.relay.ledger.stopped()
    }

    /// What the episode has used of the model so far.
    pub fn totals(&self) -> Totals {
        self.relay.ledger.totals()
    }

    /// Stops serving: requests still waiting for the model are told the gateway is shutting
    /// down, and connections are closed. Returns every exchange.
    pub async fn shutdown(mut self) -> Vec<Exchange> {
        let _ = self.close.send(true);
        if let Some(mut server) = self.server.take() {
            let journal = self.relay.journal.clone();
            let settled = async {
                let _ = (&mut server).await;
                journal.settled().await;
            };
            if tokio::time::timeout(SHUTDOWN_GRACE, settled).await.is_err() {
                tracing::warn!(
                    "model gateway connections still open after {SHUTDOWN_GRACE:?}; dropped"
                );
                server.abort();
            }
        }
        self.exchanges()
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.close.send(true);
        self.wall.abort();
    }
}
