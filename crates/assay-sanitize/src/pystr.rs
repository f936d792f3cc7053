//! The few Python `str` methods the official sanitizer relies on, with Python's exact semantics.
//!
//! Rust's `trim` and `lines` look alike but disagree on edge characters (`trim` keeps the
//! information separators U+001C..U+001F that Python treats as whitespace; `lines` knows only
//! `\n` and `\r\n`), and any such disagreement changes which lines the sanitizer keeps.

/// Python's `str.isspace` for a single character.
///
/// Python counts a character as whitespace when its bidirectional class is WS, B or S or its
/// category is Zs. That is Unicode's `White_Space` set plus U+001C..U+001F (bidi classes B and S).
fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()` without arguments.
pub(crate) fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// Whether Python's `str.splitlines` ends a line at `c` (`\r\n` is handled by the caller).
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\u{0b}'
            | '\u{0c}'
            | '\u{1c}'
            | '\u{1d}'
            | '\u{1e}'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// Python's `str.splitlines()` (no `keepends`): `\r\n` is one break, and a final break does not
/// start an empty last line (`"a\n"` gives `["a"]`, `""` gives `[]`).
pub(crate) fn splitlines(s: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = s.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if !is_line_break(c) {
            continue;
        }
        lines.push(&s[start..at]);
        start = at + c.len_utf8();
        if c == '\r' {
            if let Some(&(next_at, '\n')) = chars.peek() {
                chars.next();
                start = next_at + 1;
            }
        }
    }
    if start < s.len() {
        lines.push(&s[start..]);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code point for which CPython 3.11's `str.isspace()` is true.
    const PYTHON_SPACES: &[u32] = &[
        0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001,
        0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029,
        0x202f, 0x205f, 0x3000,
    ];

    #[test]
    fn is_space_matches_python_on_every_code_point() {
        let ours: Vec<u32> = (0..=0x10ffff)
            .filter_map(char::from_u32)
            .filter(|&c| is_space(c))
            .map(u32::from)
            .collect();
        assert_eq!(ours, PYTHON_SPACES);
    }

    #[test]
    fn strip_removes_information_separators_unlike_trim() {
        assert_eq!(strip("\u{1c}\u{1f} x \u{3000}"), "x");
        assert_eq!(strip(" \t\n"), "");
        assert_eq!(strip("\u{200b}x"), "\u{200b}x");
    }

    #[test]
    fn splitlines_follows_python() {
        assert_eq!(splitlines(""), Vec::<&str>::new());
        assert_eq!(splitlines("a\n"), ["a"]);
        assert_eq!(splitlines("a\n\nb"), ["a", "", "b"]);
        assert_eq!(splitlines("a\r\nb\rc\r"), ["a", "b", "c"]);
        assert_eq!(splitlines("a\r\r\nb"), ["a", "", "b"]);
        assert_eq!(
            splitlines("a\u{0b}b\u{0c}c\u{1c}d\u{1d}e\u{1e}f\u{85}g\u{2028}h\u{2029}i\u{1f}j"),
            ["a", "b", "c", "d", "e", "f", "g", "h", "i\u{1f}j"]
        );
        assert_eq!(splitlines("\n"), [""]);
    }
}
