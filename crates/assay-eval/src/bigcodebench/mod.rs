//! BigCodeBench evaluation.

pub mod samples;
pub mod verdict;
