//! The two ways the agent's code reaches the interpreter, and the tool one of them offers:
//! what the opening, the transcript, the chat model and the episode all follow. Its own module
//! because `markdown`, which writes each protocol's opening, needs it while the episode and the
//! transcript use `markdown`: kept in `episode`, episode and markdown imported each other.

/// How the agent's code reaches the interpreter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Upstream's: the first ```` ```python ```` block of a reply runs.
    Markdown,
    /// Native tool calling: the model calls a `python` tool with the cell's code.
    Tools,
}

impl Protocol {
    /// The name options and directories use.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Markdown => "markdown",
            Protocol::Tools => "tools",
        }
    }
}

/// The tool the `tools` protocol offers.
pub const PYTHON_TOOL: &str = "python";
