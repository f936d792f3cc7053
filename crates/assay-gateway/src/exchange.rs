//! The episode's trajectory: every request an agent made of the model, and what it got.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use assay_records::{Thinking, TokenUsage};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;

use crate::answer::Answer;
use crate::failure::Failure;

/// The wire protocol an agent spoke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// OpenAI Chat Completions (`/v1/chat/completions`).
    ChatCompletions,
    /// OpenAI Responses (`/v1/responses`).
    Responses,
    /// Anthropic Messages (`/v1/messages`).
    Messages,
}

/// One request the agent made and what it got, kept as the episode's trajectory.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Exchange {
    /// Its place in the order requests were received, from 0.
    pub index: u32,
    /// The protocol it was made in.
    pub protocol: Protocol,
    /// Whether the agent asked for a streamed reply.
    pub stream: bool,
    /// The model name in the agent's request (whatever it was, the served model answered).
    pub model_asked: String,
    /// The agent's request body as received (its text, when it was not JSON).
    pub request: Value,
    /// The reply body in the agent's protocol, in its non-streamed form even when it was
    /// streamed; `None` when the agent got an error instead.
    pub reply: Option<Value>,
    /// The model's text, its thinking set apart.
    pub text: String,
    /// The model's tool calls.
    pub calls: Vec<RecordedCall>,
    /// The results of the tools it called last time, as this request brought them back (the
    /// tool result turns after the conversation's last reply): what its tools did, in order.
    #[serde(default)]
    pub results: Vec<RecordedResult>,
    /// The model's thinking.
    pub thinking: Option<Thinking>,
    /// Why the model stopped, as its provider said it.
    pub finish_reason: Option<String>,
    /// Tokens the provider reported.
    pub usage: TokenUsage,
    /// From receiving the request to having its answer (or failure).
    pub latency_seconds: f64,
    /// Of that, how long the model's API took (its retries included): the rest is the
    /// gateway's own (reading, translating, replying).
    #[serde(default)]
    pub model_seconds: f64,
    /// HTTP attempts made of the model's API (0: it was not asked).
    pub attempts: u32,
    /// What the agent was told instead of a reply.
    pub error: Option<String>,
    /// What the model's API said when it failed (the key never in it). Never shown to the
    /// agent: it names the provider and its endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_error: Option<String>,
}

/// A tool call the model made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedCall {
    /// The id the agent answers it with.
    pub id: String,
    /// The tool called.
    pub name: String,
    /// Its arguments, as the JSON text the model wrote (not necessarily valid).
    pub arguments: String,
}

/// A tool's result an agent sent back to the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedResult {
    /// The call it answers.
    pub call_id: String,
    /// What the tool returned.
    pub content: String,
}

/// Called with each exchange as it finishes (e.g. to append it to a file).
pub type ExchangeHook = Arc<dyn Fn(&Exchange) + Send + Sync>;

/// The exchanges so far, and those still being answered.
pub(crate) struct Journal {
    next: AtomicU32,
    done: Mutex<Vec<Exchange>>,
    /// Exchanges opened and not yet recorded.
    open: watch::Sender<usize>,
    hook: Option<ExchangeHook>,
}

impl Journal {
    pub(crate) fn new(hook: Option<ExchangeHook>) -> Journal {
        Journal {
            next: AtomicU32::new(0),
            done: Mutex::default(),
            open: watch::Sender::new(0),
            hook,
        }
    }

    /// Every exchange recorded so far, in the order they were received.
    pub(crate) fn exchanges(&self) -> Vec<Exchange> {
        let mut all = self
            .done
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        all.sort_by_key(|e| e.index);
        all
    }

    /// Waits until every exchange opened has been recorded.
    pub(crate) async fn settled(&self) {
        let mut open = self.open.subscribe();
        // The sender lives as long as `self`.
        let _ = open.wait_for(|n| *n == 0).await;
    }

    fn record(&self, exchange: Exchange) {
        if let Some(hook) = &self.hook {
            hook(&exchange);
        }
        self.done
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(exchange);
        self.open.send_modify(|n| *n -= 1);
    }
}

/// A request received and not yet answered: numbered when it arrives, recorded once when it is
/// answered, or, should the agent go away first, when it is dropped.
pub(crate) struct Pending {
    journal: Arc<Journal>,
    index: u32,
    protocol: Protocol,
    received: Instant,
    /// Whether the agent asked for a stream.
    pub(crate) stream: bool,
    /// The model it asked for.
    pub(crate) model_asked: String,
    /// Its body.
    pub(crate) request: Value,
    /// The tool results it brought back.
    pub(crate) results: Vec<RecordedResult>,
    recorded: bool,
}

impl Pending {
    /// Numbers a request of `protocol` just received.
    pub(crate) fn open(journal: &Arc<Journal>, protocol: Protocol) -> Pending {
        journal.open.send_modify(|n| *n += 1);
        Pending {
            journal: journal.clone(),
            index: journal.next.fetch_add(1, Ordering::Relaxed),
            protocol,
            received: Instant::now(),
            stream: false,
            model_asked: String::new(),
            request: Value::Null,
            results: Vec::new(),
            recorded: false,
        }
    }

    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// Records the answer the agent got, `reply` being its non-streamed form.
    pub(crate) fn answered(mut self, answer: &Answer, reply: Value) {
        let mut exchange = self.exchange();
        exchange.reply = Some(reply);
        exchange.text = answer.text.clone();
        exchange.calls = answer
            .calls
            .iter()
            .map(|c| RecordedCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect();
        exchange.thinking = answer.thinking.clone();
        exchange.finish_reason = answer.finish_reason.clone();
        exchange.usage = answer.usage.clone();
        exchange.attempts = answer.attempts;
        exchange.model_seconds = answer.model_seconds;
        self.journal.record(exchange);
    }

    /// Records the failure the agent was told of, `wording` being the protocol's.
    pub(crate) fn failed(mut self, failure: &Failure, wording: crate::failure::Wording) {
        let mut exchange = self.exchange();
        exchange.error = Some(failure.message(wording));
        exchange.upstream_error = failure.cause().map(String::from);
        exchange.attempts = failure.attempts();
        self.journal.record(exchange);
    }

    /// The exchange without its outcome; marks this one recorded.
    fn exchange(&mut self) -> Exchange {
        self.recorded = true;
        Exchange {
            index: self.index,
            protocol: self.protocol,
            stream: self.stream,
            model_asked: std::mem::take(&mut self.model_asked),
            request: std::mem::take(&mut self.request),
            reply: None,
            text: String::new(),
            calls: Vec::new(),
            results: std::mem::take(&mut self.results),
            thinking: None,
            finish_reason: None,
            usage: TokenUsage::default(),
            latency_seconds: self.received.elapsed().as_secs_f64(),
            model_seconds: 0.0,
            attempts: 0,
            error: None,
            upstream_error: None,
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.recorded {
            let mut exchange = self.exchange();
            exchange.error = Some("the agent went away before the answer".into());
            self.journal.record(exchange);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::Wording;

    #[test]
    fn exchanges_come_in_the_order_received_and_a_dropped_one_is_kept() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let hook: ExchangeHook = {
            let seen = seen.clone();
            Arc::new(move |e: &Exchange| seen.lock().unwrap().push(e.index))
        };
        let journal = Arc::new(Journal::new(Some(hook)));
        let first = Pending::open(&journal, Protocol::Messages);
        let second = Pending::open(&journal, Protocol::Responses);
        let third = Pending::open(&journal, Protocol::ChatCompletions);
        assert_eq!(*journal.open.borrow(), 3);
        second.failed(&Failure::BadRequest("x".into()), Wording::OpenAi);
        drop(third);
        first.answered(&Answer::default(), Value::Null);
        assert_eq!(*journal.open.borrow(), 0);
        assert_eq!(
            *seen.lock().unwrap(),
            [1, 2, 0],
            "the hook sees them as they finish"
        );
        let all = journal.exchanges();
        assert_eq!(all.iter().map(|e| e.index).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(all[1].error.as_deref(), Some("assay: invalid request: x"));
        assert_eq!(
            all[2].error.as_deref(),
            Some("the agent went away before the answer")
        );
        assert_eq!(all[0].error, None);
    }
}
