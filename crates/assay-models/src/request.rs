//! What the caller asks for: one prompt and its sampling parameters.

/// The text sent to the model. The crate knows nothing of benchmarks; building the prompt is
/// the caller's job.
#[derive(Clone, Debug, PartialEq)]
pub enum Prompt {
    /// A chat: for BigCodeBench one user message (what the official harness sends to API chat
    /// models: no system message, no assistant prefill); for agents a whole conversation.
    Chat(Conversation),
    /// A raw completion prompt for base models, sent to `{base}/completions`. Only
    /// OpenAI-compatible servers offer that endpoint; Anthropic fails up front.
    Completion {
        /// The text the model continues.
        prompt: String,
    },
}

impl Prompt {
    /// Characters sent as text: every turn, the system prompt, the tools offered (their
    /// schemas as JSON), or the completion prompt. What the prompt's tokens are estimated from.
    pub(crate) fn chars(&self) -> usize {
        let count = |s: &str| s.chars().count();
        match self {
            Prompt::Completion { prompt } => count(prompt),
            Prompt::Chat(chat) => {
                let turns: usize = chat
                    .turns
                    .iter()
                    .map(|turn| match turn {
                        Turn::User(text) => count(text),
                        Turn::Assistant { text, calls, .. } => {
                            count(text)
                                + calls
                                    .iter()
                                    .map(|c| count(&c.name) + count(&c.arguments))
                                    .sum::<usize>()
                        }
                        Turn::ToolResult { content, .. } => count(content),
                    })
                    .sum();
                let tools: usize = chat
                    .tools
                    .iter()
                    .map(|t| {
                        count(&t.name) + count(&t.description) + t.parameters.to_string().len()
                    })
                    .sum();
                chat.system.as_deref().map_or(0, count) + turns + tools
            }
        }
    }

    /// A chat of one user message.
    pub fn user(text: impl Into<String>) -> Prompt {
        Prompt::Chat(Conversation {
            system: None,
            turns: vec![Turn::User(text.into())],
            tools: Vec::new(),
        })
    }
}

/// A conversation so far, and the tools the model may call.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Conversation {
    /// The system prompt, if any (OpenAI: a first `system` message; Anthropic: `system`).
    pub system: Option<String>,
    /// The turns, oldest first. Consecutive user turns are sent as they are (Anthropic joins
    /// them into one).
    pub turns: Vec<Turn>,
    /// Tools offered; empty = none sent.
    pub tools: Vec<Tool>,
}

/// One turn of a conversation.
#[derive(Clone, Debug, PartialEq)]
pub enum Turn {
    /// What the user said.
    User(String),
    /// What the model said, with the tools it called.
    Assistant {
        /// Its text (may be empty when it only called tools), without its thinking.
        text: String,
        /// Its tool calls, in order.
        calls: Vec<ToolCall>,
        /// Anthropic's thinking blocks of the reply, as they came: sent back unchanged before
        /// its tool calls, as the API requires of a tool-use turn with extended thinking.
        /// Never sent anywhere else.
        thinking_blocks: Vec<serde_json::Value>,
    },
    /// A tool call's result.
    ToolResult {
        /// The call answered.
        call_id: String,
        /// The result.
        content: String,
    },
}

/// A tool the model may call.
#[derive(Clone, Debug, PartialEq)]
pub struct Tool {
    /// Its name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// Its arguments, as a JSON Schema object.
    pub parameters: serde_json::Value,
}

/// A call the model made.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// The provider's id for it, quoted back with the result.
    pub id: String,
    /// The tool called.
    pub name: String,
    /// Its arguments, as the JSON text the model wrote (not necessarily valid).
    pub arguments: String,
}

/// One prompt and how to sample it.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// What to send.
    pub prompt: Prompt,
    /// Samples wanted for this prompt. OpenAI gets one request with `n`; Anthropic has no `n`,
    /// so it gets `n` requests.
    pub n: u32,
    /// Not sent to OpenAI reasoning models, which reject it, nor with Anthropic's extended
    /// thinking, which only takes its default.
    pub temperature: f64,
    /// `None` = not sent, leaving the provider's default.
    pub top_p: Option<f64>,
    /// Token limit for each sample, sent as `max_tokens` or `max_completion_tokens` as the
    /// server expects (with Anthropic's extended thinking, on top of the thinking budget).
    pub max_tokens: u32,
    /// Strings that end generation; empty = not sent. The matched string is not in the text.
    pub stop: Vec<String>,
    /// OpenAI's `frequency_penalty` (chat, non-reasoning models); `None` = not sent. Anthropic
    /// has no such parameter: never sent there.
    pub frequency_penalty: Option<f64>,
    /// OpenAI's `presence_penalty`, under the same rules as `frequency_penalty`.
    pub presence_penalty: Option<f64>,
}
