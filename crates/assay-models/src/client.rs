//! The client: turns a [`Request`] into HTTP calls for the configured provider, paced by its
//! limits, and retries them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use assay_records::{ModelLoad, RunEvent};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::Value;

use crate::config::{check_reasoning, ApiKey, ClientConfig};
use crate::error::{AttemptError, ConfigError, RequestError};
use crate::extra_body::ExtraBody;
use crate::gate::Gate;
use crate::http::Transport;
use crate::openai::TokenLimit;
use crate::request::{Prompt, Request};
use crate::response::{Generation, Response};
use crate::retry::{RetryEvent, RetryObserver, RetryPolicy};
use crate::spec::{ModelSpec, Provider};
use crate::thinking::default_think_tags;
use crate::throttle::{estimate, Pacer};
use crate::{anthropic, openai};
use assay_records::{ReasoningSettings, ThinkTag};

const OPENAI_DEFAULT_BASE: &str = "https://api.openai.com/v1";
const OPENAI_HOST: &str = "api.openai.com";
const ANTHROPIC_DEFAULT_BASE: &str = "https://api.anthropic.com";

/// Generates samples from one model. Cheap to clone (the connection pool is shared) and safe
/// to use from many tasks at once.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
    observer: Option<RetryObserver>,
}

struct Inner {
    spec: ModelSpec,
    /// Base URL without a trailing slash.
    base: String,
    /// `base` without credentials, for manifests and logs.
    shown_base: String,
    /// Sent with every request; the key, if any, is marked sensitive so that it never shows up
    /// in `Debug` output of the headers.
    headers: HeaderMap,
    key: Option<ApiKey>,
    /// Which token-limit field chat requests use for non-reasoning models.
    chat_limit: TokenLimit,
    transport: Transport,
    policy: RetryPolicy,
    /// Requests in flight, lowered while the server is overloaded.
    gate: Gate,
    /// When the next request may go, by the per-minute budgets.
    pacer: Pacer,
    /// How the model is asked to reason.
    reasoning: ReasoningSettings,
    /// The tags its thinking is set apart by.
    think_tags: Vec<ThinkTag>,
    /// Fields added to every request body.
    extra_body: ExtraBody,
}

/// How often a run reports its model's load while requests run (the progress line's rate).
pub const LOAD_EVERY: Duration = Duration::from_secs(1);

/// When a run reports its model's load: every [`LOAD_EVERY`] while it calls a model API,
/// never without one (the reference solutions, recorded episodes).
pub struct LoadReports {
    due: Option<(Client, tokio::time::Interval)>,
}

impl LoadReports {
    /// Reports for `client`'s load, if the run has one; the first is due at once.
    pub fn new(client: Option<&Client>) -> LoadReports {
        LoadReports {
            due: client.map(|client| {
                let mut every = tokio::time::interval(LOAD_EVERY);
                every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                (client.clone(), every)
            }),
        }
    }

    /// Waits for the next report due, and gives its `in-flight` event; never ends without a
    /// client (for a `select!` beside the run's work).
    pub async fn next(&mut self) -> RunEvent {
        match &mut self.due {
            Some((client, every)) => {
                every.tick().await;
                client.in_flight()
            }
            None => std::future::pending().await,
        }
    }
}

impl Client {
    /// Checks the configuration and builds the HTTP client. Fails when the base URL is not an
    /// http(s) URL, or when a provider that needs a key has none.
    pub fn new(config: ClientConfig) -> Result<Client, ConfigError> {
        let provider = &config.spec.provider;
        let default_base = match provider {
            Provider::OpenAi => OPENAI_DEFAULT_BASE,
            Provider::Anthropic => ANTHROPIC_DEFAULT_BASE,
        };
        // The URL given (or where a server started for the run listens), else the one the
        // provider's own SDK reads from the environment, else the provider's API.
        let from_env = std::env::var(provider.base_url_env_var())
            .ok()
            .filter(|url| !url.is_empty());
        let base = config
            .base_url
            .as_deref()
            .or(from_env.as_deref())
            .unwrap_or(default_base);
        let url = reqwest::Url::parse(base).map_err(|err| ConfigError::BadBaseUrl {
            url: base.to_string(),
            reason: err.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ConfigError::BadBaseUrl {
                url: base.to_string(),
                reason: "only http and https are supported".into(),
            });
        }
        let official_openai = *provider == Provider::OpenAi && url.host_str() == Some(OPENAI_HOST);
        check_reasoning(&config.reasoning, provider)?;
        config.extra_body.check(provider)?;

        let key = config
            .api_key
            .map(|key| key.expose().trim().to_string())
            .filter(|key| !key.is_empty())
            .map(ApiKey::new);
        let env_var = provider.key_env_var();
        match (&key, provider) {
            (None, Provider::Anthropic) => {
                return Err(ConfigError::MissingApiKey {
                    env_var,
                    what: "the Anthropic API",
                })
            }
            (None, Provider::OpenAi) if official_openai => {
                return Err(ConfigError::MissingApiKey {
                    env_var,
                    what: "the OpenAI API (api.openai.com)",
                })
            }
            _ => {}
        }
        let host = url.host_str().unwrap_or_default();
        let loopback = host == "localhost"
            || host
                .trim_matches(['[', ']'])
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        if key.is_some() && url.scheme() == "http" && !loopback {
            return Err(ConfigError::PlainHttpKey {
                env_var,
                host: host.to_string(),
            });
        }

        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let secret = |value: String| {
            let mut value = HeaderValue::from_str(&value)
                .map_err(|_| ConfigError::InvalidApiKey { env_var })?;
            value.set_sensitive(true);
            Ok::<_, ConfigError>(value)
        };
        match provider {
            Provider::OpenAi => {
                if let Some(key) = &key {
                    headers.insert(AUTHORIZATION, secret(format!("Bearer {}", key.expose()))?);
                }
            }
            Provider::Anthropic => {
                if let Some(key) = &key {
                    headers.insert(
                        HeaderName::from_static("x-api-key"),
                        secret(key.expose().into())?,
                    );
                }
                headers.insert(
                    HeaderName::from_static("anthropic-version"),
                    HeaderValue::from_static(anthropic::API_VERSION),
                );
            }
        }

        let mut shown = url.clone();
        // Fails only for URLs that cannot carry credentials, which then have none.
        let _ = shown.set_username("");
        let _ = shown.set_password(None);
        Ok(Client {
            inner: Arc::new(Inner {
                base: base.trim_end_matches('/').to_string(),
                shown_base: shown.as_str().trim_end_matches('/').to_string(),
                headers,
                key,
                chat_limit: if official_openai {
                    TokenLimit::MaxCompletionTokens
                } else {
                    TokenLimit::MaxTokens
                },
                transport: Transport::new(config.request_timeout)?,
                policy: RetryPolicy {
                    max_attempts: config.retries.saturating_add(1),
                    backoff: config.backoff,
                },
                gate: Gate::new(config.limits.concurrency),
                pacer: Pacer::new(
                    config.limits.requests_per_minute,
                    config.limits.tokens_per_minute,
                ),
                spec: config.spec,
                think_tags: config
                    .reasoning
                    .think_tags
                    .clone()
                    .unwrap_or_else(default_think_tags),
                reasoning: config.reasoning,
                extra_body: config.extra_body,
            }),
            observer: None,
        })
    }

    /// Calls `observer` before every retry wait (in addition to the `tracing::info!` each retry
    /// logs), e.g. to show retries on a progress bar.
    pub fn on_retry(mut self, observer: impl Fn(&RetryEvent<'_>) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// The model this client talks to.
    pub fn spec(&self) -> &ModelSpec {
        &self.inner.spec
    }

    /// The base URL requests go to, without any credentials it carries: fit for a manifest
    /// or a log.
    pub fn base_url(&self) -> &str {
        &self.inner.shown_base
    }

    /// How hard the client presses its provider now, over all its clones.
    pub fn load(&self) -> ModelLoad {
        self.load_and_requests().0
    }

    /// The `in-flight` event for progress displays: HTTP requests sent and not yet answered
    /// (a request waiting to retry or for its per-minute slot is not), and the load.
    pub fn in_flight(&self) -> RunEvent {
        let (load, requests) = self.load_and_requests();
        RunEvent::InFlight {
            requests,
            load: Some(load),
        }
    }

    fn load_and_requests(&self) -> (ModelLoad, usize) {
        let (in_flight, limit) = self.inner.gate.load();
        let load = ModelLoad {
            per_minute: self.inner.pacer.per_minute(),
            limit,
            concurrency: self.inner.gate.concurrency(),
        };
        (load, in_flight)
    }

    /// How many answers one request can return: any number through OpenAI's `n`, one from
    /// Anthropic, which has no `n` (several are several requests).
    pub fn answers_per_request(&self) -> u32 {
        match self.inner.spec.provider {
            Provider::OpenAi => u32::MAX,
            Provider::Anthropic => 1,
        }
    }

    /// Generates `request.n` samples for one prompt, retrying transient failures.
    pub async fn generate(&self, request: &Request) -> Result<Response, RequestError> {
        let started = Instant::now();
        let inner = &self.inner;
        let model = inner.spec.model.as_str();
        let observer = self.observer.as_ref();
        // What one HTTP request for `answers` of them may cost, for the token budget.
        let chars = request.prompt.chars();
        let tokens = |answers| estimate(chars, request.max_tokens, answers);
        let (generation, attempts) = if request.n == 0 {
            (Generation::default(), 0)
        } else {
            match (&inner.spec.provider, &request.prompt) {
                (Provider::OpenAi, Prompt::Chat(chat)) => {
                    let mut body =
                        openai::chat_body(model, chat, request, inner.chat_limit, &inner.reasoning);
                    inner.extra_body.merge_into(&mut body);
                    let n = request.n;
                    let call = Call {
                        path: "/chat/completions",
                        body: &body,
                        tokens: tokens(n),
                    };
                    inner
                        .call(call, observer, move |b| openai::parse_chat(b, n))
                        .await?
                }
                (Provider::OpenAi, Prompt::Completion { prompt }) => {
                    let mut body = openai::completion_body(model, prompt, request);
                    inner.extra_body.merge_into(&mut body);
                    let n = request.n;
                    let call = Call {
                        path: "/completions",
                        body: &body,
                        tokens: tokens(n),
                    };
                    inner
                        .call(call, observer, move |b| openai::parse_completion(b, n))
                        .await?
                }
                (Provider::Anthropic, Prompt::Chat(chat)) => {
                    let budget = inner.reasoning.thinking_budget;
                    let mut body = anthropic::message_body(model, chat, request, budget);
                    inner.extra_body.merge_into(&mut body);
                    let call = Call {
                        path: "/v1/messages",
                        body: &body,
                        tokens: tokens(1) + u64::from(budget.unwrap_or(0)),
                    };
                    self.anthropic_samples(call, request.n).await?
                }
                (Provider::Anthropic, Prompt::Completion { .. }) => {
                    return Err(RequestError::Fatal {
                        status: None,
                        message: "Anthropic has no completions endpoint for raw prompts; \
                                  use a chat prompt or an OpenAI-compatible server"
                            .into(),
                    })
                }
            }
        };
        Ok(generation.respond(&inner.think_tags, started.elapsed(), attempts))
    }

    /// Anthropic has no `n`: sends `n` identical requests in turn (each with its own retries)
    /// and joins the samples. The first request to fail for good fails the call. Callers that
    /// want each answer bounded and recorded on its own ask for one at a time
    /// ([`Client::answers_per_request`]).
    async fn anthropic_samples(
        &self,
        call: Call<'_>,
        n: u32,
    ) -> Result<(Generation, u32), RequestError> {
        let mut all = Generation::default();
        let mut attempts = 0;
        for _ in 0..n {
            let (generation, made) = self
                .inner
                .call(call, self.observer.as_ref(), anthropic::parse_message)
                .await?;
            attempts = attempts.max(made);
            all.extend(generation);
        }
        Ok((all, attempts))
    }
}

/// What a server says when asked which models it serves: whether a server assay started is
/// up yet.
#[derive(Debug, PartialEq)]
pub(crate) enum Listing {
    /// It answered with a model list: their ids.
    Models(Vec<String>),
    /// Not up yet: no connection, no answer, or a status that says it is still loading (a
    /// server answers 503 while it loads its model).
    NotYet(String),
    /// It answers, but not with a model list there: a wrong base URL, or no API server.
    Wrong(String),
}

/// How long one look at the model list may take.
const LISTING_TIMEOUT: Duration = Duration::from_secs(5);
/// The most of a model list read.
const LISTING_BYTES: usize = 1 << 20;

impl Client {
    /// Where the server lists its models: `{base}/models` (OpenAI), `{base}/v1/models`
    /// (Anthropic).
    pub(crate) fn models_url(&self) -> String {
        let path = match self.inner.spec.provider {
            Provider::OpenAi => "/models",
            Provider::Anthropic => "/v1/models",
        };
        format!("{}{path}", self.inner.base)
    }

    /// Asks the server once which models it serves, with the client's headers (a server may
    /// want the key).
    pub(crate) async fn list_models(&self) -> Listing {
        let url = self.models_url();
        let inner = &self.inner;
        let answer = inner
            .transport
            .get(&url, &inner.headers, LISTING_TIMEOUT, LISTING_BYTES)
            .await;
        let (status, body) = match answer {
            Ok(answer) => answer,
            Err(cause) => return Listing::NotYet(cause),
        };
        let said = || crate::status::truncate(String::from_utf8_lossy(&body).trim());
        if matches!(status.as_u16(), 502..=504) {
            return Listing::NotYet(format!("HTTP {}: {}", status.as_u16(), said()));
        }
        if !status.is_success() {
            return Listing::Wrong(format!("HTTP {}: {}", status.as_u16(), said()));
        }
        let ids = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|list| {
                list.get("data")?
                    .as_array()?
                    .iter()
                    .map(|m| m.get("id")?.as_str().map(String::from))
                    .collect::<Option<Vec<String>>>()
            });
        match ids {
            Some(ids) => Listing::Models(ids),
            None => Listing::Wrong(format!("HTTP 200, but not a model list: {}", said())),
        }
    }
}

/// One HTTP request to make.
#[derive(Clone, Copy)]
struct Call<'a> {
    /// Appended to the base URL.
    path: &'a str,
    body: &'a Value,
    /// The most tokens it may cost: its prompt's, estimated, and its answers' limits.
    tokens: u64,
}

impl Inner {
    /// POSTs the call's body to `{base}{path}` with retries and decodes a 2xx body with
    /// `parse`; a body that does not decode counts as a transient failure (truncated or
    /// garbled by a proxy).
    ///
    /// Each attempt takes a place in the gate (given back when it ends: a retry queues again)
    /// and waits for the per-minute budgets. An attempt the server refused (overloaded, or
    /// the request itself) costs no tokens; one whose fate is unknown (a timeout, a broken
    /// connection, a server error) keeps its estimate, as the provider may have counted it.
    async fn call(
        &self,
        call: Call<'_>,
        observer: Option<&RetryObserver>,
        parse: impl Fn(&[u8]) -> Result<Generation, String>,
    ) -> Result<(Generation, u32), RequestError> {
        let url = format!("{}{}", self.base, call.path);
        let bytes = call.body.to_string().into_bytes();
        let env_var = self.spec.provider.key_env_var();
        let secret = self.key.as_ref().map(ApiKey::expose);
        let label = self.spec.to_string();
        self.policy
            .run(&label, observer, || async {
                let mut place = self.gate.enter().await;
                let charge = self.pacer.admit(call.tokens).await;
                place.send().await;
                let answer = self
                    .transport
                    .post(&url, &self.headers, bytes.clone(), env_var, secret)
                    .await
                    .and_then(|reply| parse(&reply).map_err(AttemptError::retry));
                match &answer {
                    Ok(generation) => {
                        let usage = &generation.usage;
                        let used = usage.prompt_tokens + usage.completion_tokens;
                        // A server that reports no usage leaves the estimate standing.
                        self.pacer
                            .settle(charge, if used == 0 { call.tokens } else { used });
                        self.gate.succeeded(&place);
                    }
                    Err(AttemptError::Retry {
                        overloaded: true,
                        retry_after,
                        ..
                    }) => {
                        self.pacer.settle(charge, 0);
                        let pause = retry_after.map(|hint| self.policy.server_wait(hint));
                        self.gate.overloaded(&place, pause);
                    }
                    Err(
                        AttemptError::Reject(_)
                        | AttemptError::ContextFull(_)
                        | AttemptError::Fatal { .. },
                    ) => self.pacer.settle(charge, 0),
                    Err(AttemptError::Retry { .. }) => self.pacer.settle(charge, call.tokens),
                }
                answer
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Backoff, Limits};

    fn client(spec: &str, base: Option<&str>) -> Client {
        Client::new(ClientConfig {
            spec: spec.parse().unwrap(),
            base_url: base.map(String::from),
            api_key: Some(ApiKey::new("k".into())),
            request_timeout: Duration::from_secs(1),
            retries: 0,
            backoff: Backoff::default(),
            limits: Limits::default(),
            reasoning: ReasoningSettings::default(),
            extra_body: Default::default(),
        })
        .unwrap()
    }

    #[test]
    fn token_limit_field_depends_on_the_host() {
        let limit = |base| client("openai:gpt-4o", base).inner.chat_limit;
        assert_eq!(limit(None), TokenLimit::MaxCompletionTokens);
        assert_eq!(
            limit(Some("https://api.openai.com/v1/")),
            TokenLimit::MaxCompletionTokens
        );
        assert_eq!(
            limit(Some("http://localhost:8000/v1")),
            TokenLimit::MaxTokens
        );
        assert_eq!(
            limit(Some("https://openrouter.ai/api/v1")),
            TokenLimit::MaxTokens
        );
    }

    #[test]
    fn urls_and_headers() {
        let c = client("openai:m", Some("http://localhost:8000/v1/"));
        assert_eq!(c.inner.base, "http://localhost:8000/v1");
        assert!(c.inner.headers[AUTHORIZATION].is_sensitive());
        assert!(!format!("{:?}", c.inner.headers).contains("Bearer k"));
        let c = client("openai:m", Some("https://user:secret@example.com/v1"));
        assert_eq!(c.base_url(), "https://example.com/v1");
        let c = client("anthropic:m", None);
        assert_eq!(c.inner.base, ANTHROPIC_DEFAULT_BASE);
        assert_eq!(c.base_url(), ANTHROPIC_DEFAULT_BASE);
        assert!(c.inner.headers["x-api-key"].is_sensitive());
        assert!(!c.inner.headers.contains_key(AUTHORIZATION));
    }

    #[test]
    fn client_is_shareable_across_tasks() {
        fn shareable<T: Clone + Send + Sync + 'static>() {}
        shareable::<Client>();
    }
}
