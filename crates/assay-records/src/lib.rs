//! What assay writes and reads back, as types: the records of a run directory
//! (`docs/run-directory.md`), the run-event stream pipelines emit, and the vocabulary of a
//! job's outcome they share with the sandbox.
//!
//! Serde only, no I/O: a report, a viewer or a shard merger reads a run directory with this
//! crate alone.

pub mod answer;
pub mod category;
pub mod conditions;
pub mod episode;
pub mod event;
pub mod fingerprint;
pub mod generation;
pub mod ground_truth;
pub mod integrity;
pub mod isolation;
pub mod judge;
pub mod manifest;
pub mod outcome;
pub mod reasoning;
pub mod sample;
pub mod shard;
pub mod stability;
pub mod summary;
pub mod time_policy;
pub mod utc;
pub mod verdict;

pub use answer::Answer;
pub use category::CategoryFigures;
pub use conditions::{Change, Conditions, ListingOrder};
pub use episode::{
    CellRecord, CheckVerdict, EpisodeEnd, EpisodeRecord, Message, PublishedFigures, PybenchFigures,
    PybenchSummary, TrajectoryRecord, Verdicts,
};
pub use event::{Listener, ModelLoad, RunEvent};
pub use fingerprint::Fingerprint;
pub use generation::{
    ContextCounts, ContextLimit, GenerationOutcome, GenerationRecord, GenerationSettings,
    GenerationTotals, Prices, Split, TokenUsage, Unanswered, CUT_WHILE_THINKING,
};
pub use ground_truth::{GroundTruthSummary, ProcessPeaks, ReferenceResult};
pub use integrity::{IntegrityFinding, IntegrityKind};
pub use isolation::{Enforcement, IsolationLevel, IsolationReport, Layers};
pub use judge::{
    Agreement, AnswerKeys, JudgeFigures, JudgeOrder, JudgePrompt, JudgeRequest, JudgeSettings,
    JudgeVerdict, JudgementRecord, PerAgent, PositionBias, PublishedJudge, ReplyLeniency,
    WinTieLose,
};
pub use manifest::{
    now, GenerationDone, Identity, Invocation, Kind, Manifest, ModelAccess, StartedServer, SCHEMA,
};
pub use outcome::{Captured, Status, TestOutcome, TestResult};
pub use reasoning::{Effort, ReasoningSettings, ThinkTag, Thinking, ThinkingSource};
pub use sample::{task_number, SampleRecord, RECORD_OUTPUT_BYTES};
pub use shard::Shard;
pub use stability::{
    ChangedIn, ChangedVerdict, PassAt1Range, RoundFigures, StabilityRecord, StabilitySummary,
};
pub use summary::{BudgetsSaved, CheckSummary, EvalSummary, Gamed, Scores, Slow};
pub use time_policy::{TestBudget, TimePolicy, OFFICIAL_TIMEOUT_SECONDS};
pub use utc::Utc;
pub use verdict::{InfraCause, Official, OfficialStatus};
