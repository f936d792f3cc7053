//! Thinking written into an answer's text, set apart from the answer.
//!
//! Open reasoning models served without a reasoning parser (Qwen3, QwQ, DeepSeek-R1 and its
//! distills on vLLM, SGLang, llama.cpp, Ollama) write their thinking before the answer between
//! tags, often with draft code in it; some chat templates open the tag in the prompt, so only
//! the closing tag appears; an answer cut by the token limit can end inside it. Judged as it
//! is, the draft's code would be judged instead of the answer, and a cut answer would be
//! judged on its draft (evalscope#867 lost half a benchmark to this).

use assay_records::{ThinkTag, Thinking, ThinkingSource};

/// The tags open models think between, in the order they are tried: DeepSeek-R1, Qwen3 and
/// QwQ (`<think>`), models prompted to think in XML (`<thinking>`), OpenThoughts and Sky-T1
/// (`<|begin_of_thought|>`), Kimi (`◁think▷`), Seed-OSS (`<seed:think>`), Magistral
/// (`[THINK]`).
pub const THINK_TAGS: [(&str, &str); 6] = [
    ("<think>", "</think>"),
    ("<thinking>", "</thinking>"),
    ("<|begin_of_thought|>", "<|end_of_thought|>"),
    ("◁think▷", "◁/think▷"),
    ("<seed:think>", "</seed:think>"),
    ("[THINK]", "[/THINK]"),
];

/// [`THINK_TAGS`] as settings.
pub fn default_think_tags() -> Vec<ThinkTag> {
    THINK_TAGS
        .iter()
        .map(|(open, close)| ThinkTag {
            open: (*open).into(),
            close: (*close).into(),
        })
        .collect()
}

/// Reads `--think-tags`: `OPEN,CLOSE` pairs separated by `;`, `none` for no tags. An empty
/// OPEN (`,</think>`) says the chat template opens the thinking in the prompt.
pub fn parse_think_tags(text: &str) -> Result<Vec<ThinkTag>, String> {
    if text.trim() == "none" {
        return Ok(Vec::new());
    }
    text.split(';')
        .map(|pair| {
            let Some((open, close)) = pair.split_once(',') else {
                return Err(format!(
                    "thinking tags `{pair}`: write OPEN,CLOSE (e.g. `<think>,</think>`; \
                     `,</think>` when the chat template opens the thinking), pairs separated \
                     by `;`, or `none`"
                ));
            };
            let (open, close) = (open.trim(), close.trim());
            if close.is_empty() {
                return Err(format!("thinking tags `{pair}`: the closing tag is empty"));
            }
            if open == close {
                return Err(format!(
                    "thinking tags `{pair}`: the opening and closing tags are the same"
                ));
            }
            Ok(ThinkTag {
                open: open.into(),
                close: close.into(),
            })
        })
        .collect()
}

/// An answer's text with its thinking set apart.
#[derive(Debug, Clone, PartialEq)]
pub struct Parted {
    /// What is judged: the text outside the thinking (empty when it was cut inside it).
    pub answer: String,
    /// The thinking, if the text held any.
    pub thinking: Option<Thinking>,
}

/// Sets apart the thinking in `text` between the first pair of `tags` it uses. Text before
/// a closing tag that has no opening tag before it is thinking the chat template opened; an
/// opening tag never closed makes the rest thinking, cut off. Several thinking spans (models
/// that think again between parts of the answer) are joined; the answer is what lies
/// outside them.
pub fn part(text: &str, tags: &[ThinkTag]) -> Parted {
    let used = tags.iter().find(|tag| {
        (!tag.open.is_empty() && text.contains(&tag.open)) || text.contains(&tag.close)
    });
    let Some(tag) = used else {
        return match tags.iter().find(|tag| tag.open.is_empty()) {
            // The template opened the thinking and the answer never closed it.
            Some(_) if !text.trim().is_empty() => Parted {
                answer: String::new(),
                thinking: Some(thought(vec![text], true)),
            },
            _ => Parted {
                answer: text.to_string(),
                thinking: None,
            },
        };
    };
    let (open, close) = (tag.open.as_str(), tag.close.as_str());
    let mut answer = String::new();
    let mut spans = Vec::new();
    let mut rest = text;
    let first_open = (!open.is_empty()).then(|| text.find(open)).flatten();
    if let Some(end) = text.find(close) {
        if first_open.is_none_or(|start| end < start) {
            spans.push(&text[..end]);
            rest = &text[end + close.len()..];
        }
    }
    let mut cut = false;
    while !open.is_empty() {
        let Some(start) = rest.find(open) else { break };
        answer.push_str(&rest[..start]);
        let inside = &rest[start + open.len()..];
        match inside.find(close) {
            Some(end) => {
                spans.push(&inside[..end]);
                rest = &inside[end + close.len()..];
            }
            None => {
                spans.push(inside);
                rest = "";
                cut = true;
                break;
            }
        }
    }
    answer.push_str(rest);
    Parted {
        answer: if cut && answer.trim().is_empty() {
            String::new()
        } else {
            answer.trim_start().to_string()
        },
        thinking: Some(thought(spans, cut && answer.trim().is_empty())),
    }
}

fn thought(spans: Vec<&str>, cut: bool) -> Thinking {
    let text = spans
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    Thinking {
        source: ThinkingSource::Text,
        text,
        cut,
        redacted: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults(text: &str) -> Parted {
        part(text, &default_think_tags())
    }

    #[test]
    fn thinking_before_the_answer_is_set_apart_with_its_draft() {
        let text = "<think>\nA draft:\n```python\ndef f(): return 0\n```\nNo.\n</think>\n\n\
                    ```python\ndef f():\n    return 1\n```";
        let parted = defaults(text);
        assert_eq!(parted.answer, "```python\ndef f():\n    return 1\n```");
        let thinking = parted.thinking.unwrap();
        assert!(thinking.text.starts_with("A draft:") && thinking.text.ends_with("No."));
        assert!(!thinking.cut);
        assert_eq!(thinking.source, ThinkingSource::Text);
    }

    #[test]
    fn a_template_opened_thinking_ends_at_its_closing_tag() {
        let parted = defaults("Let me see.\n```python\nx = 0\n```\n</think>\nThe answer: 1");
        assert_eq!(parted.answer, "The answer: 1");
        assert!(parted.thinking.unwrap().text.starts_with("Let me see."));
    }

    #[test]
    fn an_unclosed_thinking_was_cut_and_leaves_no_answer() {
        let parted = defaults("<think>\n```python\ndef f(): return 0\n```\nHmm, maybe");
        assert_eq!(parted.answer, "");
        let thinking = parted.thinking.unwrap();
        assert!(thinking.cut);
        assert!(thinking.text.ends_with("Hmm, maybe"));
    }

    #[test]
    fn text_without_tags_is_all_answer_unless_the_template_opens_the_thinking() {
        let parted = defaults("```python\nx = 1\n```");
        assert_eq!(parted.answer, "```python\nx = 1\n```");
        assert_eq!(parted.thinking, None);
        let opened = parse_think_tags(",</think>").unwrap();
        let parted = part("Still thinking about ```x = 0```", &opened);
        assert_eq!(parted.answer, "");
        assert!(parted.thinking.unwrap().cut);
        let parted = part("thought</think>answer", &opened);
        assert_eq!(parted.answer, "answer");
        assert_eq!(parted.thinking.unwrap().text, "thought");
        assert_eq!(part("", &opened).thinking, None);
    }

    #[test]
    fn other_tag_forms_and_several_spans() {
        let parted = defaults("◁think▷hmm◁/think▷done");
        assert_eq!(parted.answer, "done");
        let parted = defaults("<think>a</think>part one <think>b</think>part two");
        assert_eq!(parted.answer, "part one part two");
        assert_eq!(parted.thinking.unwrap().text, "a\n\nb");
        // Thinking again after the answer began, cut there: the answer so far stands.
        let parted = defaults("<think>a</think>answer<think>more");
        assert_eq!(parted.answer, "answer");
        assert!(!parted.thinking.unwrap().cut);
        assert_eq!(part("<think>x</think>y", &[]).answer, "<think>x</think>y");
    }

    #[test]
    fn tags_as_given_are_checked() {
        assert_eq!(parse_think_tags("none").unwrap(), Vec::new());
        let tags = parse_think_tags("<t>,</t>; <r>,</r>").unwrap();
        assert_eq!(tags.len(), 2);
        assert_eq!(tags[1].open, "<r>");
        for (bad, says) in [
            ("<think>", "write OPEN,CLOSE"),
            ("<think>,", "closing tag is empty"),
            ("<x>,<x>", "the same"),
        ] {
            let err = parse_think_tags(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
