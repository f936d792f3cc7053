//! What each agent protocol must say, and what the gateway puts into every request whatever
//! the protocol.

use assay_models::{Conversation, Prompt, Request};
use serde_json::Value;

use crate::answer::Answer;
use crate::exchange::Protocol;
use crate::failure::{Failure, Wording};
use crate::sse::Event;

/// One agent protocol. A value of it is one request being answered: what its reply needs to
/// know of the request (the streaming options, the ids), and the state of its stream.
pub(crate) trait Dialect: Sized + Send + 'static {
    /// Which protocol it is.
    const PROTOCOL: Protocol;
    /// Whose words its errors are in.
    const WORDING: Wording;

    /// Reads the agent's request: the request to send upstream, or what is wrong with it.
    fn parse(body: &Value, terms: &Terms<'_>) -> Result<(Self, Request), String>;

    /// Whether the agent asked for a stream.
    fn stream(&self) -> bool;

    /// The reply body, in its non-streamed form.
    fn reply(&self, answer: &Answer) -> Value;

    /// What a stream says before the model is asked.
    fn opening(&mut self) -> Vec<Event>;

    /// What a stream says every few seconds while the model is being asked.
    fn keepalive(&mut self) -> Event;

    /// The rest of a stream: `reply` (from [`Dialect::reply`]) as events.
    fn events(&mut self, reply: &Value) -> Vec<Event>;

    /// The rest of a stream when the model gave no answer.
    fn failed(&mut self, failure: &Failure) -> Vec<Event>;
}

/// What the gateway puts into every request: the answer is always the served model's, sampled
/// within the gateway's bounds.
pub(crate) struct Terms<'a> {
    /// The exchange's index, for ids.
    pub(crate) index: u32,
    /// The model name replies carry.
    pub(crate) model: &'a str,
    /// Whether the model is Anthropic's: only then are thinking blocks of earlier turns sent
    /// back (they are signed by Anthropic, and meaningless to anyone else).
    pub(crate) anthropic: bool,
    /// The temperature when the agent sends none.
    pub(crate) temperature: f64,
    /// The most tokens a reply may have.
    pub(crate) max_tokens: u32,
}

/// The sampling an agent asked for; `None` = not said.
#[derive(Debug, Default)]
pub(crate) struct Sampling {
    pub(crate) temperature: Option<f64>,
    pub(crate) top_p: Option<f64>,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) stop: Vec<String>,
}

impl Terms<'_> {
    /// The request for `conversation`, sampled as the agent asked within the gateway's bounds.
    pub(crate) fn request(&self, conversation: Conversation, asked: Sampling) -> Request {
        Request {
            prompt: Prompt::Chat(conversation),
            n: 1,
            temperature: asked.temperature.unwrap_or(self.temperature),
            top_p: asked.top_p,
            max_tokens: asked
                .max_tokens
                .map_or(self.max_tokens, |m| m.min(self.max_tokens)),
            stop: asked.stop,
            frequency_penalty: None,
            presence_penalty: None,
        }
    }
}

/// The current time in seconds since the Unix epoch, as the protocols' `created` fields have it.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
pub(crate) mod testing {
    //! Terms and answers for the protocols' unit tests.

    use super::*;

    pub(crate) fn terms() -> Terms<'static> {
        Terms {
            index: 3,
            model: "served",
            anthropic: false,
            temperature: 0.5,
            max_tokens: 1000,
        }
    }

    /// The conversation of a parsed request.
    pub(crate) fn chat(request: &Request) -> &Conversation {
        match &request.prompt {
            Prompt::Chat(chat) => chat,
            Prompt::Completion { .. } => panic!("a gateway request is a chat"),
        }
    }

    /// The data of each event of a stream, with its name if it has one.
    pub(crate) fn data(events: &[Event]) -> Vec<(Option<String>, Value)> {
        events
            .iter()
            .filter_map(|event| {
                let text = event.text();
                let name = text
                    .lines()
                    .find_map(|l| l.strip_prefix("event: "))
                    .map(String::from);
                let data = text.lines().find_map(|l| l.strip_prefix("data: "))?;
                Some((name, serde_json::from_str(data).unwrap_or(Value::Null)))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::terms;
    use super::*;

    #[test]
    fn the_agents_sampling_is_kept_within_the_cap() {
        let request = terms().request(
            Conversation::default(),
            Sampling {
                temperature: Some(0.0),
                top_p: Some(0.9),
                max_tokens: Some(5000),
                stop: vec!["x".into()],
            },
        );
        assert_eq!(
            (request.temperature, request.top_p, request.max_tokens),
            (0.0, Some(0.9), 1000)
        );
        assert_eq!(request.stop, ["x"]);
        let request = terms().request(Conversation::default(), Sampling::default());
        assert_eq!(
            (request.temperature, request.max_tokens, request.n),
            (0.5, 1000, 1)
        );
        let small = Sampling {
            max_tokens: Some(10),
            ..Sampling::default()
        };
        assert_eq!(
            terms().request(Conversation::default(), small).max_tokens,
            10
        );
    }
}
