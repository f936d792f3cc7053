//! A coding agent as the solver of BigCodeBench tasks: the task's prompt in a workspace of
//! its own, `solution.py` read back as its answer, which is then sanitized, logged and judged
//! exactly as a model's answer is. The tests are never in its reach: they live in assay's
//! binary, the jobs that run them start after the agent has gone.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use assay_coding_agents::{run_episode, EpisodeSpec, ModelAccess};
use assay_gateway::Budget;
use assay_generate::prompt::{agent_message, AGENT_SOLUTION_FILE};
use assay_generate::{Solved, Solver};
use assay_models::Client;
use assay_records::Status;
use assay_sandbox::{Engine, Limits};
use assay_tasks::bigcodebench::{Split, Task};

use crate::agents::CodingAgent;

/// Where a run keeps each episode's record: `agents/<task number>-<sample>/`.
pub const AGENTS_DIR: &str = "agents";

/// A coding agent answering BigCodeBench tasks in `engine`'s sandbox.
pub struct AgentSolver {
    /// The sandbox (the judge's own: the agent's episodes share its CPU slots).
    pub engine: Engine,
    /// The agent and an episode's wall time.
    pub coding: CodingAgent,
    /// Its model.
    pub model: ModelAccess,
    /// The benchmark environment's `bin`, first on its `PATH`.
    pub bin: PathBuf,
    /// Model requests an episode may make.
    pub max_turns: u32,
    /// The run directory.
    pub run: PathBuf,
}

impl Solver for AgentSolver {
    fn client(&self) -> &Client {
        &self.model.client
    }

    fn solve<'a>(
        &'a self,
        task: &'a Task,
        split: Split,
        sample: u32,
    ) -> Pin<Box<dyn Future<Output = Solved> + Send + 'a>> {
        Box::pin(async move {
            let spec = EpisodeSpec {
                prompt: agent_message(task, split),
                files: Vec::new(),
                dirs: Vec::new(),
                limits: Limits {
                    wall: self.coding.wall,
                    output_bytes: 4 << 20,
                    ..Limits::default()
                },
                budget: Budget {
                    requests: Some(self.max_turns),
                    tokens: self.coding.tokens,
                    wall: None,
                },
                max_turns: self.max_turns,
            };
            let episode = run_episode(
                &self.engine,
                &self.coding.agent,
                &self.model,
                &spec,
                &self.bin,
                None,
            )
            .await;
            let number = assay_records::task_number(&task.task_id);
            let dir = self.run.join(AGENTS_DIR).join(format!("{number}-{sample}"));
            if let Err(e) = episode.keep(&dir) {
                tracing::warn!("keeping the agent's log in {}: {e}", dir.display());
            }
            let requests = episode.totals.requests;
            let usage = episode.totals.usage;
            let outcome = episode.outcome;
            if outcome.status == Status::Infra {
                return Solved {
                    answer: Err(format!("the agent's sandbox failed: {}", outcome.reason)),
                    usage,
                    requests,
                };
            }
            // No file is an empty answer: judged `fail`, as a model's empty reply is.
            let answer = outcome
                .files
                .iter()
                .find(|f| f.path == AGENT_SOLUTION_FILE)
                .map(|f| String::from_utf8_lossy(&f.data).into_owned())
                .unwrap_or_default();
            Solved {
                answer: Ok(answer),
                usage,
                requests,
            }
        })
    }
}
