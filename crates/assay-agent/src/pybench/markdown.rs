//! Upstream's protocol (`--protocol markdown`): the model writes its code in a ```` ```python ````
//! block; the first block of each reply runs; a reply without one ends the episode.

use assay_records::Message;
use assay_tasks::pybench::Task;

use super::protocol::{Protocol, PYTHON_TOOL};

/// The system prompt of upstream's `config/gpt.yaml`, byte for byte as every recorded
/// trajectory's first message has it (PyBench commit fa90fae, `trajectory.jsonl`; typos
/// included, since models were measured with them).
pub const SYSTEM_PROMPT: &str = include_str!("../../data/pybench-system-prompt.txt");

/// What opens a code block in a reply.
const CODE_START: &str = "```python";
/// What closes it.
const CODE_END: &str = "```";
/// The prefix of every interpreter message.
pub const OBSERVATION_PREFIX: &str = "[INFO]This is a Code Interpreter Message:\n";

/// The conversation an episode starts from: the system prompt, the `[INFO]` message naming
/// the uploaded files (comma-joined, as upstream joins them), and the query. The `tools`
/// protocol's system prompt is upstream's with a last paragraph on the tool (assay's).
pub fn opening(task: &Task, protocol: Protocol) -> Vec<Message> {
    let system = match protocol {
        Protocol::Markdown => SYSTEM_PROMPT.to_string(),
        Protocol::Tools => format!(
            "{SYSTEM_PROMPT}\nRun each step's code by calling the `{PYTHON_TOOL}` tool with it \
             (its result is the cell's output) instead of writing a ```python block. A reply \
             without a tool call is your final response.\n"
        ),
    };
    vec![
        Message::new("system", system),
        Message::new(
            "user",
            format!(
                "[INFO]The data is uploaded to {}",
                task.file_paths.join(",")
            ),
        ),
        Message::new("user", task.user.clone()),
    ]
}

/// A reply read as upstream reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// The reply has code: it is kept whole in the conversation and `code` runs.
    Code {
        /// The block's content, trimmed.
        code: String,
    },
    /// No code (no block, an unclosed block, or an empty one): the episode ends, and the
    /// conversation keeps `kept` (upstream keeps the text before an empty block, else the
    /// whole reply).
    Answer {
        /// What the conversation keeps of the reply.
        kept: String,
    },
}

/// Reads a reply: the first ```` ```python ```` and the next ```` ``` ```` after it.
pub fn parse(reply: &str) -> Parsed {
    let Some(open) = reply.find(CODE_START) else {
        return Parsed::Answer {
            kept: reply.to_string(),
        };
    };
    let body = open + CODE_START.len();
    let Some(close) = reply[body..].find(CODE_END) else {
        return Parsed::Answer {
            kept: reply.to_string(),
        };
    };
    let code = reply[body..body + close].trim();
    if code.is_empty() {
        // Upstream keeps its "reasoning": the text up to the block's opening, included.
        return Parsed::Answer {
            kept: reply[..body].trim().to_string(),
        };
    }
    Parsed::Code {
        code: code.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_python_block_runs() {
        let reply = "Analyse: x\nAction:\n```python\nprint(1)\n```\nthen\n```python\nprint(2)\n```";
        assert_eq!(
            parse(reply),
            Parsed::Code {
                code: "print(1)".into()
            }
        );
    }

    #[test]
    fn replies_without_runnable_code_are_answers() {
        for reply in [
            "Finished: 42",
            "```\nprint(1)\n```",
            "```python\nprint(1)",
            "Finished: see ```py\nx\n```",
        ] {
            assert_eq!(
                parse(reply),
                Parsed::Answer { kept: reply.into() },
                "{reply}"
            );
        }
        assert_eq!(
            parse("Done.\n```python\n  \n```\nmore"),
            Parsed::Answer {
                kept: "Done.\n```python".into()
            }
        );
    }

    #[test]
    fn the_block_may_follow_the_fence_on_the_same_line() {
        assert_eq!(
            parse("```python import os\nos.getcwd()```"),
            Parsed::Code {
                code: "import os\nos.getcwd()".into()
            }
        );
    }

    #[test]
    fn the_opening_is_upstreams() {
        let task = Task {
            index: "3".into(),
            category1: String::new(),
            category2: String::new(),
            category3: String::new(),
            user: "dedup it".into(),
            file_paths: vec!["./data/a.csv".into(), "./data/b.xlsx".into()],
            attachments: vec![],
            category: None,
        };
        let messages = opening(&task, Protocol::Markdown);
        let tools = opening(&task, Protocol::Tools);
        assert!(tools[0].content.starts_with(SYSTEM_PROMPT));
        assert!(tools[0].content.contains("`python` tool"));
        assert!(messages[0].content.starts_with("You are an AI Agent"));
        assert_eq!(
            messages[1].content,
            "[INFO]The data is uploaded to ./data/a.csv,./data/b.xlsx"
        );
        assert_eq!(
            (messages[2].role.as_str(), messages[2].content.as_str()),
            ("user", "dedup it")
        );
    }
}
