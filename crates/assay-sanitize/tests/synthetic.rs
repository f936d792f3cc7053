//! Tricky inputs, each checked against the official sanitizer's own output.
//!
//! `cases.json` holds our inputs and what official BigCodeBench 0.2.5 returned for them
//! (`sanitize(text, entry_point)` and `code_extract(text)`); `make_cases.py` next to it
//! regenerates the file from the installed official package.

mod common;

use serde_json::Value;

#[test]
fn matches_the_official_output_on_tricky_inputs() {
    let cases: Vec<Value> = serde_json::from_str(include_str!("cases.json")).expect("cases.json");
    assert!(cases.len() >= 60, "cases.json looks truncated");
    let mut sanitizer = common::sanitizer();
    let mut failures = Vec::new();
    for case in &cases {
        let field = |key: &str| {
            case[key]
                .as_str()
                .unwrap_or_else(|| panic!("case without {key}"))
        };
        let (name, text, entry_point) = (field("name"), field("text"), field("entry_point"));
        let sanitized = sanitizer.sanitize(text, entry_point).expect("sanitize");
        if sanitized != field("sanitized") {
            failures.push(format!(
                "{name}: sanitize gave {sanitized:?}, official {:?}",
                field("sanitized")
            ));
        }
        let extracted = sanitizer.code_extract(text).expect("code_extract");
        if extracted != field("extracted") {
            failures.push(format!(
                "{name}: code_extract gave {extracted:?}, official {:?}",
                field("extracted")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
