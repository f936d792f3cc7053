//! One episode: the model replies, its code runs in the session, the model reads what came
//! back; until it answers without code or its turns run out.

use std::future::Future;
use std::time::{Duration, Instant};

use assay_models::ToolCall;
use assay_records::{CellRecord, EpisodeEnd, Message, Thinking, TokenUsage};
use assay_sandbox::Session;
use assay_tasks::pybench::Task;

use super::markdown::{self, Parsed, OBSERVATION_PREFIX};
use super::observation;

/// How the agent's code reaches the interpreter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Upstream's: the first ```` ```python ```` block of a reply runs.
    Markdown,
    /// Native tool calling: the model calls a `python` tool with the cell's code.
    Tools,
}

impl Protocol {
    /// The name options and directories use.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Markdown => "markdown",
            Protocol::Tools => "tools",
        }
    }
}

/// The tool the `tools` protocol offers.
pub const PYTHON_TOOL: &str = "python";

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
fn code_argument(call: &ToolCall) -> Result<String, String> {
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

/// How an episode runs.
#[derive(Debug, Clone)]
pub struct EpisodeSettings {
    /// How code reaches the interpreter.
    pub protocol: Protocol,
    /// Replies at most (upstream: 10).
    pub max_turns: u32,
    /// How long a cell may run before it is interrupted.
    pub cell_timeout: Duration,
    /// Characters of an observation sent back; 0 = no cap.
    pub observation_chars: usize,
    /// Token limit of a reply (upstream: 1000, which a thinking model can spend thinking).
    pub reply_tokens: u32,
}

impl Default for EpisodeSettings {
    fn default() -> Self {
        EpisodeSettings {
            protocol: Protocol::Markdown,
            max_turns: 10,
            cell_timeout: Duration::from_secs(120),
            observation_chars: 20_000,
            reply_tokens: super::model::MAX_TOKENS,
        }
    }
}

/// A finished episode.
#[derive(Debug, Clone)]
pub struct Episode {
    /// The whole conversation, in upstream's trajectory form.
    pub messages: Vec<Message>,
    /// Replies the model gave.
    pub turns: u32,
    /// Why it ended.
    pub end: EpisodeEnd,
    /// Why, in a sentence (the model's error when it failed).
    pub end_reason: String,
    /// Each cell that ran, with the figures it displayed (PNG files).
    pub cells: Vec<(CellRecord, Vec<Vec<u8>>)>,
    /// Tokens billed.
    pub tokens: TokenUsage,
    /// Wall time.
    pub seconds: f64,
}

/// Runs one episode of `task` in `session` (opened with the task's inputs). `on_turn` hears
/// each turn as it ends.
pub async fn run_episode<R: Replier>(
    task: &Task,
    session: &Session,
    replier: &R,
    settings: &EpisodeSettings,
    mut on_turn: impl FnMut(u32),
) -> Episode {
    let started = Instant::now();
    let mut transcript = Transcript {
        protocol: settings.protocol,
        opening: markdown::opening(task, settings.protocol),
        steps: Vec::new(),
    };
    let mut end = (
        EpisodeEnd::MaxTurns,
        format!("the turn limit of {} was reached", settings.max_turns),
    );
    let mut tokens = TokenUsage::default();
    let mut cells = Vec::new();
    let mut answer = None;
    while transcript.replies() < settings.max_turns as usize {
        let reply = match replier.reply(task, &transcript).await {
            Ok(reply) => reply,
            Err(e) => {
                let kind = match e {
                    ReplyError::Exhausted => EpisodeEnd::ReplayExhausted,
                    ReplyError::ContextFull(_) => EpisodeEnd::ContextFull,
                    ReplyError::Failed(_) => EpisodeEnd::ModelFailed,
                };
                end = (kind, e.to_string());
                break;
            }
        };
        tokens += &reply.usage;
        let turn = transcript.replies() as u32 + 1;
        if reply.thinking.as_ref().is_some_and(|t| t.cut) {
            // No code and no answer: what it was drafting is not run.
            transcript.steps.push(Step::Reply(reply));
            end = (
                EpisodeEnd::CutWhileThinking,
                "the reply ended inside its thinking, before any code or answer (its token \
                 limit came first)"
                    .into(),
            );
            on_turn(turn);
            break;
        }
        let code = match settings.protocol {
            Protocol::Markdown => match markdown::parse(&reply.content) {
                Parsed::Answer { kept } => Err(kept),
                Parsed::Code { code } => Ok(vec![(None, Ok(code))]),
            },
            Protocol::Tools if reply.calls.is_empty() => Err(reply.content.clone()),
            Protocol::Tools => Ok(reply
                .calls
                .iter()
                .map(|c| {
                    let code = if c.name == PYTHON_TOOL {
                        code_argument(c)
                    } else {
                        Err(format!(
                            "There is no tool `{}`; use `{PYTHON_TOOL}`.\n",
                            c.name
                        ))
                    };
                    (Some(c.id.clone()), code)
                })
                .collect()),
        };
        let calls = match code {
            Err(kept) => {
                answer = Some(kept);
                transcript.steps.push(Step::Reply(reply));
                end = (
                    EpisodeEnd::Answered,
                    "the model answered without code".into(),
                );
                on_turn(turn);
                break;
            }
            Ok(calls) => calls,
        };
        transcript.steps.push(Step::Reply(reply));
        let mut results = Vec::new();
        let mut ran = false;
        for (call_id, code) in calls {
            let text = match code {
                // One cell per turn, as upstream runs one block.
                Ok(code) if !ran => {
                    ran = true;
                    run_cell(session, &code, settings, turn, &mut cells).await
                }
                Ok(_) => "The call was not run: one cell runs per turn.\n".to_string(),
                Err(why) => why,
            };
            results.push(CallResult { call_id, text });
        }
        transcript.steps.push(Step::Results(results));
        on_turn(turn);
    }
    let turns = transcript.replies() as u32;
    let mut messages = transcript.messages();
    if let (Some(kept), Some(last)) = (answer, messages.last_mut()) {
        // Upstream keeps only its "reasoning" of a final reply without code.
        last.content = kept;
    }
    Episode {
        messages,
        turns,
        end: end.0,
        end_reason: end.1,
        cells,
        tokens,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// Runs one cell and returns its observation; an interpreter that died is restarted for the
/// next turn.
async fn run_cell(
    session: &Session,
    code: &str,
    settings: &EpisodeSettings,
    turn: u32,
    cells: &mut Vec<(CellRecord, Vec<Vec<u8>>)>,
) -> String {
    let timeout = settings.cell_timeout;
    // The wall clock decides, as upstream's interrupt would: the CPU budget only stops
    // threads that compute on several CPUs at once for that long.
    let outcome = session.exec_with(code, timeout, timeout * 2).await;
    let mut text = observation::render(&outcome, timeout);
    let mut restarted = false;
    if !outcome.session_alive {
        restarted = true;
        if let Err(e) = session.restart().await {
            text.push_str(&format!("The interpreter could not be restarted: {e}\n"));
        }
    }
    let text = observation::cap(&text, settings.observation_chars);
    let record = CellRecord {
        turn,
        status: outcome.status,
        reason: outcome.reason.clone(),
        seconds: outcome.wall.as_secs_f64(),
        output_bytes: outcome.output.total_bytes,
        observation_chars: text.chars().count(),
        restarted,
        figures: Vec::new(),
    };
    cells.push((record, outcome.figures));
    text
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
