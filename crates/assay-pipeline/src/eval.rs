//! `eval`: a samples file judged into a run directory, resumably, with the official files.

use std::path::PathBuf;

use assay_eval::bigcodebench::evaluation::Answers;
use assay_eval::bigcodebench::samples::{self, model_name};
use assay_records::{EvalSummary, Kind, Listener, Manifest, RunEvent, Split};
use assay_rundir::SAMPLES;

use crate::error::PipelineError;
use crate::judge::{Evaluate, JudgeSettings};
use crate::selection::TaskSelection;

/// What to evaluate, and how.
pub struct EvalRequest {
    /// The tasks.
    pub tasks: TaskSelection,
    /// Samples in the official format.
    pub samples: PathBuf,
    /// The prompt style the samples answer (none: from the file name, else complete).
    pub split: Option<Split>,
    /// The run directory (none: the default name).
    pub out: Option<PathBuf>,
    /// How samples are judged.
    pub judge: JudgeSettings,
    /// The Python environment jobs run in, set up.
    pub env: assay_pyenv::Environment,
}

/// What an evaluation came to.
pub struct EvalReport {
    /// The figures.
    pub summary: EvalSummary,
    /// The prompt style judged.
    pub split: Split,
    /// The run directory.
    pub dir: PathBuf,
}

/// The split a samples file answers, by its name, as the official file names say.
fn split_of(samples: &std::path::Path) -> Split {
    let name = samples
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    if name.is_some_and(|n| n.contains("-instruct")) {
        Split::Instruct
    } else {
        Split::Complete
    }
}

/// Evaluates `request.samples`, telling `listener` as it goes.
pub async fn eval(
    request: EvalRequest,
    listener: &mut dyn Listener,
) -> Result<EvalReport, PipelineError> {
    let split = request.split.unwrap_or_else(|| split_of(&request.samples));
    let options = request.judge.options(split)?;
    let dataset = request.tasks.load()?;
    let samples = samples::load(&request.samples, &dataset)?;
    if samples.skipped > 0 {
        listener.on_event(&RunEvent::Notice {
            message: format!(
                "{} samples are for tasks outside {}: skipped",
                samples.skipped,
                request.tasks.benchmark()
            ),
        });
    }
    let model = model_name(&request.samples);
    let out = request
        .out
        .clone()
        .unwrap_or_else(|| request.tasks.default_dir(split, &model));
    let judge = request
        .judge
        .start(request.env, options, &[&out, &request.samples])
        .await?;
    let mut identity = judge.identity(request.tasks.identity(&dataset));
    identity.samples_digest = Some(samples.digest.clone());
    let mut manifest = Manifest::new(Kind::BigcodebenchEval, identity);
    manifest.samples =
        Some(std::fs::canonicalize(&request.samples).unwrap_or(request.samples.clone()));
    let opened = judge.open(&out, manifest, listener)?;
    let mut run = opened.dir;
    // From here on, the run directory's copy is what is judged and what the files show.
    let samples = samples.write_into(&run, SAMPLES)?;
    let mut prepared = judge.prepare(&dataset, listener).await?;
    // Every sample is an answer already there, taken slowest to judge first (as the engine
    // has room) and read from the file only then.
    let seconds = prepared.judging_seconds(&dataset);
    let expected = |index: &usize| {
        let task_id = samples.samples[*index].task_id.as_str();
        seconds.get(task_id).copied().unwrap_or(0.0)
    };
    let mut slowest_first: Vec<usize> = (0..samples.samples.len()).collect();
    slowest_first.sort_by(|a, b| expected(b).total_cmp(&expected(a)));
    let verdicts = judge
        .judge(
            &mut prepared,
            &dataset,
            &run,
            opened.records,
            samples.samples.len(),
            Answers::file(&samples, &dataset, slowest_first)?,
            listener,
        )
        .await?;
    let summary = judge
        .conclude(
            prepared,
            verdicts,
            Evaluate {
                dataset: &dataset,
                samples: &samples,
                run: &mut run,
                model: &model,
                unanswered: &[],
                generation: None,
            },
            listener,
        )
        .await?;
    Ok(EvalReport {
        summary,
        split,
        dir: run.path().to_path_buf(),
    })
}
