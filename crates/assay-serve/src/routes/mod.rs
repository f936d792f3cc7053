//! The service's own routes, under `/v1`, and its health and metrics.

pub mod bigcodebench;
pub mod health;
pub mod run;
pub mod sessions;
pub mod unittest;
