//! Judging settings and a started judge: the engine, its environment, and what every
//! judging pipeline (eval, run, check) does with them.

pub mod stability;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use assay_eval::bigcodebench::evaluation::{check, Answers, Ending, Judging, Verdicts};
use assay_eval::bigcodebench::ground_truth::References;
use assay_eval::bigcodebench::options::{Options, STACK_BYTES};
use assay_eval::bigcodebench::samples::Samples;
use assay_eval::bigcodebench::verdict::Environment;
use assay_eval::resume::RecordKey;
use assay_records::{
    Conditions, EvalSummary, GenerationTotals, GroundTruthSummary, Identity, Listener, Manifest,
    RunEvent, SampleRecord, Split, TimePolicy,
};
use assay_rundir::{Opened, RunDir, RESULTS, SUMMARY};
use assay_sandbox::{Engine, Limits};
use assay_tasks::bigcodebench::Dataset;

use crate::engine::{self, EngineSettings};
use crate::error::PipelineError;

/// How samples are judged: what `eval`, `run` and `check` share.
#[derive(Debug, Clone)]
pub struct JudgeSettings {
    /// Run solutions behind the official calibration prefix.
    pub calibrated: bool,
    /// One time limit for every sample, in seconds; none: a budget per task
    /// ([`TimePolicy::DEFAULT`]).
    pub timeout: Option<f64>,
    /// Memory limit per sample, in MiB.
    pub memory_mib: u64,
    /// Run under the official harness's process guards.
    pub guards: bool,
    /// Samples that gamed their tests judged as the official harness does
    /// (`--gamed-as-official`).
    pub gamed_as_official: bool,
    /// How the sandbox runs.
    pub engine: EngineSettings,
    /// Stability rounds after the evaluation (`--stability N`): every judged sample run again
    /// under a changed condition that ought not to matter, one per round.
    pub stability: u32,
}

impl JudgeSettings {
    /// Whether the limits can work: called before anything slow starts.
    pub fn validate(&self) -> Result<(), PipelineError> {
        self.time_policy().map(|_| ())
    }

    fn time_policy(&self) -> Result<TimePolicy, PipelineError> {
        if self.memory_mib < 64 {
            return Err(PipelineError::Invalid(
                "--memory must be at least 64 MiB".into(),
            ));
        }
        match self.timeout {
            None => Ok(TimePolicy::DEFAULT),
            Some(seconds)
                if seconds > 0.0 && std::time::Duration::try_from_secs_f64(seconds).is_ok() =>
            {
                Ok(TimePolicy::Fixed { seconds })
            }
            Some(_) => Err(PipelineError::Invalid(
                "--timeout must be a positive number of seconds".into(),
            )),
        }
    }

    /// The evaluation options for `split`, checked.
    pub fn options(&self, split: Split) -> Result<Options, PipelineError> {
        let time = self.time_policy()?;
        Ok(Options {
            split,
            calibrated: self.calibrated,
            limits: Limits {
                memory_bytes: self.memory_mib << 20,
                stack_bytes: Some(STACK_BYTES),
                ..Limits::default()
            },
            time,
            network: self.engine.network,
            guards: self.guards,
            gamed_as_official: self.gamed_as_official,
        })
    }

    /// Starts the engine in `env` to judge with `options`; `harness` (the run directory, the
    /// samples file) stays hidden from jobs.
    pub async fn start(
        &self,
        env: assay_pyenv::Environment,
        options: Options,
        harness: &[&Path],
    ) -> Result<Judge, PipelineError> {
        let engine = engine::start(&env, &self.engine, harness).await?;
        Ok(Judge {
            engine,
            env,
            options,
            memory_mib: self.memory_mib,
            settings: self.engine.clone(),
            harness: harness.iter().map(|p| p.to_path_buf()).collect(),
            stability: self.stability,
        })
    }
}

/// A started engine and the settings samples are judged with.
pub struct Judge {
    engine: Engine,
    env: assay_pyenv::Environment,
    options: Options,
    memory_mib: u64,
    /// How the engine was started, and what it hides: stability rounds start others so.
    settings: EngineSettings,
    harness: Vec<PathBuf>,
    stability: u32,
}

/// What judging a dataset needs besides the engine: what the environment lacks, and the
/// reference runs.
pub struct Prepared {
    environment: Environment,
    references: References,
}

/// The end of an evaluation in an open run directory: the samples its answers are, and what
/// the model never answered.
pub struct Evaluate<'a> {
    /// The tasks.
    pub dataset: &'a Dataset,
    /// The samples.
    pub samples: &'a Samples,
    /// The run directory.
    pub run: &'a mut RunDir,
    /// The model's name in `pass_at_k.json`.
    pub model: &'a str,
    /// Samples the model never answered (task id, why).
    pub unanswered: &'a [(String, String)],
    /// What generating the samples cost, when this run generated them.
    pub generation: Option<&'a GenerationTotals>,
}

impl Prepared {
    /// How long each task of `dataset` is expected to take to judge, in seconds, as far as is
    /// known here: what a run asks the model for first.
    pub fn judging_seconds(&self, dataset: &Dataset) -> HashMap<String, f64> {
        dataset
            .tasks
            .iter()
            .map(|t| {
                (
                    t.task_id.clone(),
                    self.references.expected_seconds(&t.task_id),
                )
            })
            .collect()
    }
}

impl Judge {
    /// The settings that decide verdicts, added to a run's identity.
    pub fn identity(&self, into: Identity) -> Identity {
        Identity {
            split: Some(self.options.split.as_str().to_string()),
            calibrated: Some(self.options.calibrated),
            time_policy: Some(self.options.time.clone()),
            memory_mib: Some(self.memory_mib),
            network: Some(self.options.network),
            guards: Some(self.options.guards),
            gamed_as_official: self.options.gamed_as_official.then_some(true),
            conditions: Some(self.engine.conditions()),
            environment: Some(self.env.key()),
            ..into
        }
    }

    /// The environment's interpreter (the sanitizer checks syntax with it).
    pub fn python(&self) -> PathBuf {
        self.env.python()
    }

    /// Opens (or resumes) the run directory `out` for `manifest`, adding where code runs; of
    /// the records already there, what resuming matches them by (the records stay on disk).
    pub fn open(
        &self,
        out: &Path,
        mut manifest: Manifest,
        listener: &mut dyn Listener,
    ) -> Result<Opened<RecordKey>, PipelineError> {
        crate::engine::record_machine(&mut manifest, &self.engine, &self.env, self.options.network);
        let opened = RunDir::open(out, &manifest)?;
        if opened.resumed {
            listener.on_event(&RunEvent::Notice {
                message: format!(
                    "resuming {} ({} already evaluated)",
                    out.display(),
                    match opened.records.len() {
                        1 => "1 sample".to_string(),
                        n => format!("{n} samples"),
                    }
                ),
            });
        }
        Ok(opened)
    }

    /// Probes what the environment lacks for `dataset` (said once, as a notice) and opens its
    /// reference-run cache.
    pub async fn prepare(
        &self,
        dataset: &Dataset,
        listener: &mut dyn Listener,
    ) -> Result<Prepared, PipelineError> {
        let environment = Environment::probe(&self.engine, dataset, self.options.network).await?;
        if !environment.missing_modules.is_empty() {
            let missing: Vec<&str> = environment
                .missing_modules
                .iter()
                .map(String::as_str)
                .collect();
            listener.on_event(&RunEvent::Notice {
                message: format!(
                    "not installed here, so tasks needing them are infra: {}",
                    missing.join(", ")
                ),
            });
        }
        let references = References::open(
            &assay_pyenv::cache_root()?,
            dataset,
            &self.env.key(),
            &self.options,
            self.engine.conditions(),
        )?;
        Ok(Prepared {
            environment,
            references,
        })
    }

    /// Runs the reference solutions not measured yet (their times set the samples' time
    /// limits): `assay check`.
    pub async fn measure_references(
        &self,
        prepared: &mut Prepared,
        dataset: &Dataset,
        listener: &mut dyn Listener,
    ) -> Result<GroundTruthSummary, PipelineError> {
        Ok(check(
            &self.engine,
            dataset,
            &prepared.environment,
            &mut prepared.references,
            listener,
        )
        .await?)
    }

    /// Judges each answer `answers` brings as it arrives, into `run` (whose `earlier` records
    /// an answer running the same program keeps); reference solutions not measured yet run on
    /// the way. `expected`: answers to come in all.
    #[allow(clippy::too_many_arguments)]
    pub async fn judge(
        &self,
        prepared: &mut Prepared,
        dataset: &Dataset,
        run: &RunDir,
        earlier: Vec<RecordKey>,
        expected: usize,
        answers: Answers<'_>,
        listener: &mut dyn Listener,
    ) -> Result<Verdicts, PipelineError> {
        let Prepared {
            environment,
            references,
        } = prepared;
        let judging = Judging {
            engine: &self.engine,
            dataset,
            options: &self.options,
            environment,
        };
        Ok(judging
            .judge(run, earlier, references, expected, answers, listener)
            .await?)
    }

    /// Gives the samples of `job` their `verdicts`, writes the official files and
    /// `summary.json`, then runs the stability rounds asked for.
    pub async fn conclude(
        &self,
        prepared: Prepared,
        verdicts: Verdicts,
        job: Evaluate<'_>,
        listener: &mut dyn Listener,
    ) -> Result<EvalSummary, PipelineError> {
        let Prepared {
            environment,
            mut references,
        } = prepared;
        let judging = Judging {
            engine: &self.engine,
            dataset: job.dataset,
            options: &self.options,
            environment: &environment,
        };
        let ending = Ending {
            samples: job.samples,
            model: job.model,
            unanswered: job.unanswered,
            generation: job.generation,
        };
        let mut summary =
            verdicts.conclude(&judging, job.run, &mut references, ending, listener)?;
        if self.stability > 0 {
            // Every judged sample runs again: its records are read back for the rounds.
            let results: BTreeMap<usize, SampleRecord> =
                assay_report::read_lines::<SampleRecord>(&job.run.path().join(RESULTS))
                    .map_err(|e| PipelineError::Invalid(e.to_string()))?
                    .into_iter()
                    .map(|r| (r.index, r))
                    .collect();
            let found = stability::rounds(
                self,
                &judging,
                job.samples,
                job.run,
                &results,
                &references,
                listener,
            )
            .await?;
            summary.stability = Some(found);
            job.run.write_json(SUMMARY, &summary)?;
        }
        Ok(summary)
    }

    /// An engine like this judge's but under `conditions`, with `jobs` CPU slots (none: the
    /// same as this one's).
    pub(crate) async fn other_engine(
        &self,
        conditions: Conditions,
        jobs: Option<usize>,
    ) -> Result<Engine, PipelineError> {
        let mut settings = self.settings.clone();
        settings.conditions = conditions;
        if let Some(jobs) = jobs {
            // A `--max-jobs` the user set stays the bound on jobs at once (unless below the
            // slots, which it may not be).
            settings.max_jobs = settings.max_jobs.map(|max| max.max(jobs));
            settings.jobs = Some(jobs);
        }
        let harness: Vec<&Path> = self.harness.iter().map(PathBuf::as_path).collect();
        let engine = engine::start(&self.env, &settings, &harness).await?;
        let (own, other) = (self.engine.isolation().level, engine.isolation().level);
        if other != own {
            return Err(PipelineError::Invalid(format!(
                "a stability round's sandbox reached isolation {other:?}, the run's {own:?}: \
                 their verdicts would not compare"
            )));
        }
        Ok(engine)
    }

    /// Stability rounds to run after the evaluation.
    pub(crate) fn stability_rounds(&self) -> u32 {
        self.stability
    }

    /// The engine (its isolation report, its Python).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The environment's key.
    pub fn environment_key(&self) -> String {
        self.env.key()
    }
}
