//! The pipelines assay runs, each with typed inputs and outputs: [`generate`] answers,
//! [`eval`] judges a samples file, [`run`] does both into one directory, [`check`] runs the
//! reference solutions, [`pybench`] runs or judges PyBench episodes (on data [`pybench_data`]
//! fetches). Each tells a [`Listener`](assay_records::Listener) what happens as it happens; the
//! command line parses arguments into these requests, calls them and prints.

pub mod agents;
pub mod bigcodebench_agent;
pub mod check;
pub mod engine;
mod error;
pub mod eval;
pub mod generate;
pub mod judge;
pub mod merge;
pub mod pybench;
pub mod pybench_data;
pub mod pybench_judge;
pub mod run;
pub mod selection;
pub mod service;
pub mod serving;

pub use error::PipelineError;
