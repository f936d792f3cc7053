//! Asking a model for answers to BigCodeBench tasks, the way the official harness does:
//! its prompts ([`prompt`]), its sampling defaults ([`Settings`]), its sanitizer (through
//! `assay-sanitize`), and its samples format, into a run directory.
//!
//! Unlike the official harness, answers are requested concurrently and each is recorded in
//! `generation.jsonl` as it arrives, so an interrupted generation resumes without asking
//! again for anything already answered, and a request that keeps failing is reported (its
//! samples are `infra`), never turned into an empty answer.

pub mod prompt;
mod run;
mod settings;

pub use run::{
    totals, GenerateError, Generation, Model, Onward, Pending, Solved, Solver, GENERATION,
};
pub use settings::{resolve, SettingsError};
