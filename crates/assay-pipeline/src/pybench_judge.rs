//! `assay judge pybench`: an LLM judge's pairwise verdicts on a PyBench run directory, as
//! the paper's "Pass Rate (LLM)" and win/tie/lose were made (`assay_agent::pybench::judge`),
//! kept in the run directory's `judgements.jsonl` (resumable, and cached by request: a rerun
//! asks nothing it has an answer to) and summed up in its `summary.json`'s `judges`.

use std::collections::{BTreeMap, HashMap};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use assay_agent::pybench::checks::Mode;
use assay_agent::pybench::judge::figures::{self, digest, Judged, Judging};
use assay_agent::pybench::judge::{self, read_reference, reply, Shown};
use assay_agent::pybench::published;
use assay_models::{Client, Conversation, Prompt, Provider, Request, RequestError, Turn};
use assay_records::{
    EpisodeEnd, EpisodeRecord, JudgeFigures, JudgeOrder, JudgePrompt, JudgeRequest, JudgeSettings,
    JudgementRecord, Kind, Listener, Manifest, PybenchSummary, RunEvent, TrajectoryRecord,
};
use assay_rundir::{RunDir, SUMMARY};
use futures_util::stream::{FuturesUnordered, StreamExt};

use crate::error::PipelineError;
use crate::pybench::{chat_client, Access, TRAJECTORIES};
use crate::serving;

/// Every judge request and what came of it.
pub const JUDGEMENTS: &str = "judgements.jsonl";
/// The output of a judge's model server assay started (`--serve`).
pub const JUDGE_SERVER_LOG: &str = "judge-server.log";
/// Where the default reference is in a data folder: upstream's recorded GPT-3.5 trajectories.
pub const DATA_TRAJECTORIES: &str = "trajectory.jsonl";

/// Which trajectories are Agent1.
pub enum Reference {
    /// The data folder's `trajectory.jsonl` (upstream's GPT-3.5 recording, the paper's
    /// Agent1): the folder given, or else the one the run was made with.
    Data(Option<PathBuf>),
    /// An upstream-format trajectory file (`replay:FILE`).
    File(PathBuf),
    /// Another PyBench run directory.
    Run(PathBuf),
}

/// A judging to make.
pub struct JudgePybench {
    /// The run directory judged.
    pub run: PathBuf,
    /// The judge: `openai:MODEL` or `anthropic:MODEL`.
    pub judge: String,
    /// How it is reached.
    pub access: Access,
    /// Agent1.
    pub reference: Reference,
    /// Which of upstream's prompts.
    pub prompt: JudgePrompt,
    /// Also ask each pair the other way round (position bias).
    pub both_orders: bool,
    /// Token limit of a verdict (upstream's 1000).
    pub max_tokens: u32,
    /// Requests in flight at most.
    pub concurrency: NonZeroUsize,
    /// How many times a reply that cannot be read is asked again.
    pub reasks: u32,
}

/// What a judging came to.
pub struct JudgeReport {
    /// Its figures.
    pub figures: JudgeFigures,
    /// The run directory.
    pub dir: PathBuf,
    /// Tasks with a request that failed for good (a rerun asks it again).
    pub failed: usize,
}

/// One request of the judging: a task in one order.
struct Ask {
    task: usize,
    order: JudgeOrder,
    key: String,
    request: JudgeRequest,
}

/// Judges `request.run` with `request.judge`, telling `listener` as it goes.
pub async fn judge_pybench(
    request: JudgePybench,
    listener: &mut dyn Listener,
) -> Result<JudgeReport, PipelineError> {
    let (opened, manifest) = RunDir::open_existing::<EpisodeRecord>(&request.run)?;
    let mut run = opened.dir;
    if !matches!(manifest.kind, Kind::PybenchRun | Kind::PybenchEval) {
        return Err(PipelineError::Invalid(format!(
            "{}: a {} directory; `assay judge pybench` judges PyBench runs (`assay run pybench`, \
             `assay eval pybench`)",
            request.run.display(),
            manifest.kind.as_str()
        )));
    }
    if request.max_tokens == 0 {
        return Err(PipelineError::Invalid(
            "--max-tokens must be at least 1".into(),
        ));
    }
    // The last record of each task, in the order results.jsonl has them (task order).
    let mut episodes: Vec<EpisodeRecord> = Vec::new();
    for record in opened.records {
        match episodes.iter_mut().find(|e| e.task_id == record.task_id) {
            Some(kept) => *kept = record,
            None => episodes.push(record),
        }
    }
    if episodes.is_empty() {
        return Err(PipelineError::Invalid(format!(
            "{}: no episodes recorded yet; run it to its end first",
            request.run.display()
        )));
    }
    // A run is judged once it has ended: its summary is where the judging's figures go.
    let summary_path = run.path().join(SUMMARY);
    let summary_text = std::fs::read_to_string(&summary_path).map_err(|_| {
        PipelineError::Invalid(format!(
            "{}: the run has not ended (no summary.json); run it to its end first (the same \
             command resumes it)",
            request.run.display()
        ))
    })?;
    let mut summary = serde_json::from_str::<PybenchSummary>(&summary_text).map_err(|e| {
        PipelineError::Invalid(format!(
            "{}:{}: not a PyBench summary: {e}",
            summary_path.display(),
            e.line()
        ))
    })?;
    let candidates = trajectories_of(&mut run, &manifest)?;
    // Episodes with nothing to judge (no trajectory: they could not run here, or the model or
    // the harness failed for good) are set apart, as the checks set them apart.
    let index_of = |episode: &EpisodeRecord| {
        episode
            .task_id
            .strip_prefix(assay_tasks::pybench::ID_PREFIX)
            .unwrap_or(&episode.task_id)
            .to_string()
    };
    let set_apart: BTreeMap<String, String> = episodes
        .iter()
        .filter(|e| {
            !candidates.contains_key(&index_of(e))
                || matches!(e.end, EpisodeEnd::ModelFailed | EpisodeEnd::HarnessFailed)
        })
        .map(|e| (e.task_id.clone(), e.reason.clone()))
        .collect();
    let episodes_digest = figures::episodes_digest(episodes.iter());
    let all_tasks = episodes.len();
    episodes.retain(|e| !set_apart.contains_key(&e.task_id));
    let (reference_label, references) = reference_trajectories(&request.reference, &manifest)?;
    let client = chat_client(&request.judge, &request.access, request.concurrency)?;
    let anthropic = client.spec().provider == Provider::Anthropic;
    let settings = JudgeSettings {
        judge: request.judge.clone(),
        prompt: request.prompt,
        reference: reference_label,
        reference_digest: {
            let mut all = String::new();
            for (index, shown) in &references {
                all.push_str(index);
                all.push('\n');
                all.push_str(&shown.line);
            }
            digest(all.as_bytes())
        },
        temperature: judge::TEMPERATURE,
        top_p: (!anthropic).then_some(judge::TOP_P),
        max_tokens: request.max_tokens,
        frequency_penalty: (!anthropic).then(|| judge::frequency_penalty(request.prompt)),
        presence_penalty: (!anthropic).then_some(judge::PRESENCE_PENALTY),
        reasoning: request.access.reasoning.in_identity(),
        reasks: request.reasks,
        extra_body: request.access.extra_body.fields().cloned(),
    };

    let orders: &[JudgeOrder] = if request.both_orders {
        &[JudgeOrder::Paper, JudgeOrder::Swapped]
    } else {
        &[JudgeOrder::Paper]
    };
    let asks: Vec<Ask> = episodes
        .iter()
        .enumerate()
        .flat_map(|(n, episode)| {
            let index = index_of(episode);
            let run_side = candidates.get(&index);
            let reference_side = references.get(&index);
            let settings = &settings;
            orders.iter().map(move |&order| {
                let (first, second) = judge::agents(order, reference_side, run_side);
                let shown = |side: Option<&Shown>, position: u8| {
                    side.map_or_else(
                        || judge::absent(position),
                        |s| s.text(settings.prompt).into(),
                    )
                };
                let request = JudgeRequest {
                    system: judge::system_prompt(settings.prompt).to_string(),
                    user: judge::user_message(&shown(first, 1), &shown(second, 2)),
                };
                Ask {
                    task: n,
                    order,
                    key: request_key(settings, &request),
                    request,
                }
            })
        })
        .collect();

    let (mut journal, earlier) = run.journal::<JudgementRecord>(JUDGEMENTS)?;
    // Every answer to each request, in the order asked: a failed request is asked again.
    let mut answered: HashMap<String, Vec<JudgementRecord>> = HashMap::new();
    for mut record in earlier.into_iter().filter(|r| r.error.is_none()) {
        reread(&mut record);
        answered.entry(record.key.clone()).or_default().push(record);
    }
    for records in answered.values_mut() {
        records.sort_by_key(|r| r.ask);
    }
    // Each request once: the two orders of identical trajectories are one request.
    let mut seen = std::collections::HashSet::new();
    let distinct: Vec<&Ask> = asks
        .iter()
        .filter(|a| seen.insert(a.key.as_str()))
        .collect();
    let pending: Vec<(&Ask, u32)> = distinct
        .iter()
        .filter_map(|a| match answered.get(&a.key) {
            None => Some((*a, 0)),
            Some(records) => next_ask(records, settings.reasks).map(|n| (*a, n)),
        })
        .collect();
    listener.on_event(&RunEvent::JudgeStarted {
        requests: distinct.len(),
        done: distinct.len() - pending.len(),
    });
    let server = match &request.access.serve {
        Some(serve) if !pending.is_empty() => Some(
            serving::start_logged(serve, &client, &run.path().join(JUDGE_SERVER_LOG), listener)
                .await?,
        ),
        _ => None,
    };
    let mut failed: BTreeMap<String, JudgementRecord> = BTreeMap::new();
    let mut running: FuturesUnordered<_> = pending
        .iter()
        .map(|&(ask, n)| ask_judge(&client, ask, n, &episodes[ask.task], &settings))
        .collect();
    let mut fatal = None;
    while let Some((record, is_fatal)) = running.next().await {
        journal.append(&record)?;
        if is_fatal {
            listener.on_event(&RunEvent::JudgeAnswered {
                record: Box::new(record.clone()),
                asked_again: false,
            });
            fatal = record.error.clone();
            break;
        }
        let again = if record.error.is_some() {
            failed.insert(record.key.clone(), record.clone());
            None
        } else {
            let records = answered.entry(record.key.clone()).or_default();
            records.push(record.clone());
            next_ask(records, settings.reasks)
        };
        listener.on_event(&RunEvent::JudgeAnswered {
            record: Box::new(record.clone()),
            asked_again: again.is_some(),
        });
        if let Some(n) = again {
            if let Some(ask) = distinct.iter().find(|a| a.key == record.key) {
                running.push(ask_judge(&client, ask, n, &episodes[ask.task], &settings));
            }
        }
    }
    drop(running);
    if let Some(server) = server {
        server.stop().await;
    }
    journal.sync()?;
    if let Some(why) = fatal {
        return Err(PipelineError::Invalid(format!(
            "the judge cannot answer: {why} (every answer so far is kept in {}; the same \
             command resumes)",
            run.path().join(JUDGEMENTS).display()
        )));
    }

    // The figures, from the answers this judging's requests have.
    // The first answer that reads; else a failure of this session's (a re-ask that failed
    // for good: a rerun asks it again, and the exit code says so); else the last unread one.
    let answer = |ask: &Ask| {
        let records = answered.get(&ask.key);
        records
            .and_then(|r| r.iter().find(|r| r.verdict.is_some()))
            .or_else(|| failed.get(&ask.key))
            .or_else(|| records.and_then(|r| r.last()))
    };
    let judged: Vec<Judged> = episodes
        .iter()
        .enumerate()
        .map(|(n, episode)| {
            let of = |order| {
                asks.iter()
                    .find(|a| a.task == n && a.order == order)
                    .and_then(answer)
            };
            Judged {
                episode,
                paper: of(JudgeOrder::Paper),
                swapped: of(JudgeOrder::Swapped),
            }
        })
        .collect();
    // Every ask's tokens count, re-asks too.
    let used: Vec<&JudgementRecord> = distinct
        .iter()
        .filter_map(|a| answered.get(&a.key))
        .flatten()
        .collect();
    let checks = match manifest.identity.checks.as_deref() {
        Some("fixed") => Mode::Fixed,
        _ => Mode::Faithful,
    };
    let published = manifest
        .identity
        .model
        .as_deref()
        .and_then(published::judged_for_model);
    let figures = figures::figures(
        Judging {
            settings,
            both_orders: request.both_orders,
            checks,
            average_turns_checks: match checks {
                Mode::Faithful => summary.faithful.average_turns,
                Mode::Fixed => summary.fixed.average_turns,
            },
            prices: request.access.prices,
            published,
            set_apart,
            tasks: all_tasks,
            episodes_digest,
        },
        &judged,
        &used,
    );
    // Judgings of other episodes than these no longer hold; one with the same settings is
    // replaced.
    summary
        .judges
        .retain(|j| j.episodes_digest == figures.episodes_digest && j.key != figures.key);
    summary.judges.push(figures.clone());
    // The summary keeps its time: when the run ended, not when it was judged.
    let ended = std::fs::metadata(&summary_path).and_then(|m| m.modified());
    run.write_json(SUMMARY, &summary)?;
    if let Ok(ended) = ended {
        let kept = std::fs::File::options()
            .write(true)
            .open(&summary_path)
            .and_then(|f| f.set_modified(ended));
        if let Err(e) = kept {
            tracing::warn!("{}: {e}", summary_path.display());
        }
    }
    listener.on_event(&RunEvent::JudgingFinished);
    let failed = figures.failed.len();
    Ok(JudgeReport {
        figures,
        dir: run.path().to_path_buf(),
        failed,
    })
}

/// 16 hex digits of BLAKE3 over what decides a judge's answer: the judge, its settings but
/// the reference's name and the bound on asking again, and the request.
fn request_key(settings: &JudgeSettings, request: &JudgeRequest) -> String {
    let mut decided = serde_json::json!({
        "judge": settings.judge,
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "max_tokens": settings.max_tokens,
        "frequency_penalty": settings.frequency_penalty,
        "presence_penalty": settings.presence_penalty,
        "reasoning": settings.reasoning,
        "system": request.system,
        "user": request.user,
    });
    // Only when given, so that answers asked without one keep their keys.
    if let Some(extra) = &settings.extra_body {
        decided["extra_body"] = serde_json::Value::Object(extra.clone());
    }
    digest(&serde_json::to_vec(&decided).expect("JSON serializes"))
}

/// Which ask of a request comes next, given its answers so far: none when one reads, when the
/// last did not fit the judge's window (it would not fit again), or when `reasks` asks again
/// were made.
fn next_ask(records: &[JudgementRecord], reasks: u32) -> Option<u32> {
    let last = records.last()?;
    let unread = records.iter().all(|r| r.verdict.is_none());
    (unread && last.reply.is_some() && last.ask < reasks).then_some(last.ask + 1)
}

/// Asks the judge `ask` (its `n`th time asked again: 0 the first ask); the record, and
/// whether the judge can answer nothing at all.
async fn ask_judge(
    client: &Client,
    ask: &Ask,
    n: u32,
    episode: &EpisodeRecord,
    settings: &JudgeSettings,
) -> (JudgementRecord, bool) {
    let chat = Request {
        prompt: Prompt::Chat(Conversation {
            system: Some(ask.request.system.clone()),
            turns: vec![Turn::User(ask.request.user.clone())],
            tools: Vec::new(),
        }),
        n: 1,
        temperature: settings.temperature,
        top_p: settings.top_p,
        max_tokens: settings.max_tokens,
        stop: Vec::new(),
        frequency_penalty: settings.frequency_penalty,
        presence_penalty: settings.presence_penalty,
    };
    let mut record = JudgementRecord {
        task_id: episode.task_id.clone(),
        key: ask.key.clone(),
        judge: settings.judge.clone(),
        prompt: settings.prompt,
        order: ask.order,
        request: ask.request.clone(),
        ask: n,
        reply: None,
        thinking: None,
        finish_reason: String::new(),
        usage: Default::default(),
        latency_seconds: 0.0,
        attempts: 0,
        error: None,
        verdict: None,
        lenient: Vec::new(),
        unreadable: None,
    };
    match client.generate(&chat).await {
        Ok(response) => {
            record.reply = Some(response.answers.into_iter().next().unwrap_or_default());
            reread(&mut record);
            record.thinking = response
                .thinking
                .into_iter()
                .next()
                .flatten()
                .map(|t| t.text);
            record.finish_reason = response
                .finish_reasons
                .into_iter()
                .next()
                .flatten()
                .unwrap_or_default();
            record.usage = response.usage;
            record.latency_seconds = response.latency.as_secs_f64();
            record.attempts = response.attempts;
            (record, false)
        }
        // The same request would not fit again: the judge's answer, in a way.
        Err(RequestError::ContextFull(full)) => {
            record.unreadable = Some(format!(
                "the request does not fit the judge's context window: {}",
                full.message
            ));
            (record, false)
        }
        Err(e @ RequestError::Fatal { .. }) => {
            record.error = Some(e.to_string());
            (record, true)
        }
        Err(e @ RequestError::Failed { attempts, .. }) => {
            record.attempts = attempts;
            record.error = Some(e.to_string());
            (record, false)
        }
    }
}

/// Reads `record`'s reply (again: an answer kept by an earlier session is read as this assay
/// reads replies); a request too long for the judge's window keeps its reason.
fn reread(record: &mut JudgementRecord) {
    if let Some(reply) = &record.reply {
        match reply::read(reply, record.prompt) {
            Ok(read) => {
                record.verdict = Some(read.verdict);
                record.lenient = read.lenient;
                record.unreadable = None;
            }
            Err(why) => {
                record.verdict = None;
                record.lenient = Vec::new();
                record.unreadable = Some(why);
            }
        }
    }
}

/// The run's trajectories by task index, as upstream's scripts would read them: an episode
/// run's own (`trajectory.jsonl`, without assay's thinking), or the file an evaluation judged
/// (its lines as they are).
fn trajectories_of(
    run: &mut RunDir,
    manifest: &Manifest,
) -> Result<BTreeMap<String, Shown>, PipelineError> {
    match manifest.kind {
        Kind::PybenchRun => {
            let (_, records) = run.journal::<TrajectoryRecord>(TRAJECTORIES)?;
            Ok(records
                .iter()
                .map(|r| (r.index.clone(), Shown::from_record(r)))
                .collect())
        }
        _ => {
            let file = manifest.samples.as_ref().ok_or_else(|| {
                PipelineError::Invalid(format!(
                    "{}: the manifest names no trajectories file",
                    run.path().display()
                ))
            })?;
            let bytes = std::fs::read(file).map_err(|source| PipelineError::Io {
                path: file.clone(),
                source,
            })?;
            if manifest.identity.samples_digest.as_deref() != Some(digest(&bytes).as_str()) {
                return Err(PipelineError::Invalid(format!(
                    "{}: changed since {} judged it; judge it again with `assay eval pybench` \
                     first",
                    file.display(),
                    run.path().display()
                )));
            }
            reference_file(file)
        }
    }
}

/// Agent1's trajectories by task index, and how the reference is named.
fn reference_trajectories(
    reference: &Reference,
    manifest: &Manifest,
) -> Result<(String, BTreeMap<String, Shown>), PipelineError> {
    match reference {
        Reference::File(file) => Ok((format!("replay:{}", file.display()), reference_file(file)?)),
        Reference::Data(folder) => {
            let folder = match folder {
                Some(folder) => folder.clone(),
                None => {
                    let given = manifest.identity.dataset.as_deref().ok_or_else(|| {
                        PipelineError::Invalid(
                            "no reference: give --reference, or --data for the data folder's \
                             trajectory.jsonl"
                                .into(),
                        )
                    })?;
                    manifest
                        .command
                        .as_ref()
                        .map_or_else(|| PathBuf::from(given), |c| c.dir.join(given))
                }
            };
            let file = folder.join(DATA_TRAJECTORIES);
            Ok((
                format!("data:{}", DATA_TRAJECTORIES),
                reference_file(&file)?,
            ))
        }
        Reference::Run(dir) => {
            let path = dir.join(assay_rundir::MANIFEST);
            let text = std::fs::read_to_string(&path).map_err(|source| PipelineError::Io {
                path: path.clone(),
                source,
            })?;
            let other: Manifest = serde_json::from_str(&text).map_err(|e| {
                PipelineError::Invalid(format!(
                    "{}:{}: not a manifest: {e}",
                    path.display(),
                    e.line()
                ))
            })?;
            if !matches!(other.kind, Kind::PybenchRun | Kind::PybenchEval) {
                return Err(PipelineError::Invalid(format!(
                    "--reference {}: a {} directory, not a PyBench run",
                    dir.display(),
                    other.kind.as_str()
                )));
            }
            let shown = match other.kind {
                Kind::PybenchRun => {
                    let file = dir.join(TRAJECTORIES);
                    let records = assay_agent::pybench::replay::read_trajectories(&file)
                        .map_err(|e| PipelineError::Invalid(e.to_string()))?;
                    records
                        .iter()
                        .map(|r| (r.index.clone(), Shown::from_record(r)))
                        .collect()
                }
                _ => reference_file(other.samples.as_deref().unwrap_or(Path::new("")))?,
            };
            Ok((
                format!("run:{}", other.identity.model.unwrap_or_default()),
                shown,
            ))
        }
    }
}

/// An upstream-format trajectory file, checked as a replay checks it, its lines as they are.
fn reference_file(file: &Path) -> Result<BTreeMap<String, Shown>, PipelineError> {
    assay_agent::pybench::replay::read_trajectories(file)
        .map_err(|e| PipelineError::Invalid(e.to_string()))?;
    read_reference(file).map_err(|e| PipelineError::Invalid(e.to_string()))
}
