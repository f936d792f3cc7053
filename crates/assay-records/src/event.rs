//! The run-event stream: what pipelines say as they go. Progress displays, the run
//! directory's journals and, later, viewers and shard merging all read the same events.

use serde::{Deserialize, Serialize};

use crate::conditions::Change;
use crate::episode::EpisodeRecord;
use crate::generation::{GenerationOutcome, GenerationRecord};
use crate::judge::JudgementRecord;
use crate::outcome::Status;
use crate::sample::SampleRecord;
use crate::stability::StabilityRecord;

/// One thing that happened in a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum RunEvent {
    /// Something a person running assay should read (a resumed directory, modules missing
    /// here).
    Notice {
        /// The message.
        message: String,
    },
    /// A generation starts: `samples` wanted, `done` of them answered by an earlier session.
    GenerationStarted {
        /// Answers wanted in all.
        samples: usize,
        /// Answers already there.
        done: usize,
    },
    /// Requests now waiting for the model.
    InFlight {
        /// How many.
        requests: usize,
        /// How hard the run presses a model API now; absent without one (`reference`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        load: Option<ModelLoad>,
    },
    /// A request ended, answered or failed for good (`generation.jsonl` keeps it).
    Answered {
        /// Its record.
        record: Box<GenerationRecord>,
    },
    /// The generation ended: `samples.jsonl` and the manifest's `generation` are written.
    GenerationFinished {
        /// What it came to.
        outcome: GenerationOutcome,
    },
    /// Judging starts: `samples` to judge in all (for `assay run`, the answers wanted: those
    /// the model never gives are not judged but set apart at the end).
    JudgingStarted {
        /// Samples to judge in all.
        samples: usize,
    },
    /// Reference solutions start running: `references` of them, not measured before.
    ReferencesStarted {
        /// Reference runs to come.
        references: usize,
    },
    /// A job started in the sandbox: a sample's, or a task's reference run. What lets
    /// progress say what the end of a run waits on.
    JobStarted {
        /// Its task.
        task_id: String,
        /// Whether it is the task's reference run (else a sample).
        reference: bool,
        /// How long it is expected to take, in seconds: its task's reference time, or its
        /// slowest sample's in earlier evaluations here, whichever is longer (absent when
        /// neither is known).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expected_seconds: Option<f64>,
    },
    /// A sample's verdict from an earlier session still holds (`results.jsonl` has it): it is
    /// not judged again.
    SampleKept {
        /// Its task.
        task_id: String,
        /// Its verdict.
        status: Status,
    },
    /// A sample got its verdict (`results.jsonl` keeps it).
    SampleJudged {
        /// Its record.
        record: Box<SampleRecord>,
    },
    /// A stability round starts (`--stability`): `samples` to run again under `change`,
    /// `done` of them by an earlier session.
    StabilityRoundStarted {
        /// The round, from 1.
        round: u32,
        /// What it changes.
        change: Change,
        /// Samples it runs again in all.
        samples: usize,
        /// Of those, already run again.
        done: usize,
    },
    /// A sample was run again in a stability round (`stability.jsonl` keeps it).
    SampleRerun {
        /// Its record.
        record: Box<StabilityRecord>,
    },
    /// A reference solution got its verdict (the ground-truth cache keeps it).
    ReferenceJudged {
        /// Its record.
        record: Box<SampleRecord>,
    },
    /// PyBench episodes start: `episodes` in all, `done` ended by an earlier session.
    EpisodesStarted {
        /// Episodes in all.
        episodes: usize,
        /// Episodes already recorded.
        done: usize,
    },
    /// An episode ended (or a recorded trajectory was read): its checks start now.
    EpisodeEnded {
        /// Its task.
        task_id: String,
    },
    /// An episode's checks ended (`results.jsonl` keeps its record).
    EpisodeJudged {
        /// Its record.
        record: Box<EpisodeRecord>,
    },
    /// An LLM judge starts on a PyBench run: `requests` in all, `done` of them answered
    /// before (by an earlier session, or the same request for another judging).
    JudgeStarted {
        /// Requests in all.
        requests: usize,
        /// Already answered.
        done: usize,
    },
    /// A judge request ended (`judgements.jsonl` keeps it).
    JudgeAnswered {
        /// Its record.
        record: Box<JudgementRecord>,
        /// Its reply could not be read and the request is asked again: one more request.
        asked_again: bool,
    },
    /// Judging ended: every record is on disk, and an evaluation's derived files too.
    JudgingFinished,
}

/// How hard a run presses its model API (in an `in-flight` event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelLoad {
    /// HTTP requests sent in the last minute, retries included (before a minute has passed,
    /// the rate so far).
    pub per_minute: u32,
    /// Requests allowed in flight now: below `concurrency` while the server refuses for load
    /// (429, 503).
    pub limit: usize,
    /// Requests allowed in flight at most, as configured.
    pub concurrency: usize,
}

/// Hears a run's events as they happen: a progress display, a viewer, a shard's
/// coordinator. Journals are written before listeners hear a record's event, so whatever a
/// listener sees is already on disk.
pub trait Listener: Send {
    /// One event.
    fn on_event(&mut self, event: &RunEvent);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_without_a_model_api_has_no_load() {
        let event: RunEvent =
            serde_json::from_str(r#"{"event":"in-flight","requests":3}"#).unwrap();
        assert_eq!(
            event,
            RunEvent::InFlight {
                requests: 3,
                load: None
            }
        );
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            r#"{"event":"in-flight","requests":3}"#
        );
    }
}
