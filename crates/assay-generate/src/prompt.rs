//! The official BigCodeBench prompts (harness 0.2.5, `provider/utility.py`), byte for byte:
//! what an API chat model is sent, what a base model continues, and where generation stops.
//! A different prompt is a different benchmark, so nothing here is configurable.

use assay_models::Provider;
use assay_tasks::bigcodebench::{Split, Task};

/// Names the prompts below in manifests: a run made with other prompts is not comparable.
pub const TEMPLATE_VERSION: &str = "bigcodebench-0.2.5";

/// The instruction before the task (the harness's `--instruction_prefix` default).
pub const INSTRUCTION_PREFIX: &str = "Please provide a self-contained Python script that solves the following problem in a markdown code block:";

/// Stop strings of every local generation (`EOS`); the official Anthropic backend sends them
/// as stop sequences, the OpenAI one sends none.
pub const EOS: [&str; 6] = [
    "<|endoftext|>",
    "<|endofmask|>",
    "</s>",
    "\nif __name__",
    "\ndef main(",
    "\nprint(",
];

/// What a base model continuing the Complete prompt additionally stops at: the start of the
/// next top-level statement after the function.
pub const DIRECT_COMPLETION_STOPS: [&str; 5] =
    ["\ndef ", "\nclass ", "\nimport ", "\nfrom ", "\nassert "];

/// The single user message a chat model gets (no system message, no prefill). Complete wraps
/// the stripped prompt in a bare ``` fence; Instruct's prompt already ends with its own block.
pub fn chat_message(task: &Task, split: Split) -> String {
    match split {
        Split::Complete => format!(
            "{INSTRUCTION_PREFIX}\n```\n{}\n```\n",
            task.complete_prompt.trim()
        ),
        Split::Instruct => format!("{INSTRUCTION_PREFIX}\n{}\n", task.instruct_prompt.trim()),
    }
}

/// Where a coding agent is asked to write its answer, in its working directory.
pub const AGENT_SOLUTION_FILE: &str = "solution.py";

/// What a coding agent is asked (not an official prompt: the official harness asks chat
/// models only): the task's prompt of the split, and where to write the program. It asks for
/// a file, as Harbor's adapter does, not a reply in a markdown block (an agent's reply is not
/// its work).
pub fn agent_message(task: &Task, split: Split) -> String {
    let save = format!(
        "Save the whole program, with its imports, to the file `{AGENT_SOLUTION_FILE}` in the \
         current directory."
    );
    match split {
        Split::Complete => format!(
            "Complete the following Python function.\n```python\n{}\n```\n{save}\n",
            task.complete_prompt.trim()
        ),
        Split::Instruct => format!("{}\n\n{save}\n", task.instruct_prompt.trim()),
    }
}

/// What a base model continues: the Complete prompt as it is. Its answer is the prompt plus
/// the continuation.
pub fn completion_prompt(task: &Task) -> &str {
    &task.complete_prompt
}

/// The stop strings a chat model is sent, as the official backends send them: the Anthropic
/// one sends [`EOS`], the OpenAI one none.
pub fn chat_stops(provider: &Provider) -> Vec<String> {
    match provider {
        Provider::Anthropic => EOS.iter().map(|s| s.to_string()).collect(),
        Provider::OpenAi => Vec::new(),
    }
}

/// The stop strings for a base model.
pub fn completion_stops() -> Vec<String> {
    EOS.iter()
        .chain(DIRECT_COMPLETION_STOPS.iter())
        .map(|s| s.to_string())
        .collect()
}
