//! A coding agent as the solver of PyBench tasks: each task's prompt, as upstream phrases it
//! for its own agent, given to the agent in a working directory holding the task's files and
//! an empty `./output/`; its model requests recorded; its episode put in upstream's
//! trajectory form, so that the same checks and the same LLM judge read it.

use std::time::Instant;

use assay_agent::pybench::markdown::OBSERVATION_PREFIX;
use assay_agent::pybench::Episode;
use assay_coding_agents::{run_episode, EpisodeSpec};
use assay_gateway::{Budget, Exchange, Stop};
use assay_records::{EpisodeEnd, Message, Status};
use assay_sandbox::{InputFile, Limits, Tree};
use assay_tasks::pybench::Task;

use super::task::{Context, NotRun};
use super::{Coding, TASKS_DIR};

/// What an agent's episode writes beside its outputs: every model request it made, and what
/// it printed.
const AGENT_DIR: &str = "agent";

/// The prompt: upstream's two opening user messages, and the one notice of its system prompt
/// that the checks depend on (the rest of that prompt is its own loop's format).
pub(super) fn prompt(task: &Task) -> String {
    format!(
        "[INFO]The data is uploaded to {}\n\n{}\n\nSave anything to ./output folder.",
        task.file_paths.join(","),
        task.user
    )
}

impl Context<'_> {
    /// Runs `coding`'s agent on `task`, keeps its outputs and its exchanges.
    pub(super) async fn coding_episode(
        &self,
        task: &Task,
        coding: &Coding,
        files: Vec<InputFile>,
    ) -> Result<(Episode, Vec<String>), NotRun> {
        let started = Instant::now();
        let spec = EpisodeSpec {
            prompt: prompt(task),
            files,
            dirs: vec!["output".into()],
            limits: Limits {
                wall: coding.wall,
                output_bytes: 4 << 20,
                ..Limits::default()
            },
            budget: Budget {
                requests: Some(coding.max_turns),
                tokens: coding.tokens,
                wall: None,
            },
            max_turns: coding.max_turns,
        };
        let ran = run_episode(
            self.engine,
            &coding.agent,
            &coding.model,
            &spec,
            &coding.bin,
            None,
        )
        .await;
        let outcome = &ran.outcome;
        if outcome.status == Status::Infra {
            return Err(NotRun::Harness(format!(
                "the agent's sandbox failed: {}",
                outcome.reason
            )));
        }
        let outputs = Tree {
            files: outcome
                .files
                .iter()
                .filter(|f| f.path.starts_with("output/"))
                .cloned()
                .collect(),
            dirs: Vec::new(),
        };
        let names = self
            .keep_outputs(task, outputs)
            .map_err(|e| NotRun::Harness(format!("keeping the episode's outputs: {e}")))?;
        let log = self.out.join(TASKS_DIR).join(&task.index).join(AGENT_DIR);
        ran.keep(&log)
            .map_err(|e| NotRun::Harness(format!("keeping the agent's log: {e}")))?;
        let (end, end_reason) = ending(ran.stop, outcome, coding.max_turns);
        let turns = ran.exchanges.iter().filter(|e| e.error.is_none()).count() as u32;
        Ok((
            Episode {
                messages: messages(task, &ran.exchanges, &ran.answer),
                turns,
                end,
                end_reason,
                cells: Vec::new(),
                tokens: ran.totals.usage,
                seconds: started.elapsed().as_secs_f64(),
            },
            names,
        ))
    }
}

/// Why the episode ended, in the record's terms.
fn ending(
    stop: Option<Stop>,
    outcome: &assay_sandbox::ScriptOutcome,
    max_turns: u32,
) -> (EpisodeEnd, String) {
    match stop {
        Some(Stop::RequestBudget) => (
            EpisodeEnd::MaxTurns,
            format!("the turn limit of {max_turns} model requests was reached"),
        ),
        Some(Stop::ContextFull) => (
            EpisodeEnd::ContextFull,
            "the conversation outgrew the model's context window".into(),
        ),
        Some(Stop::ModelFailed) => (EpisodeEnd::ModelFailed, outcome.reason.clone()),
        Some(other) => (
            EpisodeEnd::AgentEnded,
            format!("the gateway stopped the agent: {}", other.describe()),
        ),
        None if outcome.exit_code == Some(0) => (EpisodeEnd::Answered, "the agent finished".into()),
        // The episode's own time limit: the sandbox's words say which.
        None if outcome.status == Status::Timeout => {
            (EpisodeEnd::AgentEnded, outcome.reason.clone())
        }
        None => (
            EpisodeEnd::AgentEnded,
            format!("the agent {}", outcome.reason),
        ),
    }
}

/// The episode in upstream's trajectory form: its two opening user messages, then each model
/// reply (its text, each tool call as a fenced block named by the tool), each followed by
/// what the agent's tools returned, as an interpreter message; the agent's final answer last.
fn messages(task: &Task, exchanges: &[Exchange], answer: &str) -> Vec<Message> {
    let mut messages = vec![
        Message::new(
            "user",
            format!(
                "[INFO]The data is uploaded to {}",
                task.file_paths.join(",")
            ),
        ),
        Message::new("user", task.user.clone()),
    ];
    for exchange in exchanges.iter().filter(|e| e.error.is_none()) {
        if !exchange.results.is_empty() {
            let results: Vec<&str> = exchange
                .results
                .iter()
                .map(|r| r.content.as_str())
                .collect();
            messages.push(Message::new(
                "user",
                format!("{OBSERVATION_PREFIX}{}", results.join("\n")),
            ));
        }
        let mut content = exchange.text.clone();
        for call in &exchange.calls {
            if !content.is_empty() {
                content.push('\n');
            }
            content.push_str(&format!("```{}\n{}\n```", call.name, call.arguments));
        }
        messages.push(Message::new("assistant", content));
    }
    let last = messages
        .last()
        .map(|m| (m.role.as_str(), m.content.as_str()));
    if !answer.trim().is_empty() && last != Some(("assistant", answer)) {
        messages.push(Message::new("assistant", answer.to_string()));
    }
    messages
}
