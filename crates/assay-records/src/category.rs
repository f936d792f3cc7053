//! A PyBench paper category's figures: what both the unit checks' figures (`episode`) and an
//! LLM judge's figures (`judge`) give per category. Its own module because the episode
//! records hold the judges' figures: with the type in either module, each would import the
//! other.

use serde::{Deserialize, Serialize};

/// A category's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CategoryFigures {
    /// Tasks of the category in the run.
    pub tasks: usize,
    /// Of them, passed.
    pub passed: usize,
    /// `passed / tasks`.
    pub pass_rate: f64,
}
