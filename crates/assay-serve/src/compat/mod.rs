//! Drop-ins for the verifiers clients already call, at the paths they call: NeMo Gym's
//! BigCodeBench resources server and SandboxFusion's `run_code`.

pub mod fusion;
pub mod gym;
pub mod gym_extract;
pub mod gym_metrics;
