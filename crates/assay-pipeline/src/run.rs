//! `run`: generate and judge at once, into one run directory: each answer is judged as soon
//! as the model gives it, and the reference solutions run meanwhile, so a run takes about as
//! long as the slower of its two halves.

use std::path::PathBuf;
use std::sync::Mutex;

use assay_eval::bigcodebench::evaluation::Answers;
use assay_eval::bigcodebench::samples;
use assay_generate::{Model, Onward};
use assay_records::{EvalSummary, GenerationOutcome, Kind, Listener, RunEvent, Split};
use assay_rundir::SAMPLES;
use tokio::sync::mpsc;

use crate::agents::CodingAgent;
use crate::bigcodebench_agent::AgentSolver;
use crate::error::PipelineError;
use crate::generate::{generate, Chosen};
use crate::judge::{Evaluate, Judge, JudgeSettings};
use crate::selection::TaskSelection;

/// What to run.
pub struct RunRequest {
    /// The tasks.
    pub tasks: TaskSelection,
    /// The model.
    pub chosen: Chosen,
    /// The run directory (none: the default name).
    pub out: Option<PathBuf>,
    /// How answers are judged.
    pub judge: JudgeSettings,
    /// The Python environment jobs run in, set up.
    pub env: assay_pyenv::Environment,
    /// A coding agent that works out each answer instead of the model replying, and the
    /// model requests an episode may make.
    pub agent: Option<(CodingAgent, u32)>,
}

/// What a run came to.
pub struct RunReport {
    /// The generation.
    pub generation: GenerationOutcome,
    /// The evaluation.
    pub evaluation: EvalSummary,
    /// The prompt style.
    pub split: Split,
    /// The run directory.
    pub dir: PathBuf,
}

/// One listener heard by two tasks at once (the generation and the judging).
struct Shared<'a, 'b, 'c>(&'a Mutex<&'b mut (dyn Listener + 'c)>);

impl Listener for Shared<'_, '_, '_> {
    fn on_event(&mut self, event: &RunEvent) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .on_event(event);
    }
}

/// Generates and evaluates at once, telling `listener` as it goes.
pub async fn run(
    request: RunRequest,
    listener: &mut dyn Listener,
) -> Result<RunReport, PipelineError> {
    let mut chosen = request.chosen;
    let split = chosen.settings.split;
    let mut judging = request.judge;
    let options = judging.options(split)?;
    let dataset = request.tasks.load()?;
    if let Some((coding, _)) = &request.agent {
        chosen.name = format!("{}--agent-{}", chosen.name, coding.agent.declaration.name);
        judging
            .engine
            .visible
            .extend(coding.agent.visible.iter().cloned());
    }
    let out = request
        .out
        .clone()
        .unwrap_or_else(|| request.tasks.default_dir(split, &chosen.name));
    let bin = request.env.dir.join("bin");
    let agent = request.agent.as_ref().map(|(coding, _)| coding.identity());
    let judge = judging.start(request.env, options, &[&out]).await?;
    if let Some((coding, max_turns)) = request.agent {
        chosen.model = agent_model(&chosen, coding, max_turns, &judge, bin, &out)?;
    }
    let chosen = &chosen;
    let mut manifest = chosen.manifest(Kind::BigcodebenchRun, &request.tasks, &dataset);
    manifest.identity = judge.identity(manifest.identity);
    manifest.identity.agent = agent;
    // It continues a directory `assay generate` made with the same settings.
    manifest.extends = vec![Kind::BigcodebenchGenerate];
    let opened = judge.open(&out, manifest, listener)?;
    let mut run = opened.dir;
    let mut prepared = judge.prepare(&dataset, listener).await?;
    let python = judge.python();
    // Each answer is judged as soon as it is sanitized and logged and the engine has room,
    // while the model answers the others (the tasks slowest to judge asked first, and judged
    // first of those waiting); the reference solutions run meanwhile.
    let (answers, arrived) = mpsc::unbounded_channel();
    let judging_seconds = prepared.judging_seconds(&dataset);
    let arrived = Answers::arriving(arrived, judging_seconds.clone());
    let onward = Onward {
        answers,
        judging_seconds,
    };
    let expected = dataset.tasks.len() * chosen.settings.n as usize;
    let (outcome, verdicts) = {
        let shared = Mutex::new(&mut *listener);
        let (mut generating, mut judging) = (Shared(&shared), Shared(&shared));
        tokio::try_join!(
            generate(
                &run,
                &dataset,
                chosen,
                &python,
                &mut generating,
                Some(onward)
            ),
            judge.judge(
                &mut prepared,
                &dataset,
                &run,
                opened.records,
                expected,
                arrived,
                &mut judging,
            ),
        )?
    };
    if outcome.samples == 0 {
        return Err(PipelineError::Invalid(
            "the model answered no task, so there is nothing to evaluate; rerun the same command \
             to ask again"
                .into(),
        ));
    }
    let samples = samples::load(&run.path().join(SAMPLES), &dataset)?;
    let unanswered: Vec<(String, String)> = outcome
        .unanswered
        .iter()
        .flat_map(|u| (0..u.samples).map(|_| (u.task_id.clone(), u.reason.clone())))
        .collect();
    let evaluation = judge
        .conclude(
            prepared,
            verdicts,
            Evaluate {
                dataset: &dataset,
                samples: &samples,
                run: &mut run,
                model: &chosen.name,
                unanswered: &unanswered,
                // The reference solutions cost nothing and bill no tokens.
                generation: chosen.calls_api().then_some(&outcome.totals),
            },
            listener,
        )
        .await?;
    Ok(RunReport {
        generation: outcome,
        evaluation,
        split,
        dir: run.path().to_path_buf(),
    })
}

/// The chosen chat model, given to `coding`'s agent, which works out each answer in `judge`'s
/// sandbox (its episodes share the judging's CPU slots).
fn agent_model(
    chosen: &Chosen,
    coding: CodingAgent,
    max_turns: u32,
    judge: &Judge,
    bin: PathBuf,
    out: &std::path::Path,
) -> Result<Model, PipelineError> {
    let Model::Chat(client) = &chosen.model else {
        return Err(PipelineError::Invalid(
            "--agent needs a chat model's API (--model openai:MODEL or anthropic:MODEL), not the \
             reference solutions or --direct-completion"
                .into(),
        ));
    };
    if max_turns == 0 {
        return Err(PipelineError::Invalid(
            "--max-turns must be at least 1".into(),
        ));
    }
    Ok(Model::Agent(std::sync::Arc::new(AgentSolver {
        engine: judge.engine().clone(),
        model: assay_coding_agents::ModelAccess {
            client: client.clone(),
            name: client.spec().model.clone(),
            temperature: chosen.settings.temperature,
            max_tokens: chosen.settings.max_tokens,
        },
        coding,
        bin,
        max_turns,
        run: out.to_path_buf(),
    })))
}
