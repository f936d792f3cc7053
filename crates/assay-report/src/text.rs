//! Text as the report's parts write it: untrusted text escaped for the HTML page, and lists of
//! task ids cut short. Its own module because the judge section, which the terminal and the
//! HTML page both include, uses them too: kept in `terminal` and `html`, each of those and
//! `judge` would import the other.

use std::fmt::Write;

/// How many flipped tasks a comparison lists before it counts the rest.
const LISTED: usize = 10;

/// `text` safe as HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The first few of `ids`, and how many more there are.
pub(crate) fn listed(ids: &[String]) -> String {
    let mut shown = ids
        .iter()
        .take(LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > LISTED {
        let _ = write!(shown, " and {} more", ids.len() - LISTED);
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_what_breaks_out_of_text_and_attributes() {
        assert_eq!(
            escape("<script>x</script> \"a\" & 'b'"),
            "&lt;script&gt;x&lt;/script&gt; &quot;a&quot; &amp; &#39;b&#39;"
        );
    }
}
