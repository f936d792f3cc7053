//! Run directories in other tools' formats, so that what assay measured can be read where
//! people already look at evaluations. One format so far: Inspect AI's eval log
//! ([`inspect`]).
//!
//! An export only reads the run directory (`docs/run-directory.md`) and the datasets the run
//! names; it writes nothing there.

pub mod inspect;
mod time;
