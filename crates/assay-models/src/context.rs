//! Requests refused because they do not fit the model's context window.
//!
//! A model's window is part of the model, not a fault of the harness: a conversation that
//! outgrew it, or a prompt that with the token limit asked for is too long, gets the same
//! answer however often it is sent. So such a refusal is neither retried nor a transient
//! failure: it is a [`ContextFull`], and the caller decides what the model's answer was (the
//! PyBench episode ends there; a BigCodeBench prompt is asked again with the limit that fits,
//! or has no answer).
//!
//! Servers say it in their own words (each looked up in the server's source where it has one,
//! and quoted in `docs/generation.md`): OpenAI's `context_length_exceeded`, vLLM's "maximum
//! context length is N tokens", llama.cpp's `exceed_context_size_error`, llama-cpp-python's
//! OpenAI-style message (and its numpy HTTP 500 when a prompt or an answer overflows it),
//! Anthropic's "prompt is too long", TGI's 422 "must be <= N", SGLang's, Gemini's, Ollama's and
//! LM Studio's. Where a server names the window and counts the prompt exactly, the largest
//! token limit that fits beside the prompt is known ([`ContextFull::room`]); vLLM's newer
//! messages give the prompt only as a lower bound ("at least N input tokens"), which is not
//! taken for a count.

/// A request the model's context window cannot hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFull {
    /// What the server said, with its status (`HTTP 400: This model's maximum context length
    /// is 2048 tokens. ...`).
    pub message: String,
    /// The window in tokens, where the server names it.
    pub window: Option<u64>,
    /// The prompt's tokens, where the server counted them exactly.
    pub prompt_tokens: Option<u64>,
    /// Whether the server says the prompt alone does not fit, whatever the token limit.
    pub prompt_alone: bool,
}

impl ContextFull {
    /// The largest token limit that fits beside the prompt, where the server named the window
    /// and counted the prompt, and the prompt leaves room.
    pub fn room(&self) -> Option<u32> {
        if self.prompt_alone {
            return None;
        }
        let room = self.window?.checked_sub(self.prompt_tokens?)?;
        u32::try_from(room).ok().filter(|room| *room > 0)
    }

    /// What did not fit, in words, for reasons: "the prompt (1310 tokens) does not fit the
    /// model's context window (1200 tokens)".
    pub fn describe(&self) -> String {
        let tokens = |n: u64| format!("{n} tokens");
        let window = self
            .window
            .map(|w| format!(" ({})", tokens(w)))
            .unwrap_or_default();
        let prompt = self
            .prompt_tokens
            .map(|p| format!(" ({})", tokens(p)))
            .unwrap_or_default();
        if self.room().is_some() {
            format!(
                "the prompt{prompt} and the token limit asked for do not fit the model's \
                 context window{window}"
            )
        } else if self.prompt_alone {
            format!("the prompt{prompt} does not fit the model's context window{window}")
        } else {
            format!("the request does not fit the model's context window{window}")
        }
    }
}

/// What a server's error says, as far as recognizing a full window needs.
pub(crate) struct Refusal<'a> {
    /// The HTTP status.
    pub(crate) status: u16,
    /// The error's message, or the body's start when it is not one of the known shapes.
    pub(crate) text: &'a str,
    /// The error's `code`, `type` or detail code, whichever the server sent.
    pub(crate) tags: &'a [Option<&'a str>],
    /// llama.cpp's `n_ctx` field.
    pub(crate) n_ctx: Option<u64>,
    /// llama.cpp's `n_prompt_tokens` field.
    pub(crate) n_prompt_tokens: Option<u64>,
}

/// The phrases that say a request does not fit the window, lower case. Each names the servers
/// that use it.
const PHRASES: &[&str] = &[
    // OpenAI, vLLM, llama-cpp-python, SGLang, OpenRouter, Groq, Mistral.
    "maximum context length",
    // OpenAI's newer models: "Your input exceeds the context window of this model";
    // llama-cpp-python's own "Requested tokens (N) exceed context window of M".
    "exceeds the context window",
    "exceed context window",
    // llama.cpp's server, old and new: "the request exceeds the available context size".
    "exceeds the available context size",
    // vLLM's renderer: "the model's context length is only N tokens"; SGLang: "is longer than
    // the model's context length"; Ollama: "the prompt is longer than the context length".
    "context length is only",
    "longer than the model's context length",
    "longer than the context length",
    // vLLM's engine: "is longer than the maximum model length of N".
    "longer than the maximum model length",
    // Older vLLM: "is too long to fit into the model (context length N)".
    "too long to fit into the model",
    // Anthropic: "prompt is too long: N tokens > M maximum", "input length and `max_tokens`
    // exceed context limit: P + M > W".
    "prompt is too long",
    "exceed context limit",
    // TGI: "`inputs` tokens + `max_new_tokens` must be <= N", "`inputs` must have less than N
    // tokens".
    "`inputs` tokens + `max_new_tokens` must be <=",
    "`inputs` must have less than",
    // Gemini: "The input token count (N) exceeds the maximum number of tokens allowed (M)".
    "exceeds the maximum number of tokens allowed",
    // LM Studio: "the model is loaded with context length of only N tokens", "tokens to keep
    // from the initial prompt is greater than the context length".
    "greater than the context length",
];

/// Phrases that say the prompt alone is too long, whatever the token limit, for messages
/// without both numbers.
const PROMPT_ALONE: &[&str] = &[
    // vLLM 0.5 without a token limit: "you requested N tokens in the messages, Please reduce".
    "tokens in the messages",
    // llama-cpp-python without a token limit: "(N in the messages, None in the completion)".
    "none in the completion",
    // Ollama, SGLang, vLLM's engine.
    "longer than the context length",
    "longer than the model's context length",
    "longer than the maximum model length",
    // llama.cpp refuses only a prompt over its window (a long answer is cut, not refused).
    "exceeds the available context size",
    "prompt is too long",
    "`inputs` must have less than",
];

/// Where a number stands in a message: right after a phrase, or right before one.
enum Anchor {
    After(&'static str),
    Before(&'static str),
}

/// Where each server names the window, in the order looked for.
const WINDOW: &[Anchor] = &[
    Anchor::After("maximum context length is "),
    Anchor::After("maximum context length of "),
    Anchor::After("context length is only "),
    Anchor::After("the model's context length ("),
    Anchor::After("the maximum model length of "),
    Anchor::After("available context size ("),
    Anchor::After("exceed context window of "),
    Anchor::After("must be <= "),
    Anchor::After("must have less than "),
    Anchor::After("maximum number of tokens allowed ("),
    // Anthropic: "prompt is too long: N tokens > M maximum", "... context limit: P + M > W".
    Anchor::Before(" maximum"),
    Anchor::After(" > "),
];

/// Where each server counts the prompt's tokens, in the order looked for.
const PROMPT: &[Anchor] = &[
    Anchor::Before(" in the messages"),
    Anchor::Before(" in your prompt"),
    Anchor::After("your messages resulted in "),
    Anchor::After("your request has "),
    Anchor::After("requested tokens ("),
    Anchor::After("the decoder prompt (length "),
    Anchor::After("the input ("),
    Anchor::After("request ("),
    Anchor::After("prompt is too long: "),
    Anchor::After("exceed context limit: "),
    Anchor::After("given: "),
    Anchor::Before(" tokens from the input messages"),
    Anchor::After("input token count ("),
];

/// The first number `anchors` find in `text`.
fn first_number(text: &str, anchors: &[Anchor]) -> Option<u64> {
    anchors.iter().find_map(|anchor| match anchor {
        Anchor::After(prefix) => number_after(text, prefix),
        Anchor::Before(suffix) => number_before(text, suffix),
    })
}

/// The error codes and types that say it whatever the message.
const TAGS: &[&str] = &["context_length_exceeded", "exceed_context_size_error"];

/// Whether `refusal` says the request does not fit the window, and what it says of the numbers.
pub(crate) fn recognize(refusal: &Refusal<'_>, message: &str) -> Option<ContextFull> {
    let text = refusal.text.to_lowercase();
    let tagged = refusal.tags.iter().flatten().any(|tag| TAGS.contains(tag));
    let worded = PHRASES.iter().any(|p| text.contains(p));
    let refused = matches!(refusal.status, 400 | 413 | 422) || refusal.status == 500 && worded;
    let overflow = (refusal.status == 500)
        .then(|| array_overflow(&text))
        .flatten();
    if !(overflow.is_some() || refused && (tagged || worded)) {
        return None;
    }
    let mut full = ContextFull {
        message: message.to_string(),
        window: refusal.n_ctx,
        prompt_tokens: refusal.n_prompt_tokens,
        prompt_alone: false,
    };
    if let Some(rows_left) = overflow {
        // Rows left while the prompt was read: the prompt alone did not fit; none left: the
        // answer filled the window.
        full.prompt_alone = rows_left > 0;
        return Some(full);
    }
    full.window = full.window.or_else(|| first_number(&text, WINDOW));
    // A lower bound is no count: vLLM's "at least N", and its renderer's count, which it cuts
    // at the most the window would take.
    let bounded = text.contains("at least") || text.contains("you passed");
    if !bounded {
        full.prompt_tokens = full.prompt_tokens.or_else(|| first_number(&text, PROMPT));
    }
    // With both numbers the prompt alone is too long when it fills the window; without them,
    // the wording says so or not.
    full.prompt_alone = match (full.prompt_tokens, full.window) {
        (Some(prompt), Some(window)) => prompt >= window,
        _ => PROMPT_ALONE.iter().any(|p| text.contains(p)),
    };
    Some(full)
}

/// llama-cpp-python (0.3.36 here, at a window that is not a multiple of 256, which llama.cpp
/// rounds up while the Python side keeps arrays of the size asked for) does not refuse a
/// request over its window: it fails it with numpy's error, as an HTTP 500, when a batch of
/// tokens has fewer rows left than it needs, "could not broadcast input array from shape
/// (195,) into shape (64,)" while it reads the prompt, "(49152,) into shape (0,)" when the
/// answer fills the window (the logits of one more token). The rows that were left, if this
/// is that error.
fn array_overflow(text: &str) -> Option<u64> {
    let wanted = number_after(text, "could not broadcast input array from shape (")?;
    let left = number_after(text, ") into shape (")?;
    let one_dimensional = text.contains(&format!("shape ({wanted},) into shape ({left},)"));
    (one_dimensional && left < wanted).then_some(left)
}

/// The number (digits, commas allowed) right after the first `prefix` in `text`.
fn number_after(text: &str, prefix: &str) -> Option<u64> {
    let start = text.find(prefix)? + prefix.len();
    digits(text[start..].chars())
}

/// The number (digits, commas allowed) right before the first `suffix` in `text`.
fn number_before(text: &str, suffix: &str) -> Option<u64> {
    let end = text.find(suffix)?;
    let before: String = text[..end]
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .collect();
    digits(before.chars().rev())
}

/// The leading number of `chars`, commas between digits ignored.
fn digits(chars: impl Iterator<Item = char>) -> Option<u64> {
    let number: String = chars
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    number.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `recognize` makes of a message with `status` and `tags`.
    fn read(status: u16, tags: &[&str], text: &str) -> Option<ContextFull> {
        let tags: Vec<Option<&str>> = tags.iter().copied().map(Some).collect();
        recognize(
            &Refusal {
                status,
                text,
                tags: &tags,
                n_ctx: None,
                n_prompt_tokens: None,
            },
            text,
        )
    }

    /// (window, prompt, room) of a recognized refusal.
    fn numbers(full: &ContextFull) -> (Option<u64>, Option<u64>, Option<u32>) {
        (full.window, full.prompt_tokens, full.room())
    }

    #[test]
    fn openai_wordings() {
        let with_limit = read(400, &["invalid_request_error", "context_length_exceeded"], "This model's maximum context length is 8192 tokens. However, you requested 8256 tokens (64 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.").unwrap();
        assert_eq!(numbers(&with_limit), (Some(8192), Some(64), Some(8128)));
        let alone = read(400, &["context_length_exceeded"], "This model's maximum context length is 4097 tokens. However, your messages resulted in 4301 tokens. Please reduce the length of the messages.").unwrap();
        assert_eq!(numbers(&alone), (Some(4097), Some(4301), None));
        assert!(alone.prompt_alone);
        let legacy = read(400, &[], "This model's maximum context length is 4097 tokens, however you requested 4116 tokens (1044 in your prompt; 3072 for the completion). Please reduce your prompt; or completion length.").unwrap();
        assert_eq!(numbers(&legacy), (Some(4097), Some(1044), Some(3053)));
        let newer = read(
            400,
            &["context_length_exceeded"],
            "Your input exceeds the context window of this model. Please adjust your input and try again.",
        )
        .unwrap();
        assert_eq!(numbers(&newer), (None, None, None));
        // The output cap, not the window: an ordinary bad request.
        assert!(read(400, &["invalid_value"], "max_tokens is too large: 20480. This model supports at most 16384 completion tokens, whereas you provided 20480.").is_none());
    }

    #[test]
    fn vllm_wordings() {
        let old = read(400, &["BadRequestError"], "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (100 in the messages, 2000 in the completion). Please reduce the length of the messages or completion.").unwrap();
        assert_eq!(numbers(&old), (Some(2048), Some(100), Some(1948)));
        let old_alone = read(400, &[], "This model's maximum context length is 2048 tokens. However, you requested 3000 tokens in the messages, Please reduce the length of the messages.").unwrap();
        assert_eq!(numbers(&old_alone).2, None);
        assert!(old_alone.prompt_alone);
        let limit = read(400, &["BadRequestError"], "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is 4096 tokens and your request has 2778 input tokens (8000 > 4096 - 2778). (parameter=max_tokens, value=8000)").unwrap();
        assert_eq!(numbers(&limit), (Some(4096), Some(2778), Some(1318)));
        let input = read(400, &[], "This model's maximum context length is 1536 tokens. However, your request has 4176 input tokens. Please reduce the length of the input messages. (parameter=input_tokens, value=4176)").unwrap();
        assert_eq!(numbers(&input), (Some(1536), Some(4176), None));
        // A lower bound is no count: the window alone is known.
        let at_least = read(400, &[], "This model's maximum context length is 4096 tokens. However, you requested 1280 output tokens and your prompt contains at least 2817 input tokens, for a total of at least 4097 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=2817)").unwrap();
        assert_eq!(numbers(&at_least), (Some(4096), None, None));
        let renderer = read(400, &[], "You passed 2817 input tokens and requested 1280 output tokens. However, the model's context length is only 4096 tokens, resulting in a maximum input length of 2816 tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=2817)").unwrap();
        assert_eq!(numbers(&renderer), (Some(4096), None, None));
        let engine = read(400, &[], "The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure that `max_model_len` is no smaller than the number of text tokens.").unwrap();
        assert_eq!(numbers(&engine), (Some(4096), Some(5000), None));
    }

    #[test]
    fn llama_cpp_wordings() {
        let fields = recognize(
            &Refusal {
                status: 400,
                text: "request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it",
                tags: &[Some("exceed_context_size_error")],
                n_ctx: Some(4096),
                n_prompt_tokens: Some(4476),
            },
            "HTTP 400: ...",
        )
        .unwrap();
        assert_eq!(numbers(&fields), (Some(4096), Some(4476), None));
        assert_eq!(fields.message, "HTTP 400: ...");
        let older = read(
            400,
            &["invalid_request_error"],
            "the request exceeds the available context size, try increasing it",
        )
        .unwrap();
        assert!(older.prompt_alone);
        // llama-cpp-python refuses a prompt over its window in OpenAI's words, with "None in
        // the completion" when no limit was sent ...
        let python = read(400, &["context_length_exceeded"], "This model's maximum context length is 1200 tokens. However, you requested 1452 tokens (1452 in the messages, None in the completion). Please reduce the length of the messages or completion.").unwrap();
        assert_eq!(numbers(&python), (Some(1200), Some(1452), None));
        assert!(python.prompt_alone);
        // ... and, at a window llama.cpp rounds up, fails the request with numpy's words, as a
        // 500: a prompt over the window, or an answer that fills it.
        let prompt = read(
            500,
            &["internal_server_error"],
            "could not broadcast input array from shape (195,) into shape (64,)",
        )
        .unwrap();
        assert_eq!(numbers(&prompt), (None, None, None));
        assert!(prompt.prompt_alone);
        let filled = read(
            500,
            &["internal_server_error"],
            "could not broadcast input array from shape (49152,) into shape (0,)",
        )
        .unwrap();
        assert!(!filled.prompt_alone && filled.room().is_none());
        for other in [
            "could not broadcast input array from shape (3,) into shape (4,)",
            "could not broadcast input array from shape (3,4) into shape (3,)",
        ] {
            assert!(read(500, &[], other).is_none(), "{other}");
        }
    }

    #[test]
    fn anthropic_tgi_sglang_and_others() {
        let prompt = read(
            400,
            &["invalid_request_error"],
            "prompt is too long: 208310 tokens > 200000 maximum",
        )
        .unwrap();
        assert_eq!(numbers(&prompt), (Some(200000), Some(208310), None));
        let limit = read(400, &["invalid_request_error"], "input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000, decrease input length or `max_tokens` and try again").unwrap();
        assert_eq!(numbers(&limit), (Some(200000), Some(178959), Some(21041)));
        let tgi = read(422, &["validation"], "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 1280 `max_new_tokens`").unwrap();
        assert_eq!(numbers(&tgi), (Some(4096), Some(4000), Some(96)));
        let tgi_input = read(
            422,
            &["validation"],
            "Input validation error: `inputs` must have less than 4095 tokens. Given: 5000",
        )
        .unwrap();
        assert_eq!(numbers(&tgi_input), (Some(4095), Some(5000), None));
        let sglang = read(400, &[], "Requested token count exceeds the model's maximum context length of 4096 tokens. You requested a total of 4500 tokens: 3500 tokens from the input messages and 1000 tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.").unwrap();
        assert_eq!(numbers(&sglang), (Some(4096), Some(3500), Some(596)));
        let sglang_input = read(
            400,
            &[],
            "The input (5000 tokens) is longer than the model's context length (4096 tokens).",
        )
        .unwrap();
        assert_eq!(numbers(&sglang_input), (Some(4096), Some(5000), None));
        let gemini = read(
            400,
            &["INVALID_ARGUMENT"],
            "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
        )
        .unwrap();
        assert_eq!(numbers(&gemini), (Some(1048576), Some(1200293), None));
        let ollama = read(400, &["invalid_request_error"], "the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the context length in settings, or use a model with a longer context length").unwrap();
        assert!(ollama.prompt_alone && ollama.room().is_none());
    }

    #[test]
    fn other_refusals_are_not_a_full_window() {
        for (status, text) in [
            (400, "Invalid 'messages': empty array"),
            (400, "temperature must be between 0 and 2"),
            (422, "unprocessable entity"),
            (500, "internal error: CUDA out of memory"),
            (
                503,
                "This model's maximum context length is being raised; try later",
            ),
            (413, "Request exceeds the maximum size"),
        ] {
            assert!(read(status, &[], text).is_none(), "{status} {text}");
        }
    }

    #[test]
    fn descriptions_say_what_did_not_fit() {
        let full = ContextFull {
            message: String::new(),
            window: Some(1200),
            prompt_tokens: Some(1310),
            prompt_alone: true,
        };
        assert_eq!(
            full.describe(),
            "the prompt (1310 tokens) does not fit the model's context window (1200 tokens)"
        );
        let roomy = ContextFull {
            prompt_tokens: Some(900),
            prompt_alone: false,
            ..full.clone()
        };
        assert_eq!(roomy.room(), Some(300));
        assert!(roomy
            .describe()
            .starts_with("the prompt (900 tokens) and the token limit"));
        let unknown = ContextFull {
            window: None,
            prompt_tokens: None,
            prompt_alone: false,
            ..full
        };
        assert_eq!(
            unknown.describe(),
            "the request does not fit the model's context window"
        );
    }
}
