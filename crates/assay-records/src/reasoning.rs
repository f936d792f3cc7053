//! Reasoning models: how they were asked to think, and the thinking each answer came with.

use serde::{Deserialize, Serialize};

/// How hard an OpenAI-style reasoning model thinks: sent as `reasoning_effort`. The values
/// OpenAI's models take (each model accepts some of them; the server refuses the others).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    /// No reasoning (gpt-5.1 and later).
    None,
    /// The least (gpt-5).
    Minimal,
    /// Low.
    Low,
    /// OpenAI's default.
    Medium,
    /// High.
    High,
    /// The most (gpt-5.1-codex-max and later).
    Xhigh,
}

impl Effort {
    /// Every effort, in the order the help lists them.
    pub const ALL: [Effort; 6] = [
        Effort::None,
        Effort::Minimal,
        Effort::Low,
        Effort::Medium,
        Effort::High,
        Effort::Xhigh,
    ];

    /// The value sent and written.
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::None => "none",
            Effort::Minimal => "minimal",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Xhigh => "xhigh",
        }
    }
}

impl std::str::FromStr for Effort {
    type Err = String;

    fn from_str(text: &str) -> Result<Effort, String> {
        Effort::ALL
            .into_iter()
            .find(|e| e.as_str() == text)
            .ok_or_else(|| {
                let known: Vec<&str> = Effort::ALL.iter().map(|e| e.as_str()).collect();
                format!(
                    "unknown reasoning effort `{text}` (one of: {})",
                    known.join(", ")
                )
            })
    }
}

/// The tags a model writes its thinking between, in its answer's text (`<think>`,
/// `</think>`). An empty `open` says the model's chat template opens the thinking in the
/// prompt: every answer starts inside it, and one without `close` was cut off while thinking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThinkTag {
    /// Where thinking starts ("" = before the answer's first character).
    pub open: String,
    /// Where it ends.
    pub close: String,
}

/// How a model was asked to reason, and how its thinking is told from its answer: part of a
/// run's identity, since each changes the answers or what is judged of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReasoningSettings {
    /// `reasoning_effort` sent to OpenAI and compatible servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// Anthropic extended thinking's `budget_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<u32>,
    /// Whether the model takes OpenAI's reasoning-model requests (no sampling parameters, no
    /// token limit), said by the user; absent: told by its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_model: Option<bool>,
    /// The thinking tags set apart from answers' text; absent: the forms open models use
    /// (`THINK_TAGS`), empty: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_tags: Option<Vec<ThinkTag>>,
}

impl ReasoningSettings {
    /// Whether nothing is asked beyond the defaults.
    pub fn is_default(&self) -> bool {
        *self == ReasoningSettings::default()
    }

    /// The settings as a run's identity has them: absent at the defaults, as before there
    /// were reasoning settings, so that earlier runs resume.
    pub fn in_identity(&self) -> Option<ReasoningSettings> {
        (!self.is_default()).then(|| self.clone())
    }
}

/// Where an answer's thinking came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingSource {
    /// Returned beside the answer (`reasoning_content`, `reasoning`, Anthropic's thinking
    /// blocks): the answer's text never held it.
    Field,
    /// Written into the answer's text between thinking tags, and set apart from it.
    Text,
}

/// The thinking one answer came with. Never judged as code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thinking {
    /// Where it came from.
    pub source: ThinkingSource,
    /// What the model thought (for `text`, what stood between the tags).
    pub text: String,
    /// The answer ended inside its thinking (the token limit came first): it has no answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
    /// Thinking blocks the provider returned encrypted (Anthropic's `redacted_thinking`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub redacted: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
