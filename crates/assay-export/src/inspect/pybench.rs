//! PyBench run directories (`assay run pybench`, `assay eval pybench`) as Inspect samples: one
//! per task (the last record of each in `results.jsonl`), its conversation from
//! `trajectory.jsonl` as upstream's format keeps it. The interpreter's observations are user
//! messages there (`[INFO]This is a Code Interpreter Message:`), which is what a model
//! driven through upstream's markdown protocol receives; they stay user messages here. An
//! `infra` episode (it could not run, or its check could not be made) carries an `error` and no
//! score.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use assay_records::{
    EpisodeEnd, EpisodeRecord, Kind, Manifest, Status, TokenUsage, TrajectoryRecord,
};
use assay_report::{read_lines, SourceError};
use assay_tasks::pybench::PyBench;
use serde_json::Value;

use super::log::{
    reasoning, ChatMessage, Content, EvalDataset, EvalError, EvalPlanStep, EvalSample,
    GenerateConfig, ModelOutput, ModelUsage, Role, SampleFacts, Score, StopReason, Verdict,
    CORRECT, INCORRECT, SCORER,
};
use super::metadata::{EpisodeFacts, EpisodeVerdict};
use super::Benchmark;

/// The episodes of the PyBench run in `dir`, played by `model`.
pub(super) fn read(dir: &Path, manifest: &Manifest, model: &str) -> Result<Benchmark, SourceError> {
    let identity = &manifest.identity;
    let mut warnings = Vec::new();
    let mut episodes: Vec<EpisodeRecord> = Vec::new();
    for record in read_lines::<EpisodeRecord>(&dir.join("results.jsonl"))? {
        // A rerun appends the episodes it runs again: the last record of a task is its own.
        match episodes.iter_mut().find(|e| e.task_id == record.task_id) {
            Some(earlier) => *earlier = record,
            None => episodes.push(record),
        }
    }
    let mut trajectories = read_lines::<TrajectoryRecord>(&dir.join("trajectory.jsonl"))?;
    if manifest.kind == Kind::PybenchEval {
        match assay_report::judged_trajectories(manifest) {
            Ok(recorded) => trajectories.extend(recorded),
            Err(why) => warnings.push(format!("the conversations are left empty: {why}")),
        }
    }
    let trajectories: HashMap<String, TrajectoryRecord> = trajectories
        .into_iter()
        .map(|t| (format!("{}{}", assay_tasks::pybench::ID_PREFIX, t.index), t))
        .collect();
    // A data folder named relatively is found from where the run started.
    let data = match identity
        .dataset
        .as_deref()
        .map(|folder| PyBench::load(&manifest.started_in().join(folder)))
    {
        Some(Ok(data)) if identity.dataset_digest.as_ref() == Some(&data.digest) => Some(data),
        Some(Ok(data)) => {
            warnings.push(format!(
                "the queries of tasks without a trajectory are left empty: {} has changed \
                 since the run",
                data.root.display()
            ));
            None
        }
        Some(Err(e)) => {
            warnings.push(format!(
                "the queries of tasks without a trajectory are left empty: {e}"
            ));
            None
        }
        None => None,
    };

    let mut usage = TokenUsage::default();
    let mut samples = Vec::new();
    for episode in &episodes {
        usage += &episode.tokens;
        let trajectory = trajectories.get(&episode.task_id);
        let input = trajectory
            .map(|t| t.user.clone())
            .or_else(|| {
                let task = data.as_ref()?.get(&episode.task_id)?;
                Some(task.user.clone())
            })
            .unwrap_or_default();
        let messages = trajectory
            .map(|t| conversation(&t.messages, model))
            .unwrap_or_default();
        let last = messages.iter().rev().find(|m| m.role == Role::Assistant);
        // The token limit ended a reply cut off inside its thinking; other replies' ends are
        // not recorded.
        let stop = match episode.end {
            EpisodeEnd::CutWhileThinking => StopReason::MaxTokens,
            _ => StopReason::Unknown,
        };
        let output = match last {
            Some(reply) => ModelOutput::answer(reply.clone(), stop),
            None => ModelOutput {
                model: model.to_string(),
                ..ModelOutput::default()
            },
        };
        let mut model_usage = BTreeMap::new();
        if episode.tokens != TokenUsage::default() {
            model_usage.insert(model.to_string(), ModelUsage::from(&episode.tokens));
        }
        let (scores, error) = judged(episode, identity.checks.clone(), &output.completion);
        samples.push(EvalSample {
            id: episode.task_id.clone(),
            epoch: 1,
            input,
            target: String::new(),
            messages,
            output,
            scores,
            metadata: Some(SampleFacts::PyBench(EpisodeFacts {
                category: episode.category.clone(),
                status: episode.status,
                reason: episode.reason.clone(),
                end: episode.end,
                end_reason: episode.end_reason.clone(),
                turns: episode.turns,
                figures: episode
                    .cells
                    .iter()
                    .flat_map(|c| c.figures.iter().cloned())
                    .collect(),
                cells: episode.cells.clone(),
                outputs: episode.outputs.clone(),
                seconds: episode.seconds,
            })),
            model_usage,
            total_time: Some(episode.seconds),
            error,
            turn_count: Some(episode.turns),
        });
    }

    let mut task_args = BTreeMap::new();
    if let Some(checks) = &identity.checks {
        task_args.insert("checks".to_string(), Value::from(checks.as_str()));
    }
    task_args.insert(
        "protocol".to_string(),
        Value::from(identity.protocol.as_deref().unwrap_or("recorded")),
    );
    Ok(Benchmark {
        task: "pybench".into(),
        task_args,
        dataset: EvalDataset {
            name: "pybench".into(),
            location: identity.dataset.clone().unwrap_or_default(),
            samples: episodes.len(),
            sample_ids: episodes.iter().map(|e| e.task_id.clone()).collect(),
        },
        steps: vec![plan_step(manifest)],
        generate_config: GenerateConfig::default(),
        epochs: 1,
        samples,
        usage,
        warnings,
    })
}

/// Upstream's messages as Inspect's: the system prompt and the opening user messages (the
/// `[INFO]` file message, the query) are the task's input, replies are the model's (what it
/// thought before one, Inspect's reasoning before its text), and what comes back after the
/// first reply is the interpreter's, as user messages.
fn conversation(messages: &[assay_records::Message], model: &str) -> Vec<ChatMessage> {
    let mut replied = false;
    messages
        .iter()
        .map(|message| match message.role.as_str() {
            "assistant" => {
                replied = true;
                let thought = message.thinking.as_deref().unwrap_or_default();
                ChatMessage::generated(model, message.content.clone())
                    .with_reasoning(reasoning(thought, 0))
            }
            "system" => ChatMessage::input(Role::System, message.content.clone()),
            _ if !replied => ChatMessage::input(Role::User, message.content.clone()),
            _ => ChatMessage {
                content: Content::Text(message.content.clone()),
                source: None,
                role: Role::User,
                model: None,
            },
        })
        .collect()
}

/// The score of a judged episode, or the error of one that could not be judged.
fn judged(
    episode: &EpisodeRecord,
    checks: Option<String>,
    final_reply: &str,
) -> (Option<BTreeMap<String, Score>>, Option<EvalError>) {
    if episode.status == Status::Infra {
        let error = EvalError::new(format!("infra: {}", episode.reason), episode.reason.clone());
        return (None, Some(error));
    }
    let score = Score {
        value: if episode.status == Status::Pass {
            CORRECT
        } else {
            INCORRECT
        },
        answer: final_reply.to_string(),
        explanation: episode.reason.clone(),
        metadata: Some(Verdict::PyBench(EpisodeVerdict {
            status: episode.status,
            reason: episode.reason.clone(),
            checks,
            faithful: episode.verdicts.faithful.clone(),
            fixed: episode.verdicts.fixed.clone(),
        })),
    };
    (Some(BTreeMap::from([(SCORER.to_string(), score)])), None)
}

/// How the episodes came about.
fn plan_step(manifest: &Manifest) -> EvalPlanStep {
    let identity = &manifest.identity;
    let mut params = BTreeMap::new();
    if manifest.kind == Kind::PybenchEval {
        return EvalPlanStep {
            solver: "recorded_trajectories".into(),
            params,
        };
    }
    if let Some(protocol) = &identity.protocol {
        params.insert("protocol".into(), Value::from(protocol.as_str()));
    }
    if let Some(turns) = identity.max_turns {
        params.insert("max_turns".into(), Value::from(turns));
    }
    if let Some(seconds) = identity.cell_timeout_seconds {
        params.insert("cell_timeout_seconds".into(), Value::from(seconds));
    }
    if let Some(chars) = identity.observation_chars {
        params.insert("observation_chars".into(), Value::from(chars));
    }
    EvalPlanStep {
        solver: "pybench_agent".into(),
        params,
    }
}
