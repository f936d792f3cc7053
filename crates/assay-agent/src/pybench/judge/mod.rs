//! PyBench's LLM judge, as upstream's development history has it (Mercury7353/PyBench at
//! 4096d69: `eval_code_interpreter.py` with `config/evaluator.yaml`, and
//! `eval_code_interpreter_WL_rate.py` with `config/evaluator_winlose_rate.yaml`): a pairwise
//! review of a reference trajectory (Agent1, the paper's GPT-3.5) and the run's (Agent2),
//! answered with Pass/Failed per agent and scores or a decision in a ``` block.
//!
//! The prompts are data, byte for byte (`data/pybench-judge-*.txt`, read from the YAML with
//! PyYAML). So is what fills them: the winlose script sends each trajectory's line as its
//! file holds it (a newline at its end), the scores script `json.dumps(record,
//! ensure_ascii=False, indent=4)`; a task a side lacks is the text `Agent1 Failed` /
//! `Agent2 Failed`, as the winlose script writes it.

pub mod figures;
pub mod pyjson;
pub mod reply;

use std::collections::BTreeMap;
use std::path::Path;

use assay_records::{JudgeOrder, JudgePrompt, TrajectoryRecord};

use pyjson::PyValue;

/// `evaluator.yaml`'s system prompt.
pub const SCORES_SYSTEM: &str = include_str!("../../../data/pybench-judge-scores.txt");
/// `evaluator_winlose_rate.yaml`'s system prompt.
pub const WINLOSE_SYSTEM: &str = include_str!("../../../data/pybench-judge-winlose.txt");
/// Both configs' user prompt, `{line1}` and `{line2}` filled by Python's `str.format`.
pub const USER_TEMPLATE: &str = include_str!("../../../data/pybench-judge-user.txt");
/// Both configs' temperature.
pub const TEMPERATURE: f64 = 0.2;
/// Both configs' top_p (not sent to Anthropic, which refuses it beside a temperature).
pub const TOP_P: f64 = 0.5;
/// Both configs' max_tokens.
pub const MAX_TOKENS: u32 = 1000;
/// How many times a reply that cannot be read is asked again by default: three asks in all,
/// as a user who reran upstream's script twice for its unread replies would have made. At
/// temperature 0.2 an ask again often reads; a judge that never answers in the format is
/// not asked for ever.
pub const REASKS: u32 = 2;
/// The winlose config's frequency penalty.
pub const WINLOSE_FREQUENCY_PENALTY: f64 = 1.02;
/// The frequency penalty upstream's client (`llms/llmcenter.py`) sends when a config names
/// none, as the scores config does.
pub const DEFAULT_FREQUENCY_PENALTY: f64 = 1.0;
/// The presence penalty upstream's client sends for both configs (neither names one).
pub const PRESENCE_PENALTY: f64 = 1.0;

/// The system prompt of `prompt`.
pub fn system_prompt(prompt: JudgePrompt) -> &'static str {
    match prompt {
        JudgePrompt::Winlose => WINLOSE_SYSTEM,
        JudgePrompt::Scores => SCORES_SYSTEM,
    }
}

/// The frequency penalty upstream's client sent with `prompt`.
pub fn frequency_penalty(prompt: JudgePrompt) -> f64 {
    match prompt {
        JudgePrompt::Winlose => WINLOSE_FREQUENCY_PENALTY,
        JudgePrompt::Scores => DEFAULT_FREQUENCY_PENALTY,
    }
}

/// The user message with `agent1` and `agent2` in it (one pass, as `str.format`: braces in
/// the trajectories are not read).
pub fn user_message(agent1: &str, agent2: &str) -> String {
    let (head, rest) = USER_TEMPLATE
        .split_once("{line1}")
        .expect("the template has {line1}");
    let (middle, tail) = rest
        .split_once("{line2}")
        .expect("the template has {line2}");
    format!("{head}{agent1}{middle}{agent2}{tail}")
}

/// A trajectory as one of the prompts shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    /// The line as its file holds it, with its newline (the winlose script's form).
    pub line: String,
    /// The record read and written again with a four-space indent (the scores script's).
    pub indented: String,
}

impl Shown {
    /// A trajectory of assay's, as upstream's runner would have written it
    /// (`json.dumps(record, ensure_ascii=False)`): without assay's `thinking`.
    pub fn from_record(record: &TrajectoryRecord) -> Shown {
        let json = serde_json::to_string(record).expect("trajectories serialize");
        let mut value = PyValue::parse(&json).expect("serde_json reads what it wrote");
        value.drop_in_list("messages", "thinking");
        Shown {
            line: format!("{}\n", value.dumps_line()),
            indented: value.dumps_indented(),
        }
    }

    /// The form `prompt` sends.
    pub fn text(&self, prompt: JudgePrompt) -> &str {
        match prompt {
            JudgePrompt::Winlose => &self.line,
            JudgePrompt::Scores => &self.indented,
        }
    }
}

/// Why a reference file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReferenceError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not a trajectory.
    #[error("{path}:{line}: not a trajectory record: {why}")]
    Line {
        /// The file.
        path: std::path::PathBuf,
        /// 1-based.
        line: usize,
        /// What is wrong.
        why: String,
    },
}

/// An upstream-format trajectory file's lines by task index, each as Python's text mode reads
/// it from the file (a `\r\n` ending read as `\n`). Blank lines are skipped; a file that
/// gives an index twice is refused before this reads it (`replay::read_trajectories`).
pub fn read_reference(path: &Path) -> Result<BTreeMap<String, Shown>, ReferenceError> {
    let bytes = std::fs::read(path).map_err(|source| ReferenceError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let text = String::from_utf8(bytes).map_err(|e| ReferenceError::Line {
        path: path.to_path_buf(),
        line: 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count(),
        why: "not UTF-8".into(),
    })?;
    let mut shown = BTreeMap::new();
    for (n, line) in text.split_inclusive('\n').enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: String| ReferenceError::Line {
            path: path.to_path_buf(),
            line: n + 1,
            why,
        };
        let value = PyValue::parse(line).map_err(|e| bad(e.to_string()))?;
        // Python's text mode reads a `\r\n` ending as `\n`.
        let line = match line.strip_suffix("\r\n") {
            Some(body) => format!("{body}\n"),
            None => line.to_string(),
        };
        let trajectory = Shown {
            line,
            indented: value.dumps_indented(),
        };
        let index = match value.get("index") {
            Some(PyValue::Str(s)) => s.clone(),
            Some(PyValue::Int(i)) => i.to_string(),
            _ => return Err(bad("no `index` (a string or an integer)".into())),
        };
        shown.insert(index, trajectory);
    }
    Ok(shown)
}

/// The text standing for a trajectory the side at `position` (1 or 2) lacks.
pub fn absent(position: u8) -> String {
    format!("Agent{position} Failed")
}

/// The two sides of a pair in `order`: (Agent1, Agent2).
pub fn agents<T>(order: JudgeOrder, reference: T, run: T) -> (T, T) {
    match order {
        JudgeOrder::Paper => (reference, run),
        JudgeOrder::Swapped => (run, reference),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompts_are_upstreams() {
        assert!(SCORES_SYSTEM.starts_with(
            "You are a code reviewer who is responsible for select a better solution from two \
             agent's trajectories on sloving a code problem. \nThe file"
        ));
        assert!(SCORES_SYSTEM.ends_with("Notice: Both cv2.imwrite and plt.savefig is okay\n"));
        assert!(WINLOSE_SYSTEM.contains("\"Decision\": {\n    \"Agent1\": 0/1,"));
        assert_eq!(
            user_message("A {line2}\n", "B"),
            "Now decide which agent's solution is better and give the reason\nAgent 1's \
             solution:\nA {line2}\n\n\nAgent 2's solution:\nB\n"
        );
    }
}
