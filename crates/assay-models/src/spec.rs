//! Which provider and model to talk to, as the user writes it on the command line.

use std::fmt;
use std::str::FromStr;

/// The wire protocol spoken to the model's API.
#[derive(Clone, Debug, PartialEq)]
pub enum Provider {
    /// OpenAI's API or any server that imitates it (vLLM, SGLang, TGI, Ollama, llama.cpp, ...).
    OpenAi,
    /// Anthropic's Messages API.
    Anthropic,
}

impl Provider {
    /// Every provider, for what concerns them all (their keys).
    pub const ALL: [Provider; 2] = [Provider::OpenAi, Provider::Anthropic];

    /// The environment variable the caller reads the API key from; named in error messages so a
    /// user knows what to set.
    pub const fn key_env_var(&self) -> &'static str {
        match self {
            Provider::OpenAi => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    /// The environment variable the provider's own SDK reads its base URL from, so that a
    /// user whose shell points the SDK at a proxy or a local server points assay there too.
    pub const fn base_url_env_var(&self) -> &'static str {
        match self {
            Provider::OpenAi => "OPENAI_BASE_URL",
            Provider::Anthropic => "ANTHROPIC_BASE_URL",
        }
    }

    /// The prefix used in a model spec (`openai:...`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What to talk to: a provider and the model name it knows.
///
/// Written `openai:MODEL` or `anthropic:MODEL`. Only the first `:` separates, because model
/// names of local servers contain colons (`openai:qwen2.5-coder:7b` for Ollama).
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSpec {
    /// Which API protocol to speak.
    pub provider: Provider,
    /// The model name as the provider knows it, e.g. `gpt-4o` or `qwen2.5-coder:7b`.
    pub model: String,
}

impl fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.provider, self.model)
    }
}

/// A model spec that could not be parsed; the message names the offending part.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(String);

const SPEC_HELP: &str = "use openai:MODEL or anthropic:MODEL";

impl FromStr for ModelSpec {
    type Err = SpecError;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let Some((provider, model)) = spec.split_once(':') else {
            return Err(SpecError(format!(
                "model spec `{spec}` names no provider ({SPEC_HELP})"
            )));
        };
        let provider = match provider {
            "openai" => Provider::OpenAi,
            "anthropic" => Provider::Anthropic,
            other => {
                return Err(SpecError(format!(
                    "unknown provider `{other}` in model spec `{spec}` ({SPEC_HELP})"
                )))
            }
        };
        if model.trim().is_empty() {
            return Err(SpecError(format!(
                "empty model name in model spec `{spec}` ({SPEC_HELP})"
            )));
        }
        if model.trim() != model {
            return Err(SpecError(format!(
                "model name in model spec `{spec}` has surrounding whitespace"
            )));
        }
        Ok(ModelSpec {
            provider,
            model: model.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_providers_and_keeps_colons_in_the_model() {
        let spec: ModelSpec = "openai:gpt-4o-mini".parse().unwrap();
        assert_eq!(spec.provider, Provider::OpenAi);
        assert_eq!(spec.model, "gpt-4o-mini");
        let spec: ModelSpec = "anthropic:claude-sonnet-4-5".parse().unwrap();
        assert_eq!(spec.provider, Provider::Anthropic);
        let spec: ModelSpec = "openai:qwen2.5-coder:7b".parse().unwrap();
        assert_eq!(spec.model, "qwen2.5-coder:7b");
        assert_eq!(spec.to_string(), "openai:qwen2.5-coder:7b");
    }

    #[test]
    fn errors_name_the_bad_part() {
        let err = "x:y".parse::<ModelSpec>().unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown provider `x` in model spec `x:y` (use openai:MODEL or anthropic:MODEL)"
        );
        let err = "openai:".parse::<ModelSpec>().unwrap_err().to_string();
        assert!(
            err.starts_with("empty model name in model spec `openai:`"),
            "{err}"
        );
        let err = "gpt-4o".parse::<ModelSpec>().unwrap_err().to_string();
        assert!(err.contains("names no provider"), "{err}");
        let err = "OpenAI:gpt-4o"
            .parse::<ModelSpec>()
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown provider `OpenAI`"), "{err}");
        let err = "openai: gpt-4o"
            .parse::<ModelSpec>()
            .unwrap_err()
            .to_string();
        assert!(err.contains("whitespace"), "{err}");
    }
}
