//! Run directories: `docs/run-directory.md` says what each file holds and when it is written;
//! `assay-records` has the types.
//!
//! ```text
//! runs/<name>/
//!   manifest.json   what was evaluated and how; its "identity" decides whether a rerun resumes
//!                   (or whether a run of another kind that names it in "extends" continues it)
//!   results.jsonl   one record per finished item, appended as it finishes
//!   ...             files derived from the records (written whole, atomically)
//! ```
//!
//! Nothing is lost: every record is on disk (flushed at once, synced with the next record a
//! second later or at the end of the run) as soon as it exists, so a run killed at any point (Ctrl-C, `kill -9`, power loss) resumes by
//! reading `results.jsonl` back; a record torn by the kill is dropped and recomputed. Derived
//! files are written to a temporary name and renamed, so they are either whole or absent.
//!
//! [`RunDir`] opens, locks and writes a directory (`run_dir`); its logs are [`Journal`]s
//! (`journal`); whether an existing directory resumes is the manifests' comparison
//! (`manifest`); the lock (`lock`) and whole-file writes (`files`) are what they share.

mod error;
mod files;
mod journal;
mod lock;
mod manifest;
pub mod python_json;
mod run_dir;

pub use error::RunDirError;
pub use files::{write_atomically, AtomicFile};
pub use journal::Journal;
pub use lock::check_place;
pub use manifest::identity_difference;
pub use run_dir::{Opened, RunDir};

/// The run's [`Manifest`](assay_records::Manifest).
pub const MANIFEST: &str = "manifest.json";
/// One record per finished item, appended as it finishes.
pub const RESULTS: &str = "results.jsonl";
/// What a run evaluated, in the official samples format.
pub const SAMPLES: &str = "samples.jsonl";
/// What the run came to.
pub const SUMMARY: &str = "summary.json";
