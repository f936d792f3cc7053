//! One episode: the model replies, its code runs in the session, the model reads what came
//! back; until it answers without code or its turns run out.

use std::future::Future;
use std::time::{Duration, Instant};

use assay_records::{CellRecord, EpisodeEnd, Message, TokenUsage};
use assay_sandbox::Session;
use assay_tasks::pybench::Task;

use super::markdown::{self, Parsed, OBSERVATION_PREFIX};
use super::observation;

/// One reply from the model.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    /// The assistant message.
    pub content: String,
    /// Tokens billed for it.
    pub usage: TokenUsage,
}

/// Why no reply came.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReplyError {
    /// A replayed trajectory has no more replies.
    #[error("the recorded trajectory has no more replies")]
    Exhausted,
    /// The model could not be reached for good.
    #[error("{0}")]
    Failed(String),
}

/// What gives an episode its replies: a model, or a recorded trajectory.
pub trait Replier: Sync {
    /// The next assistant message for `task`, given the conversation so far.
    fn reply(
        &self,
        task: &Task,
        messages: &[Message],
    ) -> impl Future<Output = Result<Reply, ReplyError>> + Send;
}

/// How an episode runs.
#[derive(Debug, Clone)]
pub struct EpisodeSettings {
    /// Replies at most (upstream: 10).
    pub max_turns: u32,
    /// How long a cell may run before it is interrupted.
    pub cell_timeout: Duration,
    /// Characters of an observation sent back; 0 = no cap.
    pub observation_chars: usize,
}

impl Default for EpisodeSettings {
    fn default() -> Self {
        EpisodeSettings {
            max_turns: 10,
            cell_timeout: Duration::from_secs(120),
            observation_chars: 20_000,
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
    let mut episode = Episode {
        messages: markdown::opening(task),
        turns: 0,
        end: EpisodeEnd::MaxTurns,
        end_reason: format!("the turn limit of {} was reached", settings.max_turns),
        cells: Vec::new(),
        tokens: TokenUsage::default(),
        seconds: 0.0,
    };
    while episode.turns < settings.max_turns {
        let reply = match replier.reply(task, &episode.messages).await {
            Ok(reply) => reply,
            Err(e) => {
                episode.end = match e {
                    ReplyError::Exhausted => EpisodeEnd::ReplayExhausted,
                    ReplyError::Failed(_) => EpisodeEnd::ModelFailed,
                };
                episode.end_reason = e.to_string();
                break;
            }
        };
        episode.turns += 1;
        episode.tokens += &reply.usage;
        let code = match markdown::parse(&reply.content) {
            Parsed::Answer { kept } => {
                episode.messages.push(Message::new("assistant", kept));
                episode.end = EpisodeEnd::Answered;
                episode.end_reason = "the model answered without code".into();
                on_turn(episode.turns);
                break;
            }
            Parsed::Code { code } => code,
        };
        episode
            .messages
            .push(Message::new("assistant", reply.content));
        let text = run_cell(session, &code, settings, episode.turns, &mut episode.cells).await;
        episode
            .messages
            .push(Message::new("user", format!("{OBSERVATION_PREFIX}{text}")));
        on_turn(episode.turns);
    }
    episode.seconds = started.elapsed().as_secs_f64();
    episode
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
