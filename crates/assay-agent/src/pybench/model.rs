//! A chat model as PyBench's agent: the transcript sent as a conversation, with upstream's
//! sampling parameters (`config/gpt.yaml`).

use std::sync::Arc;

use assay_models::{
    Client, Conversation, Prompt, Provider, Request, RequestError, Response, Tool, Turn,
};
use assay_records::{GenerationRecord, Message};
use assay_tasks::pybench::Task;
use serde_json::json;

use super::markdown::OBSERVATION_PREFIX;
use super::protocol::{Protocol, PYTHON_TOOL};
use super::transcript::{Replier, Reply, ReplyError, Step, Transcript};

/// Upstream's sampling temperature.
pub const TEMPERATURE: f64 = 0.2;
/// Upstream's nucleus sampling (not sent to Anthropic, which rejects it with a temperature).
pub const TOP_P: f64 = 0.5;
/// Upstream's token limit per reply.
pub const MAX_TOKENS: u32 = 1000;
/// Upstream's frequency penalty (OpenAI-style servers only; Anthropic has none).
pub const FREQUENCY_PENALTY: f64 = 1.02;

/// Hears every request as it returns (the run's `generation.jsonl`).
pub type RequestLog = Arc<dyn Fn(GenerationRecord) + Send + Sync>;

/// A model reached through its API.
pub struct ChatAgent {
    client: Client,
    log: RequestLog,
    /// Token limit of a reply.
    reply_tokens: u32,
}

impl ChatAgent {
    /// The agent `client` plays, each reply limited to `reply_tokens`; `log` hears each
    /// request.
    pub fn new(client: Client, log: RequestLog, reply_tokens: u32) -> ChatAgent {
        ChatAgent {
            client,
            log,
            reply_tokens,
        }
    }

    /// The request for the next reply.
    pub fn request(&self, transcript: &Transcript) -> Request {
        let anthropic = self.client.spec().provider == Provider::Anthropic;
        Request {
            prompt: Prompt::Chat(conversation(transcript)),
            n: 1,
            temperature: TEMPERATURE,
            top_p: (!anthropic).then_some(TOP_P),
            max_tokens: self.reply_tokens,
            stop: Vec::new(),
            frequency_penalty: (!anthropic).then_some(FREQUENCY_PENALTY),
            presence_penalty: None,
        }
    }

    fn record(&self, task: &Task, response: &Result<Response, RequestError>) -> GenerationRecord {
        let mut record = GenerationRecord {
            task_id: task.task_id(),
            raw: Vec::new(),
            solutions: Vec::new(),
            finish_reasons: Vec::new(),
            usage: Default::default(),
            latency_seconds: 0.0,
            attempts: 0,
            error: None,
            wanted: 1,
            context: None,
            thinking: Vec::new(),
        };
        match response {
            Ok(r) => {
                record.raw = r.texts.clone();
                record.solutions = r
                    .tool_calls
                    .iter()
                    .flatten()
                    .map(|c| c.arguments.clone())
                    .collect();
                record.finish_reasons = r.finish_reasons.clone();
                record.thinking = r.thinking.clone();
                record.usage = r.usage.clone();
                record.latency_seconds = r.latency.as_secs_f64();
                record.attempts = r.attempts;
            }
            Err(e) => record.error = Some(e.to_string()),
        }
        record
    }
}

/// The transcript as a chat: upstream's messages for `markdown`; for `tools`, the replies'
/// calls and one tool result per call.
fn conversation(transcript: &Transcript) -> Conversation {
    let (system, users) = match transcript.opening.split_first() {
        Some((first, rest)) if first.role == "system" => (Some(first.content.clone()), rest),
        _ => (None, &transcript.opening[..]),
    };
    let mut turns: Vec<Turn> = users
        .iter()
        .map(|m: &Message| Turn::User(m.content.clone()))
        .collect();
    for step in &transcript.steps {
        match step {
            // The reply without its thinking; Anthropic's signed blocks go back with a
            // tool-use turn, as its API requires.
            Step::Reply(reply) => turns.push(match transcript.protocol {
                Protocol::Markdown => Turn::Assistant {
                    text: reply.content.clone(),
                    calls: Vec::new(),
                    thinking_blocks: Vec::new(),
                },
                Protocol::Tools => Turn::Assistant {
                    text: reply.content.clone(),
                    calls: reply.calls.clone(),
                    thinking_blocks: reply.thinking_blocks.clone(),
                },
            }),
            Step::Results(results) => match transcript.protocol {
                Protocol::Markdown => {
                    let text: String = results.iter().map(|r| r.text.as_str()).collect();
                    turns.push(Turn::User(format!("{OBSERVATION_PREFIX}{text}")));
                }
                Protocol::Tools => turns.extend(results.iter().map(|r| Turn::ToolResult {
                    call_id: r.call_id.clone().unwrap_or_default(),
                    content: r.text.clone(),
                })),
            },
        }
    }
    let tools = match transcript.protocol {
        Protocol::Markdown => Vec::new(),
        Protocol::Tools => vec![Tool {
            name: PYTHON_TOOL.into(),
            description: "Runs Python code as a new cell of a Jupyter notebook whose state \
                          persists between calls, in the folder holding ./data and ./output; \
                          returns the cell's output."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {"code": {"type": "string", "description": "The cell's code."}},
                "required": ["code"],
            }),
        }],
    };
    Conversation {
        system,
        turns,
        tools,
    }
}

impl Replier for ChatAgent {
    async fn reply(&self, task: &Task, transcript: &Transcript) -> Result<Reply, ReplyError> {
        let response = self.client.generate(&self.request(transcript)).await;
        (self.log)(self.record(task, &response));
        let response = response.map_err(|e| match e {
            RequestError::ContextFull(full) => ReplyError::ContextFull(full.message),
            other => ReplyError::Failed(other.to_string()),
        })?;
        Ok(Reply {
            content: response.answers.into_iter().next().unwrap_or_default(),
            calls: response.tool_calls.into_iter().next().unwrap_or_default(),
            thinking: response.thinking.into_iter().next().flatten(),
            thinking_blocks: response
                .thinking_blocks
                .into_iter()
                .next()
                .unwrap_or_default(),
            usage: response.usage,
        })
    }
}
