//! What an episode is made of: the model's replies, what came back for their calls, the
//! transcript they add up to, and the [`Replier`] that gives the replies (a model, or a
//! recorded trajectory). Its own module because the episode, the chat model and the replay
//! all use it, and the episode uses the chat model (its reply limit): with these types in
//! `episode`, as they were, the two imported each other.

use std::future::Future;

use assay_models::ToolCall;
use assay_records::{Message, Thinking, TokenUsage};
use assay_tasks::pybench::Task;

use super::markdown::OBSERVATION_PREFIX;
use super::protocol::{Protocol, PYTHON_TOOL};

/// One reply from the model.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    /// The assistant message's text, without its thinking: what is run and sent back.
    pub content: String,
    /// Its tool calls (the `tools` protocol).
    pub calls: Vec<ToolCall>,
    /// What the model thought before it (returned beside the text or set apart from it):
    /// recorded, never run, never sent back.
    pub thinking: Option<Thinking>,
    /// Anthropic's thinking blocks as they came, sent back with a tool-use turn.
    pub thinking_blocks: Vec<serde_json::Value>,
    /// Tokens billed for it.
    pub usage: TokenUsage,
}

/// Why no reply came.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReplyError {
    /// A replayed trajectory has no more replies.
    #[error("the recorded trajectory has no more replies")]
    Exhausted,
    /// The conversation no longer fits the model's context window: the model's server
    /// refused the request as too long, in these words.
    #[error("the conversation outgrew the model's context window: {0}")]
    ContextFull(String),
    /// The model could not be reached for good.
    #[error("{0}")]
    Failed(String),
}

/// What the model has seen and said so far.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// The protocol the episode runs.
    pub protocol: Protocol,
    /// The system prompt, the `[INFO]` message naming the files, the query.
    pub opening: Vec<Message>,
    /// Replies and what came back, in order.
    pub steps: Vec<Step>,
}

/// One step of an episode after its opening.
#[derive(Debug, Clone)]
pub enum Step {
    /// The model's reply: its text and (`tools`) its calls.
    Reply(Reply),
    /// What came back: one result per call (`tools`), or the cell's observation (`markdown`,
    /// `call_id` none).
    Results(Vec<CallResult>),
}

/// What came back for one call.
#[derive(Debug, Clone)]
pub struct CallResult {
    /// The call answered (`tools`).
    pub call_id: Option<String>,
    /// The observation.
    pub text: String,
}

impl Transcript {
    /// Replies so far.
    pub fn replies(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Reply(_)))
            .count()
    }

    /// The conversation in upstream's trajectory form: replies as assistant messages (a
    /// `tools` reply's executed code shown as the ```python block upstream's format has),
    /// results as `[INFO]This is a Code Interpreter Message:` user messages.
    pub fn messages(&self) -> Vec<Message> {
        let mut messages = self.opening.clone();
        for step in &self.steps {
            match step {
                Step::Reply(reply) => messages.push(Message {
                    thinking: reply.thinking.as_ref().map(|t| t.text.clone()),
                    ..Message::new(
                        "assistant",
                        match self.protocol {
                            Protocol::Markdown => reply.content.clone(),
                            Protocol::Tools => with_code_blocks(reply),
                        },
                    )
                }),
                Step::Results(results) => {
                    let text: String = results.iter().map(|r| r.text.as_str()).collect();
                    messages.push(Message::new("user", format!("{OBSERVATION_PREFIX}{text}")));
                }
            }
        }
        messages
    }
}

/// A `tools` reply as upstream's format would have it: its text, then each python call's
/// code in a ```python block.
fn with_code_blocks(reply: &Reply) -> String {
    let mut text = reply.content.clone();
    for call in reply.calls.iter().filter(|c| c.name == PYTHON_TOOL) {
        let code = code_argument(call).unwrap_or_else(|_| call.arguments.clone());
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("```python\n{code}\n```"));
    }
    text
}

/// The `code` argument of a python call.
pub(super) fn code_argument(call: &ToolCall) -> Result<String, String> {
    serde_json::from_str::<serde_json::Value>(&call.arguments)
        .ok()
        .and_then(|v| v["code"].as_str().map(str::to_string))
        .ok_or_else(|| {
            "The call was not run: its arguments must be a JSON object with a `code` string.\n"
                .to_string()
        })
}

/// What gives an episode its replies: a model, or a recorded trajectory.
pub trait Replier: Sync {
    /// The next reply for `task`, given the transcript so far.
    fn reply(
        &self,
        task: &Task,
        transcript: &Transcript,
    ) -> impl Future<Output = Result<Reply, ReplyError>> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_replies_read_as_upstreams_blocks() {
        let reply = Reply {
            content: "Analyse: sum".into(),
            calls: vec![ToolCall {
                id: "c1".into(),
                name: PYTHON_TOOL.into(),
                arguments: r#"{"code": "print(1 + 1)"}"#.into(),
            }],
            ..Reply::default()
        };
        assert_eq!(
            with_code_blocks(&reply),
            "Analyse: sum\n```python\nprint(1 + 1)\n```"
        );
        let bad = ToolCall {
            id: "c2".into(),
            name: PYTHON_TOOL.into(),
            arguments: "print(1)".into(),
        };
        assert!(code_argument(&bad).unwrap_err().contains("`code` string"));
    }
}
