//! Judging a model's samples: turning each into a sandbox job with its benchmark's semantics,
//! and each outcome into a verdict and a record.
//!
//! [`bigcodebench`]: the official samples format, calibration, verdicts in the official
//! terms, the reference runs and the official files. [`probe`], [`records`] and
//! [`resume`] serve any benchmark.

pub mod bigcodebench;
mod error;
pub mod probe;
pub mod records;
pub mod resume;

pub use error::EvalError;
