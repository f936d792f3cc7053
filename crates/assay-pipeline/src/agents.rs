//! `assay agents check`: an installed coding agent driven end to end by a scripted model (the
//! agent's protocol, the gateway, the sandbox's relay, its shell tool running in the sandbox),
//! so that a user sees it work before spending tokens on it.

use std::num::NonZeroUsize;
use std::time::Duration;

use assay_coding_agents::{
    run_episode, Episode, EpisodeSpec, Installed, ModelAccess, ScriptedModel, CHECK_FILE,
    CHECK_TEXT,
};
use assay_gateway::Budget;
use assay_models::{Backoff, Client, ClientConfig, Limits as ModelLimits};
use assay_pyenv::Environment;
use assay_records::ReasoningSettings;
use assay_sandbox::Limits;

use crate::engine::{self, EngineSettings};
use crate::error::PipelineError;

/// A coding agent chosen to solve the tasks.
#[derive(Clone)]
pub struct CodingAgent {
    /// The agent, installed.
    pub agent: Installed,
    /// Wall time of an episode.
    pub wall: Duration,
    /// Tokens an episode's model requests may use (prompt and reply, as the provider counts
    /// them); none: no bound but the turns.
    pub tokens: Option<u64>,
}

impl CodingAgent {
    /// The agent as the manifest names it: its name and pinned packages,
    /// `codex (@openai/codex@0.171.0)`.
    pub fn identity(&self) -> String {
        let declaration = &self.agent.declaration;
        let install = &declaration.install;
        let pins = [&install.npm[..], &install.pypi[..]].concat().join(" ");
        format!("{} ({pins})", declaration.name)
    }
}

/// What a check found.
pub struct CheckReport {
    /// The episode.
    pub episode: Episode,
    /// Whether the agent ran the command, left its file and exited cleanly; else why not.
    pub verdict: Result<(), String>,
}

/// The prompt of a check.
const PROMPT: &str = "Run the shell command `echo assay-check > assay-check.txt` in the current \
                      directory, then stop.";

/// Runs `agent` once in `env`'s sandbox against the scripted model.
pub async fn check(
    agent: &Installed,
    env: &Environment,
    settings: &EngineSettings,
) -> Result<CheckReport, PipelineError> {
    let mut settings = settings.clone();
    settings.visible.extend(agent.visible.iter().cloned());
    let engine = engine::start(env, &settings, &[]).await?;
    let model = ScriptedModel::start(agent.declaration.smoke.clone())
        .await
        .map_err(|e| PipelineError::Invalid(format!("starting the scripted model: {e}")))?;
    let client = Client::new(ClientConfig {
        spec: "openai:assay-scripted".parse()?,
        base_url: Some(model.base_url.clone()),
        api_key: None,
        request_timeout: Duration::from_secs(30),
        retries: 0,
        backoff: Backoff::default(),
        limits: ModelLimits {
            concurrency: NonZeroUsize::new(4).expect("4 is not 0"),
            requests_per_minute: None,
            tokens_per_minute: None,
        },
        reasoning: ReasoningSettings::default(),
        extra_body: Default::default(),
    })?;
    let access = ModelAccess {
        client,
        name: "assay-scripted".into(),
        temperature: 0.0,
        max_tokens: 1024,
    };
    let spec = EpisodeSpec {
        prompt: PROMPT.into(),
        files: Vec::new(),
        dirs: Vec::new(),
        limits: Limits {
            wall: Duration::from_secs(180),
            memory_bytes: 4 << 30,
            output_bytes: 4 << 20,
            ..Limits::default()
        },
        budget: Budget {
            requests: Some(12),
            tokens: None,
            wall: None,
        },
        max_turns: 10,
    };
    let bin = env.dir.join("bin");
    let episode = run_episode(&engine, agent, &access, &spec, &bin, None).await;
    let verdict = verdict(&episode);
    Ok(CheckReport { episode, verdict })
}

fn verdict(episode: &Episode) -> Result<(), String> {
    let outcome = &episode.outcome;
    let file = outcome.files.iter().find(|f| f.path == CHECK_FILE);
    let wanted = format!("{CHECK_TEXT}\n");
    if let Some(stop) = episode.stop {
        return Err(format!("the gateway stopped the episode: {stop:?}"));
    }
    if outcome.exit_code != Some(0) {
        return Err(format!("the agent {}", outcome.reason));
    }
    match file {
        Some(f) if f.data == wanted.as_bytes() => Ok(()),
        Some(f) => Err(format!(
            "{CHECK_FILE} holds {:?}, not {wanted:?}",
            String::from_utf8_lossy(&f.data)
        )),
        None => Err(format!("the agent left no {CHECK_FILE}")),
    }
}
