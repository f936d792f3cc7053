//! The prompts are the official ones, byte for byte: every chat message of both splits of
//! v0.1.4 against digests of the messages the official harness 0.2.5 makes
//! (`tests/data/official_prompt_digests.json`, written by `bench/official_prompt_digests.py`),
//! and six of them in full (`tests/data/official_prompts.json`), for a readable diff.

use std::collections::BTreeMap;

use assay_generate::prompt;
use assay_tasks::bigcodebench::{Dataset, Split, Subset};
use serde_json::Value;

/// All 2,280 chat messages (1,140 tasks x Complete and Instruct) have the BLAKE3 digest of the
/// official harness's message, and the fixture lists exactly those 2,280.
#[test]
fn every_chat_message_is_the_official_one() {
    let fixture: Value =
        serde_json::from_str(include_str!("data/official_prompt_digests.json")).unwrap();
    assert_eq!(fixture["harness"], "bigcodebench 0.2.5");
    assert_eq!(fixture["dataset_version"], "v0.1.4");
    assert_eq!(fixture["digest"], "blake3 of the UTF-8 message, hex");
    let mut expected: BTreeMap<(String, String), String> = BTreeMap::new();
    for (task_id, by_split) in fixture["digests"].as_object().unwrap() {
        for (split, digest) in by_split.as_object().unwrap() {
            let digest = digest.as_str().unwrap().to_string();
            expected.insert((task_id.clone(), split.clone()), digest);
        }
    }
    assert_eq!(expected.len(), 2280, "entries in the fixture");
    assert_eq!(fixture["entries"], 2280);

    let dataset = Dataset::embedded("v0.1.4", Subset::Full).unwrap();
    assert_eq!(dataset.tasks.len(), 1140);
    let (mut compared, mut missing, mut differ) = (0, Vec::new(), Vec::new());
    for task in &dataset.tasks {
        for split in [Split::Complete, Split::Instruct] {
            let key = (task.task_id.clone(), split.as_str().to_string());
            let Some(want) = expected.remove(&key) else {
                missing.push(format!("{} {}", task.task_id, split.as_str()));
                continue;
            };
            compared += 1;
            let message = prompt::chat_message(task, split);
            if blake3::hash(message.as_bytes()).to_hex().as_str() != want {
                differ.push((format!("{} {}", task.task_id, split.as_str()), message));
            }
        }
    }
    let extra: Vec<String> = expected.keys().map(|(t, s)| format!("{t} {s}")).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "the fixture must list every task in both splits and nothing else: missing {missing:?}, \
         extra {extra:?}"
    );
    assert_eq!(compared, 2280);
    if let Some((first, message)) = differ.first() {
        let names: Vec<&str> = differ
            .iter()
            .take(10)
            .map(|(name, _)| name.as_str())
            .collect();
        panic!(
            "{} of {compared} chat messages differ from the official harness's; the first: \
             {names:?}\nassay's message for {first}:\n{message:?}",
            differ.len()
        );
    }
}

/// Six messages in full: on a change, the diff shows what changed.
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
