//! How code is found in an answer NeMo Gym's `/verify` receives.
//!
//! By default as assay (and the official harness) does: thinking set apart, then the
//! official sanitizer. On request, by NeMo's own rules (its BigCodeBench server's
//! `preprocess_code_completion`, a port of NeMo Skills' `preprocess_code`), to reproduce
//! numbers NeMo reports; written here from their documented behaviour, quirks included:
//! 1. every `\r` is dropped; after the first `</think>`, only what follows it counts;
//! 2. the last "```python" starts the code, or else the last "```" at all; the code runs to
//!    the next "```", and a fence never closed gives no code; with no fence, the whole text is
//!    the code;
//! 3. the code is stripped of surrounding whitespace.
//!
//! So an answer fenced with a bare "```" gives no code (its last "```" is the closing one),
//! and unfenced prose is run as code.

use serde::Deserialize;

/// Which rules find the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Extraction {
    /// Thinking set apart, then the official sanitizer (assay's default).
    Official,
    /// NeMo's rules.
    Nemo,
}

/// The code NeMo's rules find in `text` (empty: none).
pub fn nemo(text: &str) -> String {
    let text = text.replace('\r', "");
    let text = match text.find("</think>") {
        Some(end) => &text[end + "</think>".len()..],
        None => text.as_str(),
    };
    let fenced = match text.rfind("```python") {
        Some(start) => Some(start + "```python".len()),
        None => text.rfind("```").map(|start| start + "```".len()),
    };
    let code = match fenced {
        None => text,
        Some(from) => match text[from..].find("```") {
            Some(end) => &text[from..from + end],
            None => "",
        },
    };
    code.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::nemo;

    #[test]
    fn the_last_python_block_is_the_code() {
        let text = "first\n```python\nx = 1\n```\nthen\n```python\ndef f():\n    return 2\n```\n";
        assert_eq!(nemo(text), "def f():\n    return 2");
    }

    #[test]
    fn thinking_before_the_first_close_is_dropped() {
        let text = "<think>```python\nwrong = 1\n```</think>\r\n```python\nright = 2\n```";
        assert_eq!(nemo(text), "right = 2");
        // An opening tag never closed is kept as text.
        assert_eq!(nemo("<think>x = 1"), "<think>x = 1");
    }

    #[test]
    fn quirks_are_kept() {
        // A bare fence: its last ``` is the closing one, after which nothing is closed.
        assert_eq!(nemo("```\nx = 1\n```"), "");
        // ```py: found as a bare ```, the same way.
        assert_eq!(nemo("```py\nx = 1\n```"), "");
        // Not closed: no code.
        assert_eq!(nemo("```python\nx = 1\n"), "");
        // No fence: the whole text, prose and all.
        assert_eq!(nemo("  Here it is: x = 1  "), "Here it is: x = 1");
    }
}
