//! PyBench: `run` (episodes, then their checks) and `eval` (recorded trajectories judged),
//! each into a run directory, resumably.

use std::collections::{BTreeMap, BTreeSet};
use std::num::{NonZeroU32, NonZeroU64, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use assay_agent::pybench::checks::{self, Judge, Mode, Outputs};
use assay_agent::pybench::model::{ChatAgent, RequestLog};
use assay_agent::pybench::published;
use assay_agent::pybench::replay::{read_trajectories, Replay};
use assay_agent::pybench::summary::summarize;
use assay_agent::pybench::{
    run_episode, Episode, EpisodeSettings, Protocol, Replier, Reply, ReplyError, Transcript,
};
use assay_models::{
    ApiKey, Backoff, Client, ClientConfig, Limits as ModelLimits, LoadReports, ModelSpec,
    ServeSettings,
};
use assay_pyenv::Environment;
use assay_records::{
    CheckVerdict, EpisodeEnd, EpisodeRecord, GenerationRecord, Identity, Kind, Listener, Manifest,
    ModelAccess, Prices, PybenchSummary, ReasoningSettings, RunEvent, Shard, Status, TokenUsage,
    TrajectoryRecord, Verdicts,
};
use assay_rundir::{Journal, RunDir, SUMMARY};
use assay_sandbox::{Engine, InputFile, Limits, SessionSpec, Tree};
use assay_tasks::pybench::{PyBench, Task};
use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::{mpsc, watch, Semaphore};

use crate::engine::{self, EngineSettings};
use crate::error::PipelineError;
use crate::serving;

/// Every request to an API model, as it returned.
pub const GENERATION: &str = "generation.jsonl";
/// The upstream-format trajectories of a run.
pub const TRAJECTORIES: &str = "trajectory.jsonl";
/// Where a run keeps each task's output files: `tasks/<index>/output/`.
pub const TASKS_DIR: &str = "tasks";
/// Where a run keeps the images cells displayed.
pub const FIGURES_DIR: &str = "figures";
/// Episodes at once (upstream runs 16); their cells share the engine's CPU slots, and their
/// requests the model's (fewer while the server is overloaded).
const EPISODES_AT_ONCE: NonZeroUsize = NonZeroUsize::new(16).expect("16 is not 0");
/// What an episode's output files may hold in all before the rest is kept cut.
const OUTPUT_BYTES: u64 = 1 << 30;
/// What a cell may print before the rest is only counted.
const CELL_OUTPUT_BYTES: usize = 4 << 20;

/// Where episodes come from.
pub enum Source {
    /// Run episodes: the model (`replay:FILE` replays a trajectory file's replies).
    Episodes {
        /// The model spec.
        model: String,
        /// How the model is reached (not for `replay:`).
        access: Access,
        /// Protocol, turns, cell timeout, observation cap.
        settings: EpisodeSettings,
    },
    /// Judge recorded trajectories; `outputs` is upstream's `./output/` folder of that run.
    Recorded {
        /// The trajectories file.
        trajectories: PathBuf,
        /// The output files, if kept.
        outputs: Option<PathBuf>,
    },
}

/// How an API model is reached.
pub struct Access {
    /// The server (none: the provider's).
    pub base_url: Option<String>,
    /// The provider's key.
    pub api_key: Option<ApiKey>,
    /// Seconds one HTTP attempt may take.
    pub request_timeout: f64,
    /// Attempts after the first.
    pub retries: u32,
    /// Requests a minute at most.
    pub requests_per_minute: Option<NonZeroU32>,
    /// Tokens a minute at most.
    pub tokens_per_minute: Option<NonZeroU64>,
    /// What tokens cost, for the summary.
    pub prices: Option<Prices>,
    /// A model server to start for the run (`--serve`).
    pub serve: Option<ServeSettings>,
    /// How the model is asked to reason, and its thinking told apart.
    pub reasoning: ReasoningSettings,
}

/// A PyBench run or evaluation.
pub struct PybenchRequest {
    /// The data folder (upstream's layout).
    pub data: PathBuf,
    /// Task indices or ids (empty: all).
    pub tasks: Vec<String>,
    /// Only this shard of those tasks (`Shard::deal` over their ids).
    pub shard: Option<Shard>,
    /// The headline verdict.
    pub checks: Mode,
    /// The run directory (none: the default name).
    pub out: Option<PathBuf>,
    /// The `pybench` environment, set up.
    pub env: Environment,
    /// How the sandbox runs.
    pub engine: EngineSettings,
    /// Episodes or recordings.
    pub source: Source,
}

/// What a PyBench pipeline came to.
pub struct PybenchReport {
    /// The figures.
    pub summary: PybenchSummary,
    /// The run directory.
    pub dir: PathBuf,
    /// Tasks whose model or harness failed for good (`infra`; a rerun runs them again).
    pub unfinished: usize,
}

/// The model side of a run, resolved from its spec before anything runs.
enum Model {
    Replay { records: Replay, digest: String },
    Chat(Client),
}

impl Model {
    fn resolve(spec: &str, access: &Access, protocol: Protocol) -> Result<Model, PipelineError> {
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
    fn agent(&self, log: RequestLog, reply_tokens: u32) -> Agent<'_> {
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
    })?)
}

/// Who replies in the episodes.
enum Agent<'a> {
    Replay(&'a Replay),
    Chat(ChatAgent),
}

impl Agent<'_> {
    /// Why the agent cannot play `task`, if it cannot: a replay file without its trajectory.
    fn lacks(&self, task: &Task) -> Option<String> {
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
fn digest(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex()[..16].to_string()
}

/// The part of a directory name a model spec gives: `openai:gpt-4o` → `openai-gpt-4o`,
/// `replay:runs/x/trajectory.jsonl` → `replay-trajectory`.
fn model_slug(spec: &str) -> String {
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

/// The tasks of the data folder `data` chosen by `tasks` (indices or ids; empty: all), and of
/// those the ones dealt to `shard`.
pub(crate) fn load_tasks(
    data: &Path,
    tasks: &[String],
    shard: Option<Shard>,
) -> Result<PyBench, PipelineError> {
    let mut data = PyBench::load(data)?;
    if !tasks.is_empty() {
        data.select(tasks)?;
    }
    if let Some(shard) = shard {
        let ids: Vec<String> = data.tasks.iter().map(Task::task_id).collect();
        data.select(&shard.deal(ids.iter().map(String::as_str)))?;
    }
    Ok(data)
}

/// Runs (`Source::Episodes`) or judges (`Source::Recorded`) PyBench tasks into a run
/// directory, telling `listener` as it goes.
pub async fn pybench(
    request: PybenchRequest,
    listener: &mut dyn Listener,
) -> Result<PybenchReport, PipelineError> {
    let started = Instant::now();
    let data = load_tasks(&request.data, &request.tasks, request.shard)?;
    // Everything that can be wrong with the input is found before anything runs.
    let reasoning = match &request.source {
        Source::Episodes { access, .. } => access.reasoning.in_identity(),
        Source::Recorded { .. } => None,
    };
    let (kind, model, recorded, identity_model, protocol, settings) = match &request.source {
        Source::Episodes {
            model,
            access,
            settings,
        } => {
            let resolved = Model::resolve(model, access, settings.protocol)?;
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
    let out = request.out.clone().unwrap_or_else(|| {
        let protocol = protocol.map_or("recorded", Protocol::as_str);
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
    let engine = engine::start(&request.env, &request.engine, &hidden).await?;

    let identity = Identity {
        benchmark: Some("pybench".into()),
        dataset: Some(request.data.display().to_string()),
        dataset_digest: Some(data.digest.clone()),
        tasks: Some(request.tasks.clone()),
        shard: request.shard,
        model: Some(identity_model.clone()),
        reasoning,
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
        protocol: protocol.map(|p| p.as_str().to_string()),
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

/// The figures of a run's `episodes` (one per task) with `checks` at their head, beside the
/// paper's for its model and priced as its manifest says.
pub(crate) fn summary_of(
    episodes: &[EpisodeRecord],
    manifest: &Manifest,
    checks: Mode,
    wall_seconds: f64,
) -> PybenchSummary {
    let published = manifest
        .identity
        .model
        .as_deref()
        .and_then(published::for_model);
    let prices = manifest
        .model_access
        .as_ref()
        .and_then(|a| a.prices.as_ref());
    summarize(episodes, checks, published, prices, wall_seconds)
}

/// Rewrites the journals in task order (the trajectories of a run) and writes the summary.
fn finish(
    run: &mut RunDir,
    data: &PyBench,
    mut records: BTreeMap<String, EpisodeRecord>,
    trajectories: Option<BTreeMap<String, TrajectoryRecord>>,
    checks: Mode,
    started: Instant,
) -> Result<PybenchReport, PipelineError> {
    let ordered: Vec<EpisodeRecord> = data
        .tasks
        .iter()
        .filter_map(|t| records.remove(&t.task_id()))
        .collect();
    run.rewrite_results(&ordered)?;
    if let Some(mut trajectories) = trajectories {
        let ordered: Vec<TrajectoryRecord> = data
            .tasks
            .iter()
            .filter_map(|t| trajectories.remove(&t.index))
            .collect();
        run.write_lines(TRAJECTORIES, &ordered)?;
    }
    let mut summary = summary_of(
        &ordered,
        &run.manifest()?,
        checks,
        started.elapsed().as_secs_f64(),
    );
    summary.judges = judgings_kept(run.path(), &ordered);
    run.write_json(SUMMARY, &summary)?;
    Ok(PybenchReport {
        summary,
        dir: run.path().to_path_buf(),
        unfinished: 0,
    })
}

/// The LLM judges' figures of the summary `dir` had, those that judged these `episodes`
/// (a judging of other episodes no longer holds: `assay judge pybench` again asks only for
/// what changed).
fn judgings_kept(dir: &Path, episodes: &[EpisodeRecord]) -> Vec<assay_records::JudgeFigures> {
    let Ok(text) = std::fs::read_to_string(dir.join(SUMMARY)) else {
        return Vec::new();
    };
    let Ok(old) = serde_json::from_str::<PybenchSummary>(&text) else {
        return Vec::new();
    };
    let digest = assay_agent::pybench::judge::figures::episodes_digest(episodes.iter());
    old.judges
        .into_iter()
        .filter(|j| j.episodes_digest == digest)
        .collect()
}

impl Source {
    fn recorded_file(&self) -> &Path {
        match self {
            Source::Recorded { trajectories, .. } => trajectories,
            Source::Episodes { .. } => Path::new(""),
        }
    }
}

/// Why an episode did not run to its end.
enum NotRun {
    /// It cannot run here: its inputs, the internet, its recording are missing.
    Here(String),
    /// The harness failed (a session, reading or keeping outputs): a rerun tries again.
    Harness(String),
}

/// What one task does.
enum Item<'a> {
    Run {
        agent: &'a Agent<'a>,
        settings: &'a EpisodeSettings,
    },
    Recorded(Option<&'a TrajectoryRecord>, &'a Path),
    /// An episode of an earlier session, judged again from its trajectory and outputs.
    Rejudge(Box<(EpisodeRecord, Option<TrajectoryRecord>)>),
}

/// What every task of a pipeline shares.
struct Context<'a> {
    data: &'a PyBench,
    engine: &'a Engine,
    judge: &'a Judge<'a>,
    out: &'a Path,
    network: bool,
    checks: Mode,
    finished: &'a BTreeMap<String, (watch::Sender<bool>, watch::Receiver<bool>)>,
    places: &'a Semaphore,
    /// Where a task says its episode ended (its task id), for the loop to tell the listener.
    episode_ends: mpsc::UnboundedSender<String>,
}

impl Context<'_> {
    /// One task: its episode (or recording), its outputs saved, its checks.
    ///
    /// The checks start as soon as this task's own episode has ended, whatever the others are
    /// doing: the episode's place among those running is given back first, and nothing here
    /// waits for another task, except the checks of upstream's 68 and 82, which read the
    /// outputs of 67's and 81's episodes and so wait for those to end
    /// ([`Context::await_outputs_read_by`]). Every kind of task tells of its episode's end
    /// ([`Context::ended`]) before its checks, or its record when it has none to run.
    async fn task(&self, task: &Task, item: Item<'_>) -> (EpisodeRecord, Option<TrajectoryRecord>) {
        // From the episode's start: not the wait for a place among those running.
        let mut started = Instant::now();
        let (messages, turns, (end, end_reason), cells, tokens, outputs, trajectory) = match item {
            Item::Rejudge(earlier) => {
                let (old, trajectory) = *earlier;
                self.ended(task);
                self.await_outputs_read_by(task).await;
                let messages = trajectory.map(|t| t.messages).unwrap_or_default();
                let verdicts = self.judge.judge(&task.index, &messages).await;
                let headline = self.checks.pick(&verdicts).clone();
                let record = EpisodeRecord {
                    status: headline.status,
                    reason: headline.reason,
                    verdicts,
                    ..old
                };
                return (record, None);
            }
            Item::Recorded(None, file) => {
                self.ended(task);
                let why = format!("{} has no trajectory for this task", file.display());
                return (not_run(task, why, EpisodeEnd::Recorded), None);
            }
            Item::Recorded(Some(recorded), _) => {
                self.ended(task);
                let turns = assistant_turns(&recorded.messages);
                (
                    recorded.messages.clone(),
                    turns,
                    (EpisodeEnd::Recorded, String::new()),
                    Vec::new(),
                    TokenUsage::default(),
                    Vec::new(),
                    None,
                )
            }
            Item::Run { agent, settings } => {
                let place = self.places.acquire().await.expect("never closed");
                started = Instant::now();
                let ran = self.episode(task, agent, settings).await;
                // Its place goes to another episode before its checks run.
                drop(place);
                self.ended(task);
                let (episode, outputs) = match ran {
                    Ok(ran) => ran,
                    Err(NotRun::Here(why)) => {
                        return (not_run(task, why, EpisodeEnd::NotRun), None)
                    }
                    Err(NotRun::Harness(why)) => {
                        return (not_run(task, why, EpisodeEnd::HarnessFailed), None)
                    }
                };
                let trajectory = TrajectoryRecord {
                    messages: episode.messages.clone(),
                    index: task.index.clone(),
                    category1: task.category1.clone(),
                    category2: task.category2.clone(),
                    category3: task.category3.clone(),
                    user: task.user.clone(),
                    file_paths: task.file_paths.clone(),
                    attachments: task.attachments.clone(),
                };
                let cells = self.save_figures(task, &episode);
                (
                    episode.messages,
                    episode.turns,
                    (episode.end, episode.end_reason),
                    cells,
                    episode.tokens,
                    outputs,
                    Some(trajectory),
                )
            }
        };
        self.await_outputs_read_by(task).await;
        let verdicts = self.judge.judge(&task.index, &messages).await;
        let headline = self.checks.pick(&verdicts).clone();
        let (status, reason) = if end == EpisodeEnd::ModelFailed {
            (
                Status::Infra,
                format!("the model could not be reached for good: {end_reason}"),
            )
        } else {
            (headline.status, headline.reason)
        };
        let record = EpisodeRecord {
            task_id: task.task_id(),
            category: category_name(task),
            status,
            reason,
            verdicts,
            turns,
            end,
            end_reason,
            cells,
            tokens,
            seconds: started.elapsed().as_secs_f64(),
            outputs,
        };
        (record, trajectory)
    }

    /// Waits, when `task`'s check reads another task's outputs (upstream's 68 and 82), until
    /// that task's episode of this session has kept them.
    async fn await_outputs_read_by(&self, task: &Task) {
        if let Some(checks) = checks::table().get(&task.index) {
            let owner = checks::reads_outputs_of(&task.index, &checks.faithful);
            if let Some((_, done)) = self.finished.get(owner).filter(|_| owner != task.index) {
                let _ = done.clone().wait_for(|d| *d).await;
            }
        }
    }

    /// The episode of `task` ended (or its recording was read), its outputs kept: the checks
    /// that read them may start, and the listener hears that its own checks start now.
    fn ended(&self, task: &Task) {
        if let Some((sender, _)) = self.finished.get(&task.index) {
            let _ = sender.send(true);
        }
        // The loop holds the receiver as long as any task runs.
        let _ = self.episode_ends.send(task.task_id());
    }

    /// Runs the episode in a fresh session with the task's inputs and an empty `./output/`,
    /// then keeps its output files under `tasks/<index>/output/`.
    async fn episode(
        &self,
        task: &Task,
        agent: &Agent<'_>,
        settings: &EpisodeSettings,
    ) -> Result<(Episode, Vec<String>), NotRun> {
        if let Some(why) = agent.lacks(task) {
            return Err(NotRun::Here(why));
        }
        if task.needs_internet() && !self.network {
            return Err(NotRun::Here(
                "the task needs the internet (run with --allow-network)".into(),
            ));
        }
        let mut files = Vec::new();
        for input in self.data.inputs(task) {
            let Some(source) = &input.source else {
                return Err(NotRun::Here(format!(
                    "input {} is missing from {}",
                    input.path,
                    self.data.root.display()
                )));
            };
            let data = std::fs::read(source)
                .map_err(|e| NotRun::Here(format!("reading {}: {e}", source.display())))?;
            files.push(InputFile {
                path: input.path.clone(),
                data,
            });
        }
        let spec = SessionSpec {
            files,
            dirs: vec!["output".into()],
            limits: Some(Limits {
                output_bytes: CELL_OUTPUT_BYTES,
                ..Limits::default()
            }),
            ..SessionSpec::default()
        };
        let session = self
            .engine
            .open_session(spec)
            .await
            .map_err(|e| NotRun::Harness(format!("the session could not start: {e}")))?;
        let episode = run_episode(task, &session, agent, settings, |_| {}).await;
        let kept = session.files_under(Some("output"), OUTPUT_BYTES).await;
        session.close().await;
        let kept =
            kept.map_err(|e| NotRun::Harness(format!("reading the episode's outputs: {e}")))?;
        let names = self
            .keep_outputs(task, kept)
            .map_err(|e| NotRun::Harness(format!("keeping the episode's outputs: {e}")))?;
        Ok((episode, names))
    }

    /// Writes what the episode left in `./output/` under `tasks/<index>/output/`: its folders
    /// (empty ones too) and files; returns the files' names (a file cut at the budget says so).
    fn keep_outputs(&self, task: &Task, kept: Tree) -> std::io::Result<Vec<String>> {
        let dir = self.out.join(TASKS_DIR).join(&task.index);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(dir.join("output"))?;
        for folder in &kept.dirs {
            std::fs::create_dir_all(dir.join(folder))?;
        }
        let mut names = Vec::new();
        for file in kept.files {
            let target = dir.join(&file.path);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&target, &file.data)?;
            let name = file.path.trim_start_matches("output/").to_string();
            names.push(if file.truncated {
                format!("{name} (cut at {} of {} bytes)", file.data.len(), file.size)
            } else {
                name
            });
        }
        Ok(names)
    }

    /// Writes the figures each cell displayed under `figures/`, naming them in its record.
    fn save_figures(&self, task: &Task, episode: &Episode) -> Vec<assay_records::CellRecord> {
        let dir = self.out.join(FIGURES_DIR);
        episode
            .cells
            .iter()
            .map(|(cell, figures)| {
                let mut cell = cell.clone();
                for (n, png) in figures.iter().enumerate() {
                    let name = format!("{}-{}-{}.png", task.index, cell.turn, n + 1);
                    let written = std::fs::create_dir_all(&dir)
                        .and_then(|()| std::fs::write(dir.join(&name), png));
                    if written.is_ok() {
                        cell.figures.push(format!("{FIGURES_DIR}/{name}"));
                    }
                }
                cell
            })
            .collect()
    }
}

fn assistant_turns(messages: &[assay_records::Message]) -> u32 {
    messages.iter().filter(|m| m.role == "assistant").count() as u32
}

fn category_name(task: &Task) -> Option<String> {
    task.category.map(|c| {
        serde_json::to_value(c)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    })
}

/// The record of a task that could not run (or has nothing to judge): `infra`, both ways.
fn not_run(task: &Task, why: String, end: EpisodeEnd) -> EpisodeRecord {
    let verdict = CheckVerdict {
        status: Status::Infra,
        reason: why.clone(),
    };
    EpisodeRecord {
        task_id: task.task_id(),
        category: category_name(task),
        status: Status::Infra,
        reason: why,
        verdicts: Verdicts {
            faithful: verdict.clone(),
            fixed: verdict,
        },
        turns: 0,
        end,
        end_reason: String::new(),
        cells: Vec::new(),
        tokens: TokenUsage::default(),
        seconds: 0.0,
        outputs: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
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
