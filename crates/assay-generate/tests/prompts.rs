//! The prompts are the official ones, byte for byte (expected messages produced by the
//! official harness 0.2.5, `tests/data/official_prompts.json`).

use assay_generate::prompt;
use assay_tasks::bigcodebench::{Dataset, Split, Subset};
use serde_json::Value;

#[test]
fn chat_messages_are_the_official_ones() {
    let expected: Value = serde_json::from_str(include_str!("data/official_prompts.json")).unwrap();
    let dataset = Dataset::embedded("v0.1.4", Subset::Full).unwrap();
    let cases = expected["prompts"].as_array().unwrap();
    assert_eq!(cases.len(), 6);
    for case in cases {
        let task = dataset.get(case["task_id"].as_str().unwrap()).unwrap();
        let split = match case["split"].as_str().unwrap() {
            "complete" => Split::Complete,
            _ => Split::Instruct,
        };
        assert_eq!(
            prompt::chat_message(task, split),
            case["message"].as_str().unwrap(),
            "{} {:?}",
            task.task_id,
            split
        );
    }
}

#[test]
fn stop_strings_are_the_official_ones() {
    assert_eq!(
        prompt::completion_stops(),
        [
            "<|endoftext|>",
            "<|endofmask|>",
            "</s>",
            "\nif __name__",
            "\ndef main(",
            "\nprint(",
            "\ndef ",
            "\nclass ",
            "\nimport ",
            "\nfrom ",
            "\nassert "
        ]
    );
    let dataset = Dataset::embedded("v0.1.4", Subset::Hard).unwrap();
    let task = &dataset.tasks[0];
    assert_eq!(prompt::completion_prompt(task), task.complete_prompt);
}
