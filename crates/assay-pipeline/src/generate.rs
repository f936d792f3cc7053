//! `generate`: a model asked for answers (the official prompts and sanitizer) into a run
//! directory's `samples.jsonl`, resumably.

use std::num::{NonZeroU32, NonZeroU64, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use assay_generate::{prompt, resolve, Generation, Model, Onward};
use assay_models::{
    ApiKey, Backoff, Client, ClientConfig, ExtraBody, Limits, ModelSpec, Provider, ServeSettings,
};
use assay_records::{
    GenerationDone, GenerationOutcome, GenerationSettings, Identity, Kind, Listener, Manifest,
    ModelAccess, Prices, ReasoningSettings, RunEvent, Split,
};
use assay_rundir::RunDir;
use assay_sanitize::Sanitizer;
use assay_tasks::bigcodebench::Dataset;

use crate::error::PipelineError;
use crate::selection::TaskSelection;
use crate::serving;

/// Which model answers, and how it is asked.
#[derive(Debug, Clone)]
pub struct ModelSettings {
    /// `openai:MODEL`, `anthropic:MODEL` or `reference`; none: see [`ModelSettings::choose`].
    pub model: Option<String>,
    /// The server's base URL.
    pub base_url: Option<String>,
    /// A base model continuing the Complete prompt.
    pub direct_completion: bool,
    /// The prompt style.
    pub split: Split,
    /// Answers per task.
    pub n: u32,
    /// Sampling temperature (default: the official one for `n`).
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    pub top_p: Option<f64>,
    /// Token limit per answer.
    pub max_tokens: Option<u32>,
    /// Requests in flight at most.
    pub concurrency: usize,
    /// Seconds one HTTP attempt may take.
    pub request_timeout: f64,
    /// Attempts after the first.
    pub retries: u32,
    /// Requests a minute at most.
    pub requests_per_minute: Option<NonZeroU32>,
    /// Tokens a minute at most.
    pub tokens_per_minute: Option<NonZeroU64>,
    /// What tokens cost, for the totals.
    pub prices: Option<Prices>,
    /// A model server to start for the run (`--serve`).
    pub serve: Option<ServeSettings>,
    /// How the model is asked to reason, and its thinking told apart.
    pub reasoning: ReasoningSettings,
    /// Fields added to every request body (`--extra-body`).
    pub extra_body: ExtraBody,
}

/// The model as chosen.
pub struct Chosen {
    /// Who answers.
    pub model: Model,
    /// `reference`, or `provider:model`.
    pub spec: String,
    /// The model's name in file names and `pass_at_k.json` (`/` becomes `--`, as officially).
    pub name: String,
    /// How answers are sampled.
    pub settings: GenerationSettings,
    /// How the model is reached.
    pub access: ModelAccess,
    /// Whether a base model continues the prompt.
    pub direct_completion: bool,
    /// The model server to start when there is something to ask (`--serve`).
    pub serve: Option<ServeSettings>,
    /// How the model is asked to reason, where not the defaults.
    pub reasoning: Option<ReasoningSettings>,
    /// Fields added to every request body, when any.
    pub extra_body: Option<serde_json::Map<String, serde_json::Value>>,
}

impl ModelSettings {
    /// The model and its settings. `default_reference`: whether no model means the reference
    /// solutions. `key`: the API key of a provider, where the caller has one.
    pub fn choose(
        &self,
        default_reference: bool,
        key: impl Fn(&Provider) -> Option<String>,
    ) -> Result<Chosen, PipelineError> {
        let invalid = |m: &str| Err(PipelineError::Invalid(m.to_string()));
        let Some(concurrency) = NonZeroUsize::new(self.concurrency) else {
            return invalid("--concurrency must be at least 1");
        };
        let spec = match &self.model {
            Some(spec) => spec.trim().to_string(),
            None if default_reference => "reference".to_string(),
            None => {
                return invalid("--model is required: openai:MODEL, anthropic:MODEL or reference")
            }
        };
        let settings = |sampling_top_p| {
            resolve(
                self.split,
                self.n,
                self.temperature,
                self.top_p,
                self.max_tokens,
                sampling_top_p,
            )
        };
        let access = |base_url: Option<String>| ModelAccess {
            base_url,
            concurrency: self.concurrency,
            request_timeout_seconds: self.request_timeout,
            retries: self.retries,
            requests_per_minute: self.requests_per_minute.map(NonZeroU32::get),
            tokens_per_minute: self.tokens_per_minute.map(NonZeroU64::get),
            prices: self.prices,
            server: None,
        };
        if spec == "reference" {
            if self.base_url.is_some() || self.direct_completion || self.serve.is_some() {
                return invalid(
                    "--base-url, --serve and --direct-completion are for model APIs, not \
                     `reference`",
                );
            }
            let limited = self.requests_per_minute.is_some() || self.tokens_per_minute.is_some();
            if limited || self.prices.is_some() {
                return invalid(
                    "--rpm, --tpm, --price-in and --price-out are for model APIs, not `reference`",
                );
            }
            if !self.reasoning.is_default() {
                return invalid(
                    "--reasoning-effort, --thinking-budget, --reasoning-model and --think-tags \
                     are for model APIs, not `reference`",
                );
            }
            if self.extra_body.fields().is_some() {
                return invalid("--extra-body is for model APIs, not `reference`");
            }
            return Ok(Chosen {
                model: Model::Reference,
                name: "reference".into(),
                spec,
                settings: settings(true)?,
                access: access(None),
                direct_completion: false,
                serve: None,
                reasoning: None,
                extra_body: None,
            });
        }
        let parsed: ModelSpec = spec.parse()?;
        let anthropic = parsed.provider == Provider::Anthropic;
        let settings = settings(!anthropic)?;
        if anthropic && settings.temperature > 1.0 {
            return Err(PipelineError::Invalid(format!(
                "--temperature {}: Anthropic accepts 0 to 1",
                settings.temperature
            )));
        }
        if let (Some(_), Some(top_p)) = (self.reasoning.thinking_budget, self.top_p) {
            if top_p < 0.95 {
                return Err(PipelineError::Invalid(format!(
                    "--top-p {top_p}: with extended thinking (--thinking-budget) Anthropic \
                     takes 0.95 to 1"
                )));
            }
        }
        let request_timeout = Duration::try_from_secs_f64(self.request_timeout)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                PipelineError::Invalid(
                    "--request-timeout must be a positive number of seconds".into(),
                )
            })?;
        let base_url = serving::base_url(
            self.base_url.as_deref(),
            self.serve.as_ref(),
            &parsed.provider,
        )?;
        let client = Client::new(ClientConfig {
            spec: parsed.clone(),
            base_url,
            api_key: key(&parsed.provider).map(ApiKey::new),
            request_timeout,
            retries: self.retries,
            backoff: Backoff::default(),
            limits: Limits {
                concurrency,
                requests_per_minute: self.requests_per_minute,
                tokens_per_minute: self.tokens_per_minute,
            },
            reasoning: self.reasoning.clone(),
            extra_body: self.extra_body.clone(),
        })?;
        let base_url = Some(client.base_url().to_string());
        let model = if self.direct_completion {
            Model::Completion(client)
        } else {
            Model::Chat(client)
        };
        Ok(Chosen {
            model,
            name: parsed.model.replace('/', "--"),
            spec,
            settings,
            access: access(base_url),
            direct_completion: self.direct_completion,
            serve: self.serve.clone(),
            reasoning: self.reasoning.in_identity(),
            extra_body: self.extra_body.fields().cloned(),
        })
    }
}

impl Chosen {
    /// Whether a model API answers (not the reference solutions).
    pub fn calls_api(&self) -> bool {
        !matches!(self.model, Model::Reference)
    }

    /// What decides the answers, added to a run's identity.
    pub fn identity(&self, into: Identity) -> Identity {
        Identity {
            model: Some(self.spec.clone()),
            direct_completion: Some(self.direct_completion),
            generation: Some(self.settings.clone()),
            reasoning: self.reasoning.clone(),
            extra_body: self.extra_body.clone(),
            prompt: Some(prompt::TEMPLATE_VERSION.to_string()),
            ..into
        }
    }

    /// A run directory's manifest for a generation of `kind` over `tasks`.
    pub fn manifest(&self, kind: Kind, tasks: &TaskSelection, dataset: &Dataset) -> Manifest {
        let mut manifest = Manifest::new(kind, self.identity(tasks.identity(dataset)));
        manifest.model_access = Some(self.access.clone());
        manifest
    }
}

/// Generates into `run` and records the outcome, and how the model was reached this time, in
/// its manifest; then tells `listener` the generation finished. `onward` (for `assay run`):
/// where each answer, sanitized and logged, goes on to be judged at once, and the order to
/// ask in.
pub async fn generate(
    run: &RunDir,
    dataset: &Dataset,
    chosen: &Chosen,
    python: &Path,
    listener: &mut dyn Listener,
    onward: Option<Onward>,
) -> Result<GenerationOutcome, PipelineError> {
    let python = python.to_path_buf();
    let sanitizer = tokio::task::spawn_blocking(move || Sanitizer::new(&python))
        .await
        .map_err(|e| PipelineError::Sanitizer(e.to_string()))?
        .map_err(|e| PipelineError::Sanitizer(e.to_string()))?;
    let generation = Generation {
        dataset,
        settings: &chosen.settings,
        model: &chosen.model,
        sanitizer: Arc::new(Mutex::new(sanitizer)),
        concurrency: chosen.access.concurrency,
        prices: chosen.access.prices,
        onward,
    };
    let pending = generation.pending(run)?;
    let server = match (&chosen.serve, chosen.model.client()) {
        (Some(serve), Some(client)) if pending.answers() > 0 => {
            Some(serving::start(serve, client, run, listener).await?)
        }
        _ => None,
    };
    let outcome = generation.run(run, pending, listener).await;
    if let Some(server) = server {
        server.stop().await;
    }
    let outcome = outcome?;
    let mut manifest = run.manifest()?;
    // The last server started for the run, this session or an earlier one, stays on record.
    let server = manifest.model_access.and_then(|a| a.server);
    manifest.model_access = Some(ModelAccess {
        server,
        ..chosen.access.clone()
    });
    manifest.generation = Some(GenerationDone {
        outcome: outcome.clone(),
        finished_at: assay_records::now(),
    });
    run.update_manifest(&manifest)?;
    listener.on_event(&RunEvent::GenerationFinished {
        outcome: outcome.clone(),
    });
    Ok(outcome)
}

/// What `generate` asks for.
pub struct GenerateRequest {
    /// The tasks.
    pub tasks: TaskSelection,
    /// The model.
    pub chosen: Chosen,
    /// The run directory (none: the default name).
    pub out: Option<PathBuf>,
    /// The CPython 3.11 that checks syntax while sanitizing.
    pub python: PathBuf,
}

/// What a generation came to, and where.
pub struct GenerateReport {
    /// The outcome.
    pub outcome: GenerationOutcome,
    /// The run directory.
    pub dir: PathBuf,
}

/// `assay generate`: answers into a run directory of their own.
pub async fn generate_only(
    request: GenerateRequest,
    listener: &mut dyn Listener,
) -> Result<GenerateReport, PipelineError> {
    let dataset = request.tasks.load()?;
    let chosen = &request.chosen;
    let out = request.out.clone().unwrap_or_else(|| {
        request
            .tasks
            .default_dir(chosen.settings.split, &chosen.name)
    });
    let manifest = chosen.manifest(Kind::BigcodebenchGenerate, &request.tasks, &dataset);
    let run = RunDir::open::<serde_json::Value>(&out, &manifest)?.dir;
    let outcome = generate(&run, &dataset, chosen, &request.python, listener, None).await?;
    Ok(GenerateReport {
        outcome,
        dir: run.path().to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(model: &str) -> ModelSettings {
        ModelSettings {
            model: Some(model.into()),
            base_url: Some("http://localhost:8000/v1".into()),
            direct_completion: false,
            split: Split::Complete,
            n: 1,
            temperature: None,
            top_p: None,
            max_tokens: None,
            concurrency: 4,
            request_timeout: 60.0,
            retries: 2,
            requests_per_minute: NonZeroU32::new(500),
            tokens_per_minute: NonZeroU64::new(30_000),
            prices: Some(Prices {
                prompt_usd_per_million: 2.5,
                completion_usd_per_million: 10.0,
            }),
            serve: None,
            reasoning: ReasoningSettings::default(),
            extra_body: ExtraBody::default(),
        }
    }

    #[test]
    fn limits_and_prices_are_how_the_model_is_reached() {
        let chosen = settings("openai:m").choose(false, |_| None).unwrap();
        assert!(chosen.calls_api());
        let access = chosen.access;
        assert_eq!(
            (access.requests_per_minute, access.tokens_per_minute),
            (Some(500), Some(30_000))
        );
        assert_eq!(access.prices.unwrap().completion_usd_per_million, 10.0);
        let Model::Chat(client) = chosen.model else {
            panic!("a chat model");
        };
        assert_eq!((client.load().limit, client.load().concurrency), (4, 4));
    }

    #[test]
    fn the_reference_solutions_take_no_limits_or_prices() {
        let mut reference = settings("reference");
        reference.base_url = None;
        let err = reference.choose(true, |_| None).err().unwrap().to_string();
        assert!(
            err.contains("--rpm, --tpm, --price-in and --price-out"),
            "{err}"
        );
        let err = ModelSettings {
            concurrency: 0,
            ..settings("openai:m")
        }
        .choose(false, |_| None)
        .err()
        .unwrap()
        .to_string();
        assert!(err.contains("--concurrency"), "{err}");
    }
}
