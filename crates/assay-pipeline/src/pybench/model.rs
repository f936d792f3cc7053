//! The model side of a PyBench run, resolved from its spec before anything runs: a replayed
//! trajectory file or an API model's client, and the agent that replies in the episodes.
//! Apart, as the LLM judge reaches its model the same way ([`chat_client`]).

use std::num::NonZeroUsize;
use std::path::Path;

use assay_agent::pybench::model::{ChatAgent, RequestLog};
use assay_agent::pybench::replay::{read_trajectories, Replay};
use assay_agent::pybench::{Protocol, Replier, Reply, ReplyError, Transcript};
use assay_models::{Backoff, Client, ClientConfig, Limits as ModelLimits, ModelSpec};
use assay_tasks::pybench::Task;

use super::{Access, EPISODES_AT_ONCE};
use crate::error::PipelineError;
use crate::serving;

/// The model side of a run, resolved from its spec before anything runs.
pub(super) enum Model {
    Replay { records: Replay, digest: String },
    Chat(Client),
}

impl Model {
    pub(super) fn resolve(
        spec: &str,
        access: &Access,
        protocol: Protocol,
    ) -> Result<Model, PipelineError> {
        if let Some(file) = spec.strip_prefix("replay:") {
            if !access.reasoning.is_default() {
                return Err(PipelineError::Invalid(
                    "--reasoning-effort, --thinking-budget, --reasoning-model and --think-tags \
                     are for model APIs; --model replay:FILE asks none"
                        .into(),
                ));
            }
            if access.serve.is_some() {
                return Err(PipelineError::Invalid(
                    "--serve starts a model server; --model replay:FILE needs none".into(),
                ));
            }
            if access.extra_body.fields().is_some() {
                return Err(PipelineError::Invalid(
                    "--extra-body is for model APIs; --model replay:FILE asks none".into(),
                ));
            }
            if protocol == Protocol::Tools {
                return Err(PipelineError::Invalid(
                    "--model replay:FILE replays markdown replies; it cannot be used with \
                     --protocol tools"
                        .into(),
                ));
            }
            let path = Path::new(file);
            let records =
                read_trajectories(path).map_err(|e| PipelineError::Invalid(e.to_string()))?;
            let bytes = std::fs::read(path).map_err(|source| PipelineError::Io {
                path: path.to_path_buf(),
                source,
            })?;
            return Ok(Model::Replay {
                records: Replay::new(&records),
                digest: digest(&bytes),
            });
        }
        Ok(Model::Chat(chat_client(spec, access, EPISODES_AT_ONCE)?))
    }

    /// The agent that plays the episodes; an API model's requests go to `log`.
    pub(super) fn agent(&self, log: RequestLog, reply_tokens: u32) -> Agent<'_> {
        match self {
            Model::Replay { records, .. } => Agent::Replay(records),
            Model::Chat(client) => Agent::Chat(ChatAgent::new(client.clone(), log, reply_tokens)),
        }
    }
}

/// The client of the API model `spec` as `access` says to reach it, `concurrency` requests
/// in flight at most (the agent's and the judge's alike).
pub(crate) fn chat_client(
    spec: &str,
    access: &Access,
    concurrency: NonZeroUsize,
) -> Result<Client, PipelineError> {
    let parsed: ModelSpec = spec.parse()?;
    if !access.request_timeout.is_finite() || access.request_timeout <= 0.0 {
        return Err(PipelineError::Invalid(
            "--request-timeout must be a positive number of seconds".into(),
        ));
    }
    let base_url = serving::base_url(
        access.base_url.as_deref(),
        access.serve.as_ref(),
        &parsed.provider,
    )?;
    Ok(Client::new(ClientConfig {
        spec: parsed,
        base_url,
        api_key: access.api_key.clone(),
        request_timeout: std::time::Duration::from_secs_f64(access.request_timeout),
        retries: access.retries,
        backoff: Backoff::default(),
        limits: ModelLimits {
            concurrency,
            requests_per_minute: access.requests_per_minute,
            tokens_per_minute: access.tokens_per_minute,
        },
        reasoning: access.reasoning.clone(),
        extra_body: access.extra_body.clone(),
    })?)
}

/// Who replies in the episodes.
pub(super) enum Agent<'a> {
    Replay(&'a Replay),
    Chat(ChatAgent),
}

impl Agent<'_> {
    /// Why the agent cannot play `task`, if it cannot: a replay file without its trajectory.
    pub(super) fn lacks(&self, task: &Task) -> Option<String> {
        match self {
            Agent::Replay(records) => (!records.has(&task.index))
                .then(|| "the replayed file has no trajectory for this task".to_string()),
            Agent::Chat(_) => None,
        }
    }
}

impl Replier for Agent<'_> {
    async fn reply(&self, task: &Task, transcript: &Transcript) -> Result<Reply, ReplyError> {
        match self {
            Agent::Replay(records) => records.reply(task, transcript).await,
            Agent::Chat(agent) => agent.reply(task, transcript).await,
        }
    }
}

/// A file's short digest (as the task set's).
pub(super) fn digest(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex()[..16].to_string()
}

/// The part of a directory name a model spec gives: `openai:gpt-4o` → `openai-gpt-4o`,
/// `replay:runs/x/trajectory.jsonl` → `replay-trajectory`.
pub(super) fn model_slug(spec: &str) -> String {
    let shown = match spec.strip_prefix("replay:") {
        Some(file) => format!(
            "replay-{}",
            Path::new(file)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        ),
        None => spec.to_string(),
    };
    shown
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use assay_records::ReasoningSettings;

    use super::*;

    #[test]
    fn model_specs_name_directories() {
        assert_eq!(model_slug("openai:gpt-4o"), "openai-gpt-4o");
        assert_eq!(
            model_slug("replay:../shared/data/pybench/trajectory.jsonl"),
            "replay-trajectory"
        );
    }

    #[test]
    fn replays_refuse_the_tools_protocol_and_bad_files() {
        let access = Access {
            base_url: None,
            api_key: None,
            request_timeout: 10.0,
            retries: 0,
            requests_per_minute: None,
            tokens_per_minute: None,
            prices: None,
            serve: None,
            reasoning: ReasoningSettings::default(),
            extra_body: Default::default(),
        };
        let err = Model::resolve("replay:/nonexistent.jsonl", &access, Protocol::Tools)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("--protocol tools"), "{err}");
        let err = Model::resolve("replay:/nonexistent.jsonl", &access, Protocol::Markdown)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("/nonexistent.jsonl"), "{err}");
    }
}
