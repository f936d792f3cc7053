//! Running a request's job: a place in the queue, the engine, and the metrics, in one place
//! for every route.

use assay_eval::bigcodebench::verifier::Verification;
use assay_sandbox::{ScriptJob, ScriptOutcome, UnittestJob, UnittestOutcome};
use assay_tasks::bigcodebench::Task;

use crate::admission::Ticket;
use crate::error::ApiError;
use crate::state::Inner;

impl Inner {
    /// Judges `solution` against `task` of dataset `version` as `assay eval` does, holding
    /// `ticket` (its place in the queue) while it runs.
    pub async fn verify(
        &self,
        ticket: Ticket,
        version: &str,
        task: &Task,
        solution: &str,
        calibrated: bool,
        note: Option<String>,
    ) -> Result<Verification, ApiError> {
        let verification = self
            .verifier
            .verify(version, task, solution, calibrated, note)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        drop(ticket);
        let record = &verification.record;
        self.metrics
            .job("bigcodebench", record.status, record.wall_seconds);
        Ok(verification)
    }

    /// Runs a unittest job once the queue admits it (`503` when full).
    pub async fn unittest(&self, job: UnittestJob) -> Result<UnittestOutcome, ApiError> {
        let ticket = self.admission.try_admit()?;
        let outcome = self.engine.run_unittest(job).await;
        drop(ticket);
        self.metrics
            .job("unittest", outcome.status, outcome.usage.wall.as_secs_f64());
        Ok(outcome)
    }

    /// Runs a script job once the queue admits it (`503` when full), counted as `kind`.
    pub async fn script(
        &self,
        job: ScriptJob,
        kind: &'static str,
    ) -> Result<ScriptOutcome, ApiError> {
        let ticket = self.admission.try_admit()?;
        let outcome = self.engine.run_script(job).await;
        drop(ticket);
        self.metrics
            .job(kind, outcome.status, outcome.usage.wall.as_secs_f64());
        Ok(outcome)
    }
}
