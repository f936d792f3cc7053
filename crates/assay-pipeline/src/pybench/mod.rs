//! PyBench: `run` (episodes, then their checks) and `eval` (recorded trajectories judged),
//! each into a run directory, resumably.
//!
//! The request, its report and the run directory's file names are here; `pipeline` runs a
//! request from its input to its summary (`summary`), each task's future (`task`) playing
//! or reading its episode and judging it, with the model side resolved by `model`.

mod coding;
mod model;
mod pipeline;
mod summary;
mod task;

use std::num::{NonZeroU32, NonZeroU64, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::time::Duration;

use assay_agent::pybench::checks::Mode;
use assay_agent::pybench::EpisodeSettings;
use assay_coding_agents::{Installed, ModelAccess};

pub use crate::agents::CodingAgent;
use assay_models::{ApiKey, ExtraBody, ServeSettings};
use assay_pyenv::Environment;
use assay_records::{Prices, PybenchSummary, ReasoningSettings, Shard};
use assay_tasks::pybench::{PyBench, Task};

use crate::engine::EngineSettings;
use crate::error::PipelineError;

pub(crate) use self::model::chat_client;
pub use self::pipeline::pybench;
pub(crate) use self::summary::summary_of;

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

/// Where episodes come from.
pub enum Source {
    /// Run episodes: the model (`replay:FILE` replays a trajectory file's replies).
    Episodes {
        /// The model spec.
        model: String,
        /// How the model is reached (not for `replay:`).
        access: Box<Access>,
        /// Protocol, turns, cell timeout, observation cap.
        settings: EpisodeSettings,
        /// A coding agent, installed, that solves the tasks instead of upstream's loop.
        agent: Option<Box<CodingAgent>>,
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
    /// Fields added to every request body (`--extra-body`).
    pub extra_body: ExtraBody,
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

impl Source {
    fn recorded_file(&self) -> &Path {
        match self {
            Source::Recorded { trajectories, .. } => trajectories,
            Source::Episodes { .. } => Path::new(""),
        }
    }
}

/// A coding agent as the episodes run it: with its model, and what an episode may spend.
pub(super) struct Coding {
    pub(super) agent: Installed,
    pub(super) model: ModelAccess,
    /// The benchmark environment's `bin`, first on its `PATH`.
    pub(super) bin: PathBuf,
    /// Model requests an episode may make (upstream's turn limit).
    pub(super) max_turns: u32,
    pub(super) wall: Duration,
    pub(super) tokens: Option<u64>,
}
