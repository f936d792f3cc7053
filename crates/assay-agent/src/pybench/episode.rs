//! One episode: the model replies, its code runs in the session, the model reads what came
//! back; until it answers without code or its turns run out.

use std::time::{Duration, Instant};

use assay_records::{CellRecord, EpisodeEnd, Message, TokenUsage};
use assay_sandbox::Session;
use assay_tasks::pybench::Task;

use super::markdown::{self, Parsed};
use super::observation;
use super::protocol::{Protocol, PYTHON_TOOL};
use super::transcript::{code_argument, CallResult, Replier, ReplyError, Step, Transcript};

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
