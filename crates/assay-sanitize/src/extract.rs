//! The official `code_extract`: the span of at least two lines with the most non-blank lines
//! that CPython parses.
//!
//! The official tries every span `(i, j)`, `i < j`, in ascending order and keeps a span only if
//! it has strictly more non-blank lines (Python `str.strip`) than the best so far; with no winner
//! the answer is the first line. That is O(lines²) parses. We return the same span with far
//! fewer parses, using only that the non-blank count of `i..=j` never decreases in `j` and never
//! increases in `i`:
//! - a span not beating the best count cannot win, so it is never asked about, and once the
//!   longest span starting at `i` cannot beat it, no later `i` can either;
//! - for a given `i`, the largest parsing `j` has the highest count; the official would have
//!   kept the smallest `j` with that count, so that one is looked for among the few `j` with the
//!   same count (the span minus trailing blank lines, usually).
//!
//! A failing `j` does not end the search for its `i`: a later line can close a bracket or a
//! string and make the longer span parse.
//!
//! One syntax fact skips parses that are certain to fail (the spans starting inside a function
//! body): CPython rejects a text whose first line with code is indented ("unexpected indent"),
//! whatever follows. On the official fixture that is about two thirds of the parses (114,051
//! down to 39,587, counted on a Python model of this search) but, as such parses fail at once,
//! only about a sixth of the parsing time; no further rules of this kind are worth their risk. It is applied only where it is plainly true: the lines before
//! must be made of spaces and tabs or be `#` comments without `\r` (which CPython would read as
//! a line break), and the code must start with an ASCII letter, digit or `_`.

use std::ops::Range;

use crate::pystr;
use crate::syntax::SyntaxChecker;
use crate::Error;

/// The official `code_extract(text)`.
pub(crate) fn code_extract(checker: &mut SyntaxChecker, text: &str) -> Result<String, Error> {
    let lines = Lines::new(text);
    let last = lines.len() - 1;
    let mut best_count = 0;
    let mut best = 0..=0;
    for i in 0..last {
        if lines.count(i, last) <= best_count {
            break;
        }
        // Longest first: the first that parses has the highest count for this `i`.
        let longest_first: Vec<usize> = (i + 1..=lines.reach(i))
            .rev()
            .take_while(|&j| lines.count(i, j) > best_count)
            .collect();
        let Some(found) = first_parsing(checker, &lines, i, &longest_first)? else {
            continue;
        };
        let count = lines.count(i, found);
        // Shortest first among the spans with that count.
        let same_count: Vec<usize> = (i + 1..found)
            .filter(|&j| lines.count(i, j) == count)
            .collect();
        let shortest = first_parsing(checker, &lines, i, &same_count)?.unwrap_or(found);
        best_count = count;
        best = i..=shortest;
    }
    Ok(text[lines.span(*best.start(), *best.end())].to_string())
}

/// The first `j` in `candidates` for which lines `i..=j` parse.
fn first_parsing(
    checker: &mut SyntaxChecker,
    lines: &Lines,
    i: usize,
    candidates: &[usize],
) -> Result<Option<usize>, Error> {
    let ranges: Vec<Range<usize>> = candidates.iter().map(|&j| lines.span(i, j)).collect();
    Ok(checker
        .first_parsing(lines.text, &ranges)?
        .and_then(|index| candidates.get(index).copied()))
}

/// `text.split("\n")`, as byte ranges, with a running count of non-blank lines.
struct Lines<'a> {
    text: &'a str,
    ranges: Vec<Range<usize>>,
    /// `non_blank_before[k]`: how many of the first `k` lines are non-blank.
    non_blank_before: Vec<usize>,
    /// `reach[i]`: the last line a parsing span from line `i` can end on.
    reach: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        let mut ranges = Vec::new();
        let mut start = 0;
        for line in text.split('\n') {
            ranges.push(start..start + line.len());
            start += line.len() + 1;
        }
        let lines: Vec<&str> = ranges.iter().map(|range| &text[range.clone()]).collect();
        let mut non_blank = 0;
        let mut non_blank_before = vec![0];
        for line in &lines {
            if !pystr::strip(line).is_empty() {
                non_blank += 1;
            }
            non_blank_before.push(non_blank);
        }
        // Backwards: where the first code line from `i` on is indented, spans from `i` must end
        // before it; otherwise they may reach the last line.
        let last = lines.len() - 1;
        let mut reach = vec![last; lines.len()];
        let mut first_code_indented_at = None;
        for (i, line) in lines.iter().enumerate().rev() {
            first_code_indented_at = match classify(line) {
                LineKind::Skipped => first_code_indented_at,
                LineKind::IndentedCode => Some(i),
                LineKind::Other => None,
            };
            if let Some(code) = first_code_indented_at {
                reach[i] = code.saturating_sub(1);
            }
        }
        Lines {
            text,
            ranges,
            non_blank_before,
            reach,
        }
    }

    /// At least 1: `split` always yields a line.
    fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Non-blank lines among lines `i..=j`.
    fn count(&self, i: usize, j: usize) -> usize {
        self.non_blank_before[j + 1] - self.non_blank_before[i]
    }

    /// Lines `i..=j` joined by `"\n"`, as a range of the text.
    fn span(&self, i: usize, j: usize) -> Range<usize> {
        self.ranges[i].start..self.ranges[j].end
    }

    /// The last line a span starting at line `i` can end on and still parse.
    fn reach(&self, i: usize) -> usize {
        self.reach[i]
    }
}

/// What CPython's tokenizer makes of a line at the start of a text, as far as the indentation
/// rule needs to know.
enum LineKind {
    /// Spaces and tabs only, or a comment: skipped, no effect on indentation.
    Skipped,
    /// Indentation followed by the start of a name or number: an "unexpected indent".
    IndentedCode,
    /// Anything else, including whatever is not plainly one of the above.
    Other,
}

fn classify(line: &str) -> LineKind {
    let rest = line.trim_start_matches([' ', '\t']);
    let indented = rest.len() < line.len();
    match rest.chars().next() {
        None => LineKind::Skipped,
        Some('#') if !rest.contains('\r') => LineKind::Skipped,
        Some(c) if indented && (c.is_ascii_alphanumeric() || c == '_') => LineKind::IndentedCode,
        Some(_) => LineKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_stop_before_an_indented_first_code_line() {
        let text = "import os\n    x = 1\n\n  # note\n\t\n    return x\ny = 2\n  \ty\n\u{c}  z";
        let lines = Lines::new(text);
        // Line 0 is code at column 0; lines 1 and 5 are indented code, 2..=4 lead to line 5;
        // line 6 is not indented; line 8 starts with a form feed, which resets the column.
        assert_eq!(
            (0..lines.len()).map(|i| lines.reach(i)).collect::<Vec<_>>(),
            [8, 0, 4, 4, 4, 4, 8, 6, 8]
        );
        let crlf_comment = Lines::new("  # a\r\n  x");
        assert_eq!(crlf_comment.reach(0), 1);
    }
}
