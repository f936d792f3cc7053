//! Evaluating a model's samples on a benchmark.
//!
//! [`bigcodebench`]: reading the official samples format, turning each sample into a sandbox
//! job with the official semantics (calibration included), and giving its verdict in the
//! official terms.

pub mod bigcodebench;
