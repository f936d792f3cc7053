//! The model's answer to one request, in the terms every protocol renders it from.

use assay_models::{Response, ToolCall};
use assay_records::{Thinking, TokenUsage};
use serde_json::Value;

/// What the model said: the one sample a gateway request asks for.
#[derive(Clone, Debug, Default)]
pub(crate) struct Answer {
    /// Its text, any thinking set apart.
    pub(crate) text: String,
    /// Its tool calls, each with an id (made up where the provider gave none: the agent must
    /// have one to answer the call with) and arguments that are at least `{}`.
    pub(crate) calls: Vec<ToolCall>,
    /// Its thinking.
    pub(crate) thinking: Option<Thinking>,
    /// Anthropic's signed thinking blocks, as they came (empty from other providers).
    pub(crate) thinking_blocks: Vec<Value>,
    /// The provider's finish reason, as it said it.
    pub(crate) finish_reason: Option<String>,
    pub(crate) usage: TokenUsage,
    /// HTTP attempts the client made.
    pub(crate) attempts: u32,
    /// How long the model's API took, its retries and waits included.
    pub(crate) model_seconds: f64,
}

impl Answer {
    /// The first sample of `response` (the only one asked for); `exchange` numbers the ids
    /// made up for its calls.
    pub(crate) fn new(response: Response, exchange: u32) -> Answer {
        let calls = first(response.tool_calls)
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, call)| ToolCall {
                id: if call.id.is_empty() {
                    format!("call_assay_{exchange}_{i}")
                } else {
                    call.id
                },
                // Agents parse the arguments as JSON: an empty text is no arguments.
                arguments: if call.arguments.trim().is_empty() {
                    "{}".into()
                } else {
                    call.arguments
                },
                name: call.name,
            })
            .collect();
        Answer {
            text: first(response.answers).unwrap_or_default(),
            calls,
            thinking: first(response.thinking).flatten(),
            thinking_blocks: first(response.thinking_blocks).unwrap_or_default(),
            finish_reason: first(response.finish_reasons).flatten(),
            usage: response.usage,
            attempts: response.attempts,
            model_seconds: response.latency.as_secs_f64(),
        }
    }

    /// Why the model stopped, whichever provider said it.
    pub(crate) fn finish(&self) -> Finish {
        match self.finish_reason.as_deref() {
            Some(reason) if assay_models::hit_token_limit(reason) => Finish::Length,
            _ if !self.calls.is_empty() => Finish::ToolCalls,
            Some("stop_sequence") => Finish::StopSequence,
            Some("content_filter" | "refusal") => Finish::Filtered,
            _ => Finish::Stop,
        }
    }

    /// The thinking's text, when there is some to show.
    pub(crate) fn thought(&self) -> Option<&str> {
        self.thinking
            .as_ref()
            .map(|t| t.text.as_str())
            .filter(|t| !t.trim().is_empty())
    }
}

/// Why the model stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Finish {
    /// It finished its answer.
    Stop,
    /// It hit the token limit (OpenAI `length`, Anthropic `max_tokens`).
    Length,
    /// It called tools and waits for their results (`tool_calls`, `tool_use`).
    ToolCalls,
    /// It wrote a stop sequence (Anthropic says so apart; OpenAI says `stop`).
    StopSequence,
    /// The provider filtered or refused the answer.
    Filtered,
}

/// The first of `list`.
fn first<T>(list: Vec<T>) -> Option<T> {
    list.into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn response(finish: &str, calls: Vec<ToolCall>) -> Response {
        Response {
            texts: vec!["t".into()],
            finish_reasons: vec![Some(finish.into())],
            tool_calls: vec![calls],
            answers: vec!["t".into()],
            thinking: vec![None],
            thinking_blocks: vec![Vec::new()],
            usage: TokenUsage::default(),
            latency: Duration::ZERO,
            attempts: 1,
        }
    }

    fn call(id: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn finish_reasons_of_both_providers_mean_the_same() {
        let finish = |reason, calls| Answer::new(response(reason, calls), 0).finish();
        assert_eq!(finish("length", vec![]), Finish::Length);
        assert_eq!(finish("max_tokens", vec![call("a", "{}")]), Finish::Length);
        assert_eq!(finish("stop", vec![call("a", "{}")]), Finish::ToolCalls);
        assert_eq!(finish("tool_use", vec![call("a", "{}")]), Finish::ToolCalls);
        assert_eq!(finish("end_turn", vec![]), Finish::Stop);
        assert_eq!(finish("stop_sequence", vec![]), Finish::StopSequence);
        assert_eq!(finish("content_filter", vec![]), Finish::Filtered);
    }

    #[test]
    fn calls_get_ids_and_arguments() {
        let answer = Answer::new(response("tool_calls", vec![call("", " ")]), 7);
        assert_eq!(answer.calls[0].id, "call_assay_7_0");
        assert_eq!(answer.calls[0].arguments, "{}");
    }
}
