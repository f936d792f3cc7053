//! A request's limits: what it asks, held to the service's maxima.

use std::time::Duration;

use assay_eval::bigcodebench::options::STACK_BYTES;
use assay_sandbox::Limits;

use crate::error::ApiError;
use crate::state::Settings;

/// The limits of a job asking for `timeout` seconds (`default` when it asks none) and
/// `memory_mib` (the service's maximum when none): each at most the service's maximum.
pub fn job_limits(
    settings: &Settings,
    timeout: Option<f64>,
    default: Duration,
    memory_mib: Option<u64>,
) -> Result<Limits, ApiError> {
    let wall = match timeout {
        None => default,
        Some(seconds) => Duration::try_from_secs_f64(seconds)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                ApiError::bad(format!(
                    "timeout: {seconds} is not a positive number of seconds"
                ))
            })?,
    };
    let memory_mib = memory_mib.unwrap_or(settings.max_memory_mib);
    if memory_mib < 64 {
        return Err(ApiError::bad("memory_mib: at least 64"));
    }
    Ok(Limits {
        wall: wall.min(settings.max_timeout),
        memory_bytes: memory_mib.min(settings.max_memory_mib) << 20,
        stack_bytes: Some(STACK_BYTES),
        ..Limits::default()
    })
}
