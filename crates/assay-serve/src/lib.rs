//! `assay serve`: the verifier other programs call. One process over one engine: every
//! request's job takes the engine's CPU slots like an evaluation's would, so a trainer
//! scoring rollouts gets the same verdicts `assay eval` gives, at its speed.
//!
//! Its own API is versioned under `/v1` (docs/serve.md says every field): BigCodeBench
//! verdicts one at a time or streamed as a batch finishes, unittest jobs and scripts for any
//! dataset, persistent interpreter sessions as PyBench's agent drives them, `/health` and
//! `/metrics`. Beside it, at the paths their clients call, two drop-ins: NeMo Gym's
//! BigCodeBench resources server (`/verify`) and SandboxFusion's `/run_code`.
//!
//! Work beyond what the engine runs at once waits in a bounded queue ([`admission`]); a
//! client that goes away takes its jobs with it (dropping a job's future kills it); every
//! request's time and memory are held to the service's maxima whatever it asks.

mod admission;
mod auth;
mod compat;
mod error;
mod files;
mod jobs;
mod limits;
mod metrics;
mod routes;
mod sanitizers;
mod service;
mod sessions;
mod state;

pub use auth::Secret;
pub use compat::gym_extract::Extraction;
pub use service::serve;
pub use state::{Service, SessionsEngine, Settings, QUEUE_PER_PLACE};
