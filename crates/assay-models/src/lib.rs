//! Talking to LLM APIs to generate samples.
//!
//! The caller gives a prompt text, stop strings and sampling parameters; this crate knows
//! nothing of benchmarks or tasks. It speaks:
//!
//! * OpenAI chat completions (`{base}/chat/completions`) and legacy completions
//!   (`{base}/completions`), which also covers OpenAI-compatible servers (vLLM, SGLang, TGI,
//!   Ollama, llama.cpp, LM Studio, OpenRouter);
//! * Anthropic Messages (`{base}/v1/messages`).
//!
//! Every request gets a bounded number of attempts with a per-attempt timeout. Transient
//! failures (rate limits, overload, 5xx, timeouts, broken connections, garbled bodies) are
//! retried after the server's `Retry-After` or an exponential backoff with jitter. Failures are
//! sorted by consequence: [`RequestError::Failed`] loses one request,
//! [`RequestError::Fatal`] means no request can succeed (bad key, unknown model, exhausted
//! quota) and the run should stop. A request that does not fit the model's context window is
//! neither: [`RequestError::ContextFull`] says so in the server's words, with the numbers it
//! named, and is never retried.
//!
//! A client presses its provider no harder than its [`Limits`]: requests in flight at most
//! (lowered while the server answers 429 or 503, raised back as it copes), and requests and
//! tokens per minute, paced evenly. Every clone shares them.
//!
//! The API key is an [`ApiKey`], which never prints; it is sent in headers marked sensitive and
//! scrubbed from provider error messages that echo it.

mod anthropic;
mod client;
mod config;
mod context;
mod error;
mod extra_body;
mod gate;
mod http;
mod openai;
mod request;
mod response;
mod retry;
mod serve;
mod spec;
mod status;
mod thinking;
mod throttle;

pub use client::{Client, LoadReports, LOAD_EVERY};
pub use config::{ApiKey, Backoff, ClientConfig, Limits, LEAST_THINKING_BUDGET};
pub use context::ContextFull;
pub use error::{ConfigError, RequestError};
pub use extra_body::ExtraBody;
pub use request::{Conversation, Prompt, Request, Tool, ToolCall, Turn};
pub use response::{hit_token_limit, Response};
pub use retry::RetryEvent;
pub use serve::{ModelServer, ServeError, ServeSettings};
pub use spec::{ModelSpec, Provider, SpecError};
pub use thinking::{default_think_tags, parse_think_tags, part, Parted, THINK_TAGS};
