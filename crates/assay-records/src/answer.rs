//! An answer on its way from the model to its verdict: `assay run` judges each one as soon as
//! it is sanitized and in `generation.jsonl`, while the model still answers the others.

/// One sample to judge, as it arrives.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// Its place in `samples.jsonl` as far as it is known when it arrives (final once every
    /// task before it has all its answers; a run renumbers its records at the end).
    pub index: usize,
    /// The task it answers.
    pub task_id: String,
    /// The whole program it submits, before calibration (a completion already behind its
    /// prompt).
    pub solution: String,
    /// Why the answer is empty, when the model could not give one (its prompt did not fit
    /// the context window, it ended inside its thinking): said first in its verdict's reason.
    pub empty_note: Option<String>,
}
