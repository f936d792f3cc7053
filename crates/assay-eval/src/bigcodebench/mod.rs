//! BigCodeBench judging: samples in the official format, each a sandbox job with the
//! official semantics, verdicts in the official terms, the reference runs, and the official
//! files and the summary written from the records.

pub mod evaluation;
pub mod ground_truth;
mod judge;
pub mod official_files;
pub mod options;
mod queue;
pub mod sample_times;
pub mod samples;
mod slow_tasks;
pub mod summary;
pub mod verdict;
pub mod verifier;

pub use judge::digest;
