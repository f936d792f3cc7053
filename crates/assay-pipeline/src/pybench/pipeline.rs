//! The PyBench pipeline from its request to its report: the input checked, the sandbox
//! started, the run directory opened (or resumed: what is recorded is kept, what failed runs
//! again), every task's future driven to its record, and the run finished. Apart from what a
//! task does ([`super::task`]), as this is the one loop that holds the directory and the
//! listener.

use std::collections::{BTreeMap, BTreeSet};
use std::num::{NonZeroU32, NonZeroU64};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use assay_agent::pybench::checks::{self, Judge, Outputs};
use assay_agent::pybench::model::RequestLog;
use assay_agent::pybench::replay::read_trajectories;
use assay_agent::pybench::Protocol;
use assay_coding_agents::ModelAccess as AgentModel;
use assay_models::LoadReports;
use assay_records::{
    EpisodeEnd, EpisodeRecord, GenerationRecord, Identity, Kind, Listener, Manifest, ModelAccess,
    RunEvent, Status, TrajectoryRecord,
};
use assay_rundir::{Journal, RunDir};
use assay_tasks::pybench::Task;
use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::{mpsc, watch, Semaphore};

use super::model::{digest, model_slug, Model};
use super::summary::finish;
use super::task::{Context, Item};
use super::{
    load_tasks, Coding, PybenchReport, PybenchRequest, Source, EPISODES_AT_ONCE, GENERATION,
    TASKS_DIR, TRAJECTORIES,
};
use crate::engine;
use crate::error::PipelineError;
use crate::serving;

/// Runs (`Source::Episodes`) or judges (`Source::Recorded`) PyBench tasks into a run
/// directory, telling `listener` as it goes.
pub async fn pybench(
    request: PybenchRequest,
    listener: &mut dyn Listener,
) -> Result<PybenchReport, PipelineError> {
    let started = Instant::now();
    let data = load_tasks(&request.data, &request.tasks, request.shard)?;
    // Everything that can be wrong with the input is found before anything runs.
    let (reasoning, extra_body) = match &request.source {
        Source::Episodes { access, .. } => (
            access.reasoning.in_identity(),
            access.extra_body.fields().cloned(),
        ),
        Source::Recorded { .. } => (None, None),
    };
    let (kind, model, recorded, identity_model, protocol, settings) = match &request.source {
        Source::Episodes {
            model,
            access,
            settings,
            agent,
        } => {
            let resolved = Model::resolve(model, access, settings.protocol)?;
            if agent.is_some() && matches!(resolved, Model::Replay { .. }) {
                return Err(PipelineError::Invalid(
                    "--agent runs a coding agent on a model API; --model replay:FILE replays \
                     upstream's loop"
                        .into(),
                ));
            }
            if settings.reply_tokens == 0 {
                return Err(PipelineError::Invalid(
                    "--max-tokens must be at least 1".into(),
                ));
            }
            if settings.max_turns == 0 {
                return Err(PipelineError::Invalid(
                    "--max-turns must be at least 1".into(),
                ));
            }
            (
                Kind::PybenchRun,
                Some(resolved),
                None,
                model.clone(),
                Some(settings.protocol),
                Some(settings.clone()),
            )
        }
        Source::Recorded {
            trajectories,
            outputs,
        } => {
            let records = read_trajectories(trajectories)
                .map_err(|e| PipelineError::Invalid(e.to_string()))?;
            if let Some(dir) = outputs.as_ref().filter(|d| !d.is_dir()) {
                return Err(PipelineError::Invalid(format!(
                    "--outputs {}: not a folder",
                    dir.display()
                )));
            }
            let name = format!(
                "recorded-{}",
                trajectories
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            );
            (Kind::PybenchEval, None, Some(records), name, None, None)
        }
    };
    let chosen = match &request.source {
        Source::Episodes { agent, .. } => agent.as_ref(),
        Source::Recorded { .. } => None,
    };
    let solver = match chosen {
        Some(coding) => format!("agent-{}", coding.agent.declaration.name),
        None => protocol.map_or("recorded", Protocol::as_str).to_string(),
    };
    let out = request.out.clone().unwrap_or_else(|| {
        let protocol = &solver;
        let shard = request
            .shard
            .map(|s| format!("-{}", s.slug()))
            .unwrap_or_default();
        PathBuf::from("runs").join(format!(
            "pybench-{}-{protocol}-{}{shard}",
            request.checks.as_str(),
            model_slug(&identity_model)
        ))
    });
    let mut hidden: Vec<&Path> = vec![&out, &request.data];
    if let Source::Recorded {
        trajectories,
        outputs,
    } = &request.source
    {
        hidden.push(trajectories);
        if let Some(dir) = outputs {
            hidden.push(dir);
        }
    }
    if let Source::Episodes { model, .. } = &request.source {
        if let Some(file) = model.strip_prefix("replay:") {
            hidden.push(Path::new(file));
        }
    }
    let mut engine_settings = request.engine.clone();
    if let Some(chosen) = chosen {
        engine_settings
            .visible
            .extend(chosen.agent.visible.iter().cloned());
    }
    let engine = engine::start(&request.env, &engine_settings, &hidden).await?;

    let identity = Identity {
        benchmark: Some("pybench".into()),
        dataset: Some(request.data.display().to_string()),
        dataset_digest: Some(data.digest.clone()),
        tasks: Some(request.tasks.clone()),
        shard: request.shard,
        model: Some(identity_model.clone()),
        reasoning,
        extra_body,
        samples_digest: match (&model, &request.source) {
            (Some(Model::Replay { digest, .. }), _) => Some(digest.clone()),
            (None, Source::Recorded { trajectories, .. }) => {
                Some(digest(&std::fs::read(trajectories).map_err(|source| {
                    PipelineError::Io {
                        path: trajectories.clone(),
                        source,
                    }
                })?))
            }
            _ => None,
        },
        protocol: match chosen {
            Some(_) => None,
            None => protocol.map(|p| p.as_str().to_string()),
        },
        agent: chosen.map(|c| c.identity()),
        checks: Some(request.checks.as_str().into()),
        max_turns: settings.as_ref().map(|s| s.max_turns),
        // Upstream's limit is left out, as runs recorded before it could be changed.
        reply_tokens: settings
            .as_ref()
            .map(|s| s.reply_tokens)
            .filter(|t| *t != assay_agent::pybench::model::MAX_TOKENS),
        cell_timeout_seconds: settings.as_ref().map(|s| s.cell_timeout.as_secs()),
        observation_chars: settings.as_ref().map(|s| s.observation_chars),
        network: Some(request.engine.network),
        conditions: Some(request.engine.conditions),
        environment: Some(request.env.key()),
        ..Identity::default()
    };
    let mut manifest = Manifest::new(kind, identity);
    crate::engine::record_machine(&mut manifest, &engine, &request.env, request.engine.network);
    // The recordings judged, as `assay eval` names its samples file: the conversations of an
    // evaluation are there, not in the directory.
    if let Source::Recorded { trajectories, .. } = &request.source {
        manifest.samples =
            Some(std::fs::canonicalize(trajectories).unwrap_or_else(|_| trajectories.clone()));
    }
    if let (Some(Model::Chat(client)), Source::Episodes { access, .. }) = (&model, &request.source)
    {
        manifest.model_access = Some(ModelAccess {
            base_url: Some(client.base_url().to_string()),
            concurrency: EPISODES_AT_ONCE.get(),
            request_timeout_seconds: access.request_timeout,
            retries: access.retries,
            requests_per_minute: access.requests_per_minute.map(NonZeroU32::get),
            tokens_per_minute: access.tokens_per_minute.map(NonZeroU64::get),
            prices: access.prices,
            server: None,
        });
    }
    let opened = RunDir::open::<EpisodeRecord>(&out, &manifest)?;
    let mut run = opened.dir;
    // How the model is reached this time (a resumed run keeps its manifest): the summary's
    // cost is at these prices. The server an earlier session started stays on record until
    // another is.
    if let Some(access) = manifest.model_access.as_mut() {
        let mut kept = run.manifest()?;
        access.server = kept.model_access.as_ref().and_then(|a| a.server.clone());
        if kept.model_access.as_ref() != Some(access) {
            kept.model_access = Some(access.clone());
            run.update_manifest(&kept)?;
        }
    }
    // Upstream-format trajectories, of the episodes a run plays (an evaluation has its input).
    let (mut trajectories, old_trajectories) = match kind {
        Kind::PybenchRun => {
            let (journal, old) = run.journal::<TrajectoryRecord>(TRAJECTORIES)?;
            (Some(journal), old)
        }
        _ => (None, Vec::new()),
    };
    // Every request to an API model, as it returns.
    let requests: Arc<Mutex<Option<Journal>>> = Arc::new(Mutex::new(None));
    if let Some(Model::Chat(_)) = &model {
        let (journal, _) = run.journal::<GenerationRecord>(GENERATION)?;
        *requests.lock().expect("not poisoned") = Some(journal);
    }
    let log: RequestLog = {
        let requests = requests.clone();
        Arc::new(move |record: GenerationRecord| {
            if let Some(journal) = requests.lock().expect("not poisoned").as_mut() {
                if let Err(e) = journal.append(&record) {
                    tracing::warn!("generation.jsonl: {e}");
                }
            }
        })
    };
    let reply_tokens = settings
        .as_ref()
        .map_or(assay_agent::pybench::model::MAX_TOKENS, |s| s.reply_tokens);
    let agent = model.as_ref().map(|m| m.agent(log, reply_tokens));
    // A task is done when its record is on disk (with its trajectory, for an episode that
    // ran) and neither the model nor the harness failed (those run again). An episode whose
    // check could not be made, or whose check reads the outputs of a task that runs again
    // (upstream's 68 and 82 read 67's and 81's), is judged again from what it left.
    let recorded_ids: BTreeSet<String> = old_trajectories
        .iter()
        .map(|t| format!("{}{}", assay_tasks::pybench::ID_PREFIX, t.index))
        .collect();
    let ran = |end: EpisodeEnd| {
        matches!(
            end,
            EpisodeEnd::Answered
                | EpisodeEnd::MaxTurns
                | EpisodeEnd::ReplayExhausted
                | EpisodeEnd::ContextFull
                | EpisodeEnd::AgentEnded
        )
    };
    let mut records: BTreeMap<String, EpisodeRecord> = opened
        .records
        .into_iter()
        .filter(|r| !matches!(r.end, EpisodeEnd::ModelFailed | EpisodeEnd::HarnessFailed))
        .filter(|r| !ran(r.end) || recorded_ids.contains(&r.task_id))
        .map(|r| (r.task_id.clone(), r))
        .collect();
    let mut kept_trajectories: BTreeMap<String, TrajectoryRecord> = old_trajectories
        .into_iter()
        .map(|t| (t.index.clone(), t))
        .collect();
    let pending: Vec<&Task> = data
        .tasks
        .iter()
        .filter(|t| !records.contains_key(&t.task_id()))
        .collect();
    let runs_again: BTreeSet<&str> = pending.iter().map(|t| t.index.as_str()).collect();
    let again: Vec<&Task> = data
        .tasks
        .iter()
        .filter(|t| {
            records.get(&t.task_id()).is_some_and(|r| {
                let reads_other = checks::table().get(&t.index).is_some_and(|c| {
                    let owner = checks::reads_outputs_of(&t.index, &c.faithful);
                    owner != t.index && runs_again.contains(owner)
                });
                ran(r.end) && (r.status == Status::Infra || reads_other)
            })
        })
        .collect();
    let rejudged: Vec<(&Task, EpisodeRecord)> = again
        .into_iter()
        .filter_map(|t| records.remove(&t.task_id()).map(|r| (t, r)))
        .collect();
    if !records.is_empty() {
        listener.on_event(&RunEvent::Notice {
            message: format!(
                "resuming {} ({} of {} tasks already recorded)",
                out.display(),
                records.len(),
                data.tasks.len()
            ),
        });
    }
    listener.on_event(&RunEvent::EpisodesStarted {
        episodes: data.tasks.len(),
        done: records.len(),
    });

    let outputs = match &request.source {
        Source::Episodes { .. } => Outputs::PerTask(out.join(TASKS_DIR)),
        Source::Recorded {
            outputs: Some(dir), ..
        } => Outputs::Shared(dir.clone()),
        Source::Recorded { outputs: None, .. } => Outputs::Unknown,
    };
    let coding = match (chosen, &model, &settings) {
        (Some(chosen), Some(Model::Chat(client)), Some(settings)) => Some(Coding {
            agent: chosen.agent.clone(),
            model: AgentModel {
                client: client.clone(),
                name: client.spec().model.clone(),
                temperature: assay_agent::pybench::model::TEMPERATURE,
                max_tokens: settings.reply_tokens,
            },
            bin: request.env.dir.join("bin"),
            max_turns: settings.max_turns,
            wall: chosen.wall,
            tokens: chosen.tokens,
        }),
        _ => None,
    };
    let judge = Judge {
        engine: &engine,
        data: &data.root,
        outputs: &outputs,
    };
    // A task's outputs are on disk once its sender says so (upstream's tests 68 and 82 read
    // the outputs of tasks 67 and 81).
    let finished: BTreeMap<String, (watch::Sender<bool>, watch::Receiver<bool>)> = pending
        .iter()
        .map(|t| (t.index.clone(), watch::channel(false)))
        .collect();
    let places = Semaphore::new(EPISODES_AT_ONCE.get());
    // The tasks whose episodes ended (their checks start), told by the tasks as it happens
    // and by the loop below to the listener, which the loop alone holds.
    let (ended, mut episodes_ended) = mpsc::unbounded_channel::<String>();
    let context = Context {
        data: &data,
        engine: &engine,
        judge: &judge,
        out: &out,
        network: request.engine.network,
        checks: request.checks,
        finished: &finished,
        places: &places,
        episode_ends: ended,
        coding: coding.as_ref(),
    };
    let mut running = FuturesUnordered::new();
    for task in &pending {
        let item = match (&agent, &recorded) {
            (Some(agent), _) => Item::Run {
                agent,
                settings: settings.as_ref().expect("episodes have settings"),
            },
            (None, Some(recorded)) => Item::Recorded(
                recorded.iter().find(|r| r.index == task.index),
                request.source.recorded_file(),
            ),
            (None, None) => unreachable!("a source is either episodes or recordings"),
        };
        running.push(context.task(task, item));
    }
    for (task, old) in rejudged {
        let trajectory = kept_trajectories.get(&task.index).cloned();
        running.push(context.task(task, Item::Rejudge(Box::new((old, trajectory)))));
    }
    let client = match &model {
        Some(Model::Chat(client)) => Some(client),
        _ => None,
    };
    let serve = match &request.source {
        Source::Episodes { access, .. } => access.serve.as_ref(),
        Source::Recorded { .. } => None,
    };
    // Started only for episodes still to play; stopped when they have (or dropped, and so
    // stopped, when the run fails).
    let server = match (serve, client) {
        (Some(serve), Some(client)) if !pending.is_empty() => {
            Some(serving::start(serve, client, &run, listener).await?)
        }
        _ => None,
    };
    let mut reports = LoadReports::new(client);
    let mut unfinished = 0;
    // Each task's future goes from its episode to its checks without waiting for any other
    // (see `Context::task`), so a record is here as soon as its own checks are done.
    loop {
        let next = tokio::select! {
            next = running.next() => next,
            Some(task_id) = episodes_ended.recv() => {
                listener.on_event(&RunEvent::EpisodeEnded { task_id });
                continue;
            }
            event = reports.next() => {
                listener.on_event(&event);
                continue;
            }
        };
        // A task tells of its episode's end before its record comes: the listener hears
        // both in that order (a task that never ran sends its end just before its record).
        while let Ok(task_id) = episodes_ended.try_recv() {
            listener.on_event(&RunEvent::EpisodeEnded { task_id });
        }
        let Some((record, trajectory)) = next else {
            break;
        };
        if matches!(
            record.end,
            EpisodeEnd::ModelFailed | EpisodeEnd::HarnessFailed
        ) {
            unfinished += 1;
        }
        if let (Some(trajectory), Some(journal)) = (&trajectory, trajectories.as_mut()) {
            journal.append(trajectory)?;
            kept_trajectories.insert(trajectory.index.clone(), trajectory.clone());
        }
        run.append(&record)?;
        listener.on_event(&RunEvent::EpisodeJudged {
            record: Box::new(record.clone()),
        });
        records.insert(record.task_id.clone(), record);
    }
    if let Some(server) = server {
        server.stop().await;
    }
    run.sync()?;
    if let Some(journal) = trajectories.as_mut() {
        journal.sync()?;
    }
    if let Some(journal) = requests.lock().expect("not poisoned").as_mut() {
        journal.sync()?;
    }
    let trajectories = trajectories.map(|_| kept_trajectories);
    let report = finish(
        &mut run,
        &data,
        records,
        trajectories,
        request.checks,
        started,
    )?;
    listener.on_event(&RunEvent::JudgingFinished);
    Ok(PybenchReport {
        unfinished,
        ..report
    })
}
