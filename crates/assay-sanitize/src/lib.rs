//! Extracting the code from a model's answer exactly as the official BigCodeBench 0.2.5
//! sanitizer does (`bigcodebench/sanitize.py` and `syncheck.py`).
//!
//! Scores are only comparable with published ones if the evaluated code is byte-for-byte what
//! the official harness would evaluate, so this is a faithful reimplementation, quirks
//! included (they are listed where they happen: [`Sanitizer::code_extract`] and the `tree`
//! module). The official algorithm has two parsers in it and so does this crate:
//! - the syntax check that chooses the code span is CPython's `ast.parse`, run in a helper
//!   process of the interpreter you pass. A Rust parser would be simpler but does not accept
//!   exactly what CPython 3.11 accepts (measured once with throwaway scripts, before this
//!   crate: used as the check on the 592 rows of the official fixture, tree-sitter's
//!   `has_error` changed the extracted span of 25, rustpython-parser 0.4 of 2), and every
//!   disagreement changes the extracted code;
//! - the selection of imports and definitions uses tree-sitter-python 0.23.5, the grammar the
//!   official used, because its node kinds and byte ranges define what is kept.
//!
//! Deliberate differences, all on inputs where the official crashes or hangs instead of
//! answering: `ast.parse` failing with something other than `SyntaxError`/`MemoryError` (such
//! as a `RecursionError` on absurdly nested code), killing the interpreter, or running longer
//! than 10 s counts as "does not parse".

mod extract;
mod pystr;
mod syntax;
mod tree;

use std::path::{Path, PathBuf};

use syntax::SyntaxChecker;

/// Runs the official sanitizer. Holds a CPython helper process (for the syntax check) for its
/// whole life; the helper is killed when the `Sanitizer` is dropped.
pub struct Sanitizer {
    checker: SyntaxChecker,
}

impl Sanitizer {
    /// Starts the syntax-check helper with `python`, which must be a CPython 3.11 interpreter
    /// (the evaluation environment's): other versions accept different code. The helper gets
    /// an empty environment and never executes the text it is given, only parses it.
    pub fn new(python: &Path) -> Result<Sanitizer, Error> {
        Ok(Sanitizer {
            checker: SyntaxChecker::new(python)?,
        })
    }

    /// The official `sanitize(text, entry_point)`: the imports and the top-level definitions
    /// that `entry_point` reaches, from the longest parseable span of `text`; if that leaves
    /// nothing, the longest parseable span itself.
    ///
    /// Fails only if the helper died and could not be started again.
    pub fn sanitize(&mut self, text: &str, entry_point: &str) -> Result<String, Error> {
        let code = extract::code_extract(&mut self.checker, pystr::strip(text))?;
        let target = tree::target_code(&code, entry_point);
        match pystr::strip(&target) {
            // The official falls back on the original text, not the stripped one.
            "" => self.code_extract(text),
            kept => Ok(kept.to_string()),
        }
    }

    /// The official `code_extract(text)`: among the spans of at least two `"\n"`-separated
    /// lines that CPython parses, the one with the most non-blank lines (the earliest and then
    /// the shortest on ties, so leading blank lines stay and trailing ones go); the first line
    /// of `text` when no span parses.
    ///
    /// Fails only if the helper died and could not be started again.
    pub fn code_extract(&mut self, text: &str) -> Result<String, Error> {
        extract::code_extract(&mut self.checker, text)
    }
}

/// Why the sanitizer could not run; every message says which interpreter and what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The interpreter could not be executed at all.
    #[error(
        "could not run `{}` for the sanitizer's syntax check ({source}); pass the path of a \
         CPython 3.11 interpreter, such as the evaluation environment's python",
        python.display()
    )]
    StartPython {
        /// The interpreter given.
        python: PathBuf,
        /// Why starting it failed.
        #[source]
        source: std::io::Error,
    },
    /// It ran but did not behave like a Python interpreter running the helper.
    #[error(
        "`{}` did not start the sanitizer's syntax-check helper: {detail}; pass the path of a \
         CPython 3.11 interpreter binary itself (its sys.executable), not a wrapper script",
        python.display()
    )]
    HelperHandshake {
        /// The interpreter given.
        python: PathBuf,
        /// What went wrong, with the start of its stderr if it printed anything.
        detail: String,
    },
    /// It is a Python, but not CPython 3.11.
    #[error(
        "`{}` is {found}, but the sanitizer needs CPython 3.11: the official syntax check is \
         CPython 3.11's ast.parse and other versions accept different code; pass a CPython 3.11 \
         interpreter, such as the evaluation environment's python",
        python.display()
    )]
    UnsupportedPython {
        /// The interpreter given.
        python: PathBuf,
        /// What the helper reported it is, `<implementation> <version>` (e.g. `cpython 3.12.1`).
        found: String,
    },
}
