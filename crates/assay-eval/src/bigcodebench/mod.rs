//! BigCodeBench evaluation.

pub mod ground_truth;
pub mod run;
pub mod samples;
pub mod verdict;
