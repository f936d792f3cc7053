//! `--extra-body`: fields the user adds to every request body. A server's own defaults
//! (top_k, min_p, repetition penalties from a model's generation_config or a server profile)
//! otherwise apply silently to a "greedy" run, and vLLM or SGLang users need
//! `chat_template_kwargs`, `seed` or provider fields; assay sends only what the official
//! harness sends. A field assay sets itself is refused unless the user names it on purpose
//! (the run would otherwise not be what its settings say); a field that would break how the
//! reply is read (`stream`, `n`, the messages) is refused always.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::error::ConfigError;
use crate::spec::Provider;

/// Fields no extra body may set: they carry the task's prompt, or change the reply's shape
/// from what assay reads.
const NEVER: &[&str] = &[
    "model",
    "messages",
    "prompt",
    "system",
    "tools",
    "n",
    "stream",
    "stream_options",
];

/// Fields assay itself sets in some request to `provider`: an extra body replaces them only
/// when the user names them.
fn assays_own(provider: &Provider) -> &'static [&'static str] {
    match provider {
        Provider::OpenAi => &[
            "temperature",
            "top_p",
            "max_tokens",
            "max_completion_tokens",
            "frequency_penalty",
            "presence_penalty",
            "reasoning_effort",
            "stop",
        ],
        Provider::Anthropic => &[
            "temperature",
            "top_p",
            "max_tokens",
            "thinking",
            "stop_sequences",
        ],
    }
}

/// Fields added to every request body, and which of assay's own fields they may replace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExtraBody {
    fields: Map<String, Value>,
    replaces: BTreeSet<String>,
}

impl ExtraBody {
    /// `fields` to add to each body; `replaces` names those of assay's own fields they may
    /// replace (checked against the provider by [`Client::new`](crate::Client::new)).
    pub fn new(fields: Map<String, Value>, replaces: impl IntoIterator<Item = String>) -> Self {
        ExtraBody {
            fields,
            replaces: replaces.into_iter().collect(),
        }
    }

    /// The fields, for a run's identity: none when there are none.
    pub fn fields(&self) -> Option<&Map<String, Value>> {
        (!self.fields.is_empty()).then_some(&self.fields)
    }

    /// Refuses fields that would break the reply's reading, fields assay sets for `provider`
    /// that the user did not name, and names that are not among the fields.
    pub(crate) fn check(&self, provider: &Provider) -> Result<(), ConfigError> {
        let refuse = |m: String| Err(ConfigError::ExtraBody(m));
        if let Some(key) = self.fields.keys().find(|k| NEVER.contains(&k.as_str())) {
            return refuse(format!(
                "--extra-body sets `{key}`, which assay must set itself (it carries the task or \
                 decides how the reply is read); remove it"
            ));
        }
        let own = assays_own(provider);
        if let Some(key) = self
            .fields
            .keys()
            .find(|k| own.contains(&k.as_str()) && !self.replaces.contains(*k))
        {
            return refuse(format!(
                "--extra-body sets `{key}`, which assay sends itself (from its own settings and \
                 flags such as --temperature, --top-p, --max-tokens, --reasoning-effort); to \
                 send yours in its place, say so with --extra-body-replaces {key}"
            ));
        }
        if let Some(key) = self.replaces.iter().find(|k| !self.fields.contains_key(*k)) {
            return refuse(format!(
                "--extra-body-replaces {key}: --extra-body has no `{key}` field"
            ));
        }
        Ok(())
    }

    /// `body` with the fields added (replacing assay's where named).
    pub(crate) fn merge_into(&self, body: &mut Value) {
        if let Some(object) = body.as_object_mut() {
            for (key, value) in &self.fields {
                object.insert(key.clone(), value.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(fields: Value, replaces: &[&str]) -> ExtraBody {
        ExtraBody::new(
            fields.as_object().unwrap().clone(),
            replaces.iter().map(|s| s.to_string()),
        )
    }

    #[test]
    fn assays_own_fields_are_replaced_only_when_named_and_the_replys_never() {
        let seeded = body(json!({"seed": 7, "top_k": 1}), &[]);
        assert!(seeded.check(&Provider::OpenAi).is_ok());
        let hot = body(json!({"temperature": 0.7}), &[]);
        let refused = hot.check(&Provider::OpenAi).unwrap_err().to_string();
        assert!(
            refused.contains("--extra-body-replaces temperature"),
            "{refused}"
        );
        assert!(body(json!({"temperature": 0.7}), &["temperature"])
            .check(&Provider::OpenAi)
            .is_ok());
        // `stop_sequences` is Anthropic's, not sent to an OpenAI-style server by assay.
        assert!(body(json!({"stop_sequences": ["x"]}), &[])
            .check(&Provider::OpenAi)
            .is_ok());
        assert!(body(json!({"stop_sequences": ["x"]}), &[])
            .check(&Provider::Anthropic)
            .is_err());
        let streamed = body(json!({"stream": true}), &["stream"]);
        let refused = streamed.check(&Provider::OpenAi).unwrap_err().to_string();
        assert!(refused.contains("must set itself"), "{refused}");
        let unnamed = body(json!({"seed": 1}), &["top_p"]);
        let refused = unnamed.check(&Provider::OpenAi).unwrap_err().to_string();
        assert!(refused.contains("has no `top_p` field"), "{refused}");
    }

    /// Every field a body builder can send is one an extra body must name to replace, or may
    /// never set: none of assay's is replaced unannounced.
    #[test]
    fn every_field_assay_sends_is_guarded() {
        use crate::openai::{chat_body, completion_body, TokenLimit};
        use crate::request::{Conversation, Request, Tool, Turn};
        use assay_records::{Effort, ReasoningSettings};

        let chat = Conversation {
            system: Some("s".into()),
            turns: vec![Turn::User("u".into())],
            tools: vec![Tool {
                name: "python".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
        };
        let request = Request {
            prompt: crate::request::Prompt::Chat(chat.clone()),
            n: 2,
            temperature: 0.5,
            top_p: Some(0.96),
            max_tokens: 10,
            stop: vec!["x".into()],
            frequency_penalty: Some(1.0),
            presence_penalty: Some(1.0),
        };
        let reasoning = ReasoningSettings {
            effort: Some(Effort::High),
            ..ReasoningSettings::default()
        };
        let guarded = |provider: &Provider, body: Value| {
            for key in body.as_object().unwrap().keys() {
                assert!(
                    NEVER.contains(&key.as_str()) || assays_own(provider).contains(&key.as_str()),
                    "{key} is sent unguarded"
                );
            }
        };
        for limit in [TokenLimit::MaxTokens, TokenLimit::MaxCompletionTokens] {
            guarded(
                &Provider::OpenAi,
                chat_body("m", &chat, &request, limit, &reasoning),
            );
        }
        guarded(&Provider::OpenAi, completion_body("m", "p", &request));
        for budget in [None, Some(2048)] {
            guarded(
                &Provider::Anthropic,
                crate::anthropic::message_body("m", &chat, &request, budget),
            );
        }
    }

    #[test]
    fn fields_are_added_and_named_ones_replace() {
        let extra = body(
            json!({"chat_template_kwargs": {"enable_thinking": false}, "temperature": 0.3}),
            &["temperature"],
        );
        let mut sent = json!({"model": "m", "temperature": 0.0});
        extra.merge_into(&mut sent);
        assert_eq!(
            sent,
            json!({"model": "m", "temperature": 0.3,
                   "chat_template_kwargs": {"enable_thinking": false}})
        );
        assert!(ExtraBody::default().fields().is_none());
    }
}
