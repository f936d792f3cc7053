//! BigCodeBench evaluation.

pub mod run;
pub mod samples;
pub mod verdict;
