//! A script job's end read into its verdict, and the files it left collected.

use super::Start;
use super::{encode_files, infra, ScriptJob};
use crate::collect::{is_plain_name, is_plain_relative};
use crate::config::Limits;
use crate::drive::{ending, Aftermath, End, Ending, Read};
use crate::engine::Engine;
use crate::outcome::{PyError, ScriptOutcome};
use crate::protocol::job::{Control, Event};
use crate::timing::Timing;
use assay_records::Status;

impl Engine {
    /// Runs `job.code` as `__main__` in its own working directory and returns the verdict,
    /// the output and the files it left there.
    pub async fn run_script(&self, job: ScriptJob) -> ScriptOutcome {
        if !is_plain_name(&job.workdir) {
            let reason = format!(
                "invalid job: workdir {:?} must be one plain name",
                job.workdir
            );
            return infra(reason, ScriptOutcome::ended);
        }
        if let Some(bad) = job.files.iter().find(|f| !is_plain_relative(&f.path)) {
            let reason = format!(
                "invalid job: input path {:?} must be relative and plain",
                bad.path
            );
            return infra(reason, ScriptOutcome::ended);
        }
        let inner = &self.inner;
        let limits = job.limits.unwrap_or_else(|| inner.config.limits.clone());
        let files = encode_files(&job.files);
        let control = |base, _: &_| {
            Ok(Control::Script {
                base,
                code: job.code.clone(),
                argv: job.argv.clone(),
                files: files.clone(),
                stdin: job.stdin.clone(),
            })
        };
        let ran = inner
            .run_job(
                Some(&job.workdir),
                &job.env,
                &limits,
                &mut Timing::fixed(limits.wall),
                &Start::default(),
                control,
                |frame, _| {
                    Read::from(matches!(
                        frame,
                        Event::ScriptDone { .. } | Event::InternalError { .. }
                    ))
                },
                std::future::pending(),
            )
            .await;
        let ran = match ran {
            Ok(ran) => ran,
            Err(e) => return infra(e, ScriptOutcome::ended),
        };
        let outcome = script_verdict(&ran.end, ran.started, &ran.aftermath, &limits);
        ran.complete(outcome, job.collect_files, job.workdir, "script")
            .await
    }
}

fn script_verdict<'a>(
    end: &'a End,
    started: bool,
    aftermath: &Aftermath,
    limits: &Limits,
) -> ScriptOutcome {
    let report = |frame: &'a Event| match frame {
        Event::ScriptDone {
            exit_code, error, ..
        } => Some((*exit_code, error)),
        _ => None,
    };
    let (exit_code, error) = match ending(end, aftermath, limits, started, report) {
        Ending::Reported(done) => done,
        Ending::Stopped(status, reason) => return ScriptOutcome::ended(status, reason),
        Ending::HarnessFailed(reason) => return ScriptOutcome::ended(Status::Infra, reason),
        Ending::Unreported(cause) => {
            let reason = format!("the script did not finish: {cause}");
            let mut outcome = ScriptOutcome::ended(Status::Error, reason);
            outcome.exit_code = aftermath.exit().and_then(|e| e.code());
            return outcome;
        }
    };
    let error: Option<PyError> = error.clone().map(Into::into);
    let (status, reason) = match (&error, exit_code) {
        (Some(e), _) if e.name == "MemoryError" => (Status::Oom, "MemoryError".to_string()),
        (Some(e), _) => (Status::Error, format!("{}: {}", e.name, e.message)),
        (None, 0) => (Status::Pass, "exited with code 0".to_string()),
        (None, code) => (Status::Error, format!("exited with code {code}")),
    };
    let mut outcome = ScriptOutcome::ended(status, reason);
    outcome.exit_code = Some(exit_code);
    outcome.error = error;
    outcome
}
