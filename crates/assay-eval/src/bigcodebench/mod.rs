//! BigCodeBench evaluation.

pub mod samples;
