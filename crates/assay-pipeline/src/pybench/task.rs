//! One task of a PyBench pipeline, from start to record: its episode played in a fresh
//! session (or its recording read, or an earlier episode taken again), its outputs and figures
//! kept, its checks, and the record of it all. Apart from the pipeline's loop, as each task is
//! a future of its own that waits for no other.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use assay_agent::pybench::checks::{self, Judge, Mode};
use assay_agent::pybench::{run_episode, Episode, EpisodeSettings};
use assay_records::{
    CheckVerdict, EpisodeEnd, EpisodeRecord, Status, TokenUsage, TrajectoryRecord, Verdicts,
};
use assay_sandbox::{Engine, InputFile, Limits, SessionSpec, Tree};
use assay_tasks::pybench::{PyBench, Task};
use tokio::sync::{mpsc, watch, Semaphore};

use super::model::Agent;
use super::{Coding, FIGURES_DIR, TASKS_DIR};

/// What an episode's output files may hold in all before the rest is kept cut.
const OUTPUT_BYTES: u64 = 1 << 30;
/// What a cell may print before the rest is only counted.
const CELL_OUTPUT_BYTES: usize = 4 << 20;

/// Why an episode did not run to its end.
pub(super) enum NotRun {
    /// It cannot run here: its inputs, the internet, its recording are missing.
    Here(String),
    /// The harness failed (a session, reading or keeping outputs): a rerun tries again.
    Harness(String),
}

/// What one task does.
pub(super) enum Item<'a> {
    Run {
        agent: &'a Agent<'a>,
        settings: &'a EpisodeSettings,
    },
    Recorded(Option<&'a TrajectoryRecord>, &'a Path),
    /// An episode of an earlier session, judged again from its trajectory and outputs.
    Rejudge(Box<(EpisodeRecord, Option<TrajectoryRecord>)>),
}

/// What every task of a pipeline shares.
pub(super) struct Context<'a> {
    pub(super) data: &'a PyBench,
    pub(super) engine: &'a Engine,
    pub(super) judge: &'a Judge<'a>,
    pub(super) out: &'a Path,
    pub(super) network: bool,
    pub(super) checks: Mode,
    pub(super) finished: &'a BTreeMap<String, (watch::Sender<bool>, watch::Receiver<bool>)>,
    pub(super) places: &'a Semaphore,
    /// Where a task says its episode ended (its task id), for the loop to tell the listener.
    pub(super) episode_ends: mpsc::UnboundedSender<String>,
    /// The coding agent that plays the episodes instead of upstream's loop, if one does.
    pub(super) coding: Option<&'a Coding>,
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
    pub(super) async fn task(
        &self,
        task: &Task,
        item: Item<'_>,
    ) -> (EpisodeRecord, Option<TrajectoryRecord>) {
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

    /// Runs the episode in a fresh session with the task's inputs and an empty `./output/`
    /// (or, with a coding agent, the agent in a working directory holding them), then keeps
    /// its output files under `tasks/<index>/output/`.
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
        let files = self.inputs(task)?;
        if let Some(coding) = self.coding {
            return self.coding_episode(task, coding, files).await;
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

    /// The task's input files, read from the data folder.
    fn inputs(&self, task: &Task) -> Result<Vec<InputFile>, NotRun> {
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
        Ok(files)
    }

    /// Writes what the episode left in `./output/` under `tasks/<index>/output/`: its folders
    /// (empty ones too) and files; returns the files' names (a file cut at the budget, or not
    /// kept for its name, says so). The names are the episode's: one the run directory cannot
    /// hold is left out (the checks then miss it), never an error of the harness's, which
    /// would set the task apart as `infra` instead of judging it.
    pub(super) fn keep_outputs(&self, task: &Task, kept: Tree) -> std::io::Result<Vec<String>> {
        let dir = self.out.join(TASKS_DIR).join(&task.index);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(dir.join("output"))?;
        for folder in &kept.dirs {
            refused_name(std::fs::create_dir_all(dir.join(folder)))?;
        }
        let mut names = Vec::new();
        for file in kept.files {
            let target = dir.join(&file.path);
            let written = match target.parent() {
                Some(parent) => std::fs::create_dir_all(parent),
                None => Ok(()),
            }
            .and_then(|()| std::fs::write(&target, &file.data));
            let name = file.path.trim_start_matches("output/").to_string();
            names.push(match refused_name(written)? {
                Some(why) => format!("{name} (not kept: {why})"),
                None if file.truncated => {
                    format!("{name} (cut at {} of {} bytes)", file.data.len(), file.size)
                }
                None => name,
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

/// Of a write of one of an episode's files: the error, when the file system refused the name
/// the episode chose (too long once decoded, or the name of a folder too), as what to say of
/// it; any other error (a full or failing disk) as the harness's.
fn refused_name(written: std::io::Result<()>) -> std::io::Result<Option<std::io::Error>> {
    match written {
        Ok(()) => Ok(None),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENAMETOOLONG | libc::EISDIR | libc::ENOTDIR | libc::EEXIST)
            ) =>
        {
            Ok(Some(e))
        }
        Err(e) => Err(e),
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
