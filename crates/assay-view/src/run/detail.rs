//! Everything about one sample, on request: a BigCodeBench sample's prompt, answer (and what
//! the model thought) and tests; a PyBench episode turn by turn, with what LLM judges said of
//! it. Apart from the rows, as it reads the journals the table never needs.

use std::path::Path;

use assay_records::{EpisodeEnd, Kind, Manifest};
use serde_json::{json, Value};

use super::official::official_samples;
use super::rows::Row;
use super::tasks::{prompt, task_number, task_of};
use super::{is_pybench, DirFiles, Files, RunSource};
use crate::ViewError;

impl RunSource {
    /// Everything about one sample (`index`: its row key); none when there is no such sample.
    pub fn detail(&self, index: usize) -> Result<Option<Value>, ViewError> {
        let mut state = self.lock();
        state.refresh()?;
        let Some(row) = state.rows.iter().find(|r| r.index == index).cloned() else {
            return Ok(None);
        };
        // An episode shows what the judgings the report reads in the run said of it.
        let pybench = match &mut state.files {
            Files::Dir(dir) => is_pybench(dir.manifest.get()?),
            Files::Official(_) => false,
        };
        let pybench_run = if pybench {
            Some(self.figures(&mut state)?.0)
        } else {
            None
        };
        match &mut state.files {
            Files::Official(doc) => {
                let file = doc.get()?.ok_or_else(|| vanished(&self.path))?;
                let sample = official_samples(file)
                    .nth(index)
                    .map(|(_, s)| s.clone())
                    .unwrap_or_default();
                let details = sample["details"].as_object().cloned().unwrap_or_default();
                let tests: Vec<Value> = details
                    .iter()
                    .map(|(name, detail)| {
                        json!({"name": name, "result": "fail", "detail": detail.as_str().unwrap_or_default()})
                    })
                    .collect();
                let task = task_of(None, &row.task_id);
                Ok(Some(json!({
                    "benchmark": "bigcodebench",
                    "row": row,
                    "prompt": task.map(|t| prompt(t, None)),
                    "test_code": task.map(|t| t.test.clone()),
                    "code": sample["solution"].as_str().unwrap_or_default(),
                    "tests": tests,
                })))
            }
            Files::Dir(dir) => {
                let manifest = dir.manifest.get()?.cloned();
                if let Some(run) = pybench_run {
                    let mut detail = episode(dir, manifest.as_ref(), &row)?;
                    if !run.judges.is_empty() {
                        dir.judgements.refresh()?;
                        detail["judgements"] = crate::judge::verdicts(
                            &run.judges,
                            dir.judgements.records(),
                            &row.task_id,
                        );
                    }
                    return Ok(Some(detail));
                }
                Ok(Some(bigcodebench_sample(dir, manifest.as_ref(), &row)?))
            }
        }
    }
}

fn vanished(path: &Path) -> ViewError {
    ViewError::Invalid {
        path: path.to_path_buf(),
        line: 0,
        message: "no longer there".into(),
    }
}

/// A BigCodeBench sample: the prompt, what the model said (and thought) and what ran, each
/// test.
fn bigcodebench_sample(
    dir: &mut DirFiles,
    manifest: Option<&Manifest>,
    row: &Row,
) -> Result<Value, ViewError> {
    dir.samples.refresh()?;
    dir.generation.refresh()?;
    let record = dir
        .results
        .records()
        .iter()
        .rev()
        .find(|r| r.index == row.index)
        .cloned();
    let samples = dir.samples.records();
    let sample = samples.get(row.index);
    let code = sample
        .and_then(|s| s["solution"].as_str().or(s["completion"].as_str()))
        .unwrap_or_default();
    // The model's answer before sanitizing: every samples.jsonl assay writes has it on the
    // sample's own line (generation writes it, evaluation and merge keep lines as they are).
    let raw = sample.and_then(|s| s["raw_solution"].as_str());
    // Its thinking is in generation.jsonl: the sample is its task's n-th line of samples.jsonl,
    // so its task's n-th answer there, when that answer is the code judged (a samples file
    // evaluated apart from its generation has none).
    let nth = samples
        .iter()
        .take(row.index)
        .filter(|s| s["task_id"] == row.task_id.as_str())
        .count();
    let thinking = assay_report::answers(dir.generation.records())
        .filter(|a| a.request.task_id == row.task_id)
        .nth(nth)
        .filter(|a| a.solution() == code)
        .and_then(|a| a.thinking());
    let version = manifest.and_then(|m| m.identity.dataset.as_deref());
    let split = manifest.and_then(|m| m.identity.split.as_deref());
    let task = task_of(version, &row.task_id);
    Ok(json!({
        "benchmark": "bigcodebench",
        "row": row,
        "prompt": task.map(|t| prompt(t, split)),
        "test_code": task.map(|t| t.test.clone()),
        "raw": raw,
        "thinking": thinking,
        "code": code,
        "record": record,
    }))
}

/// A PyBench episode, turn by turn: each reply, the cell it ran, what came back, the figures
/// it drew; then the files the episode wrote.
fn episode(dir: &mut DirFiles, manifest: Option<&Manifest>, row: &Row) -> Result<Value, ViewError> {
    dir.trajectories.refresh()?;
    let record = dir
        .episodes
        .records()
        .iter()
        .rev()
        .find(|r| task_number(&r.task_id) == row.index as u64)
        .cloned();
    let number = row.index.to_string();
    // An evaluation of recordings keeps no conversation of its own: the recordings it judged
    // have it, while they are unchanged.
    let judged = match manifest.filter(|m| m.kind == Kind::PybenchEval) {
        Some(m) => assay_report::judged_trajectories(m).unwrap_or_default(),
        None => Vec::new(),
    };
    let trajectory = dir
        .trajectories
        .records()
        .iter()
        .chain(&judged)
        .rev()
        .find(|t| t.index == number);
    let mut preamble = Vec::new();
    let mut steps: Vec<Value> = Vec::new();
    let mut turn = 0u32;
    for message in trajectory
        .map(|t| t.messages.as_slice())
        .unwrap_or_default()
    {
        if message.role == "assistant" {
            turn += 1;
            let cell = record
                .as_ref()
                .and_then(|r| r.cells.iter().find(|c| c.turn == turn));
            steps.push(json!({
                "turn": turn,
                "message": message.content,
                // What it thought first (never run): shown apart, as a BigCodeBench sample's.
                "thinking": message.thinking.as_ref().map(|text| json!({"text": text, "cut": false})),
                "cell": cell.map(|c| json!({
                    "status": c.status.as_str(),
                    "reason": c.reason,
                    "seconds": c.seconds,
                    "restarted": c.restarted,
                    // Paths in the run directory (`figures/<index>-<turn>-<n>.png`).
                    "figures": c.figures,
                })),
                "observation": Value::Null,
            }));
        } else if let Some(step) = steps.last_mut().filter(|s| s["observation"].is_null()) {
            step["observation"] = json!(message.content);
        } else {
            preamble.push(json!({"role": message.role, "content": message.content}));
        }
    }
    // An episode cut off inside its thinking ended at its last reply.
    if record
        .as_ref()
        .is_some_and(|r| r.end == EpisodeEnd::CutWhileThinking)
    {
        if let Some(thinking) = steps.last_mut().map(|s| &mut s["thinking"]) {
            if thinking.is_object() {
                thinking["cut"] = json!(true);
            }
        }
    }
    let outputs: Vec<String> = record
        .as_ref()
        .map(|r| {
            r.outputs
                .iter()
                .map(|o| format!("tasks/{}/output/{o}", row.index))
                .collect()
        })
        .unwrap_or_default();
    Ok(json!({
        "benchmark": "pybench",
        "row": row,
        "record": record,
        "preamble": preamble,
        "steps": steps,
        "outputs": outputs,
    }))
}

#[cfg(test)]
mod tests {
    use assay_records::Kind;
    use serde_json::{json, Value};

    use super::RunSource;
    use crate::run::testing::{run_dir, sample_record};

    #[test]
    fn an_episode_pairs_each_reply_with_its_cell_and_what_came_back() {
        let episode = json!({
            "task_id": "PyBench/7", "status": "fail", "reason": "r",
            "verdicts": {"faithful": {"status": "fail", "reason": "r"}, "fixed": {"status": "fail", "reason": "r"}},
            "turns": 2, "end": "answered", "seconds": 1.0, "outputs": ["a.png"],
            "cells": [{"turn": 1, "status": "error", "reason": "ValueError: x", "seconds": 0.1,
                       "output_bytes": 3, "observation_chars": 9, "figures": ["figures/7-1-1.png"]}],
        });
        let trajectory = json!({"index": "7", "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "[INFO] files"},
            {"role": "user", "content": "the query"},
            {"role": "assistant", "content": "```python\n1/0\n```"},
            {"role": "user", "content": "Error: ValueError"},
            {"role": "assistant", "content": "Finished: done"},
        ]});
        let dir = run_dir(
            Kind::PybenchRun,
            &[
                ("results.jsonl", format!("{episode}\n")),
                ("trajectory.jsonl", format!("{trajectory}\n")),
            ],
        );
        let run = RunSource::open(0, dir.path()).unwrap();
        let detail = run.detail(7).unwrap().unwrap();
        assert_eq!(detail["preamble"].as_array().unwrap().len(), 3);
        let steps = detail["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[0]["cell"]["status"], "error");
        assert_eq!(steps[0]["cell"]["figures"], json!(["figures/7-1-1.png"]));
        assert_eq!(steps[0]["observation"], "Error: ValueError");
        assert_eq!(steps[1]["cell"], Value::Null);
        assert_eq!(steps[1]["observation"], Value::Null);
        assert_eq!(detail["outputs"], json!(["tasks/7/output/a.png"]));
        assert!(run.detail(8).unwrap().is_none());
    }

    #[test]
    fn a_sample_shows_the_raw_answer_of_its_own_line() {
        let sample = |raw: Option<&str>| {
            let mut line =
                json!({"task_id": "BigCodeBench/1", "solution": "def task_func(): pass"});
            if let Some(raw) = raw {
                line["raw_solution"] = json!(raw);
            }
            line.to_string() + "\n"
        };
        let dir = run_dir(
            Kind::BigcodebenchEval,
            &[
                (
                    "samples.jsonl",
                    sample(Some("first answer")) + &sample(Some("second answer")) + &sample(None),
                ),
                (
                    "results.jsonl",
                    (0..3)
                        .map(|i| sample_record(i, "BigCodeBench/1", "pass", &[("test_a", "pass")]))
                        .collect(),
                ),
            ],
        );
        let run = RunSource::open(0, dir.path()).unwrap();
        let raw = |index: usize| run.detail(index).unwrap().unwrap()["raw"].clone();
        assert_eq!(raw(0), "first answer");
        assert_eq!(raw(1), "second answer");
        assert_eq!(raw(2), Value::Null, "a samples file without raw answers");
        assert_eq!(
            run.detail(1).unwrap().unwrap()["code"],
            "def task_func(): pass"
        );
    }

    #[test]
    fn a_sample_shows_what_its_own_answer_thought() {
        let line = |task: &str, solution: &str| {
            json!({"task_id": task, "solution": solution}).to_string() + "\n"
        };
        let request = |task: &str, solution: &str, thinking: Value| {
            json!({
                "task_id": task, "raw": ["r"], "solutions": [solution], "finish_reasons": ["stop"],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1}, "latency_seconds": 1.0,
                "attempts": 1, "wanted": 1, "thinking": thinking,
            })
            .to_string()
                + "\n"
        };
        let failed = json!({
            "task_id": "BigCodeBench/1", "raw": [], "solutions": [], "finish_reasons": [],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0}, "latency_seconds": 1.0,
            "attempts": 3, "error": "HTTP 500", "wanted": 1,
        });
        let dir = run_dir(
            Kind::BigcodebenchRun,
            &[
                (
                    "samples.jsonl",
                    line("BigCodeBench/1", "a")
                        + &line("BigCodeBench/2", "")
                        + &line("BigCodeBench/1", "b")
                        + &line("BigCodeBench/3", "edited after"),
                ),
                (
                    "results.jsonl",
                    [(0, 1), (1, 2), (2, 1), (3, 3)]
                        .iter()
                        .map(|(i, t)| sample_record(*i, &format!("BigCodeBench/{t}"), "pass", &[]))
                        .collect(),
                ),
                (
                    "generation.jsonl",
                    // Generation's order: a request that failed gave no answer.
                    format!("{failed}\n")
                        + &request("BigCodeBench/1", "a", json!([]))
                        + &request(
                            "BigCodeBench/1",
                            "b",
                            json!([{"source": "field", "text": "second", "redacted": 1}]),
                        )
                        + &request(
                            "BigCodeBench/2",
                            "",
                            json!([{"source": "text", "text": "cut", "cut": true}]),
                        )
                        + &request(
                            "BigCodeBench/3",
                            "as generated",
                            json!([{"source": "text", "text": "not the code judged"}]),
                        ),
                ),
            ],
        );
        let run = RunSource::open(0, dir.path()).unwrap();
        let thinking = |index: usize| run.detail(index).unwrap().unwrap()["thinking"].clone();
        assert_eq!(
            thinking(0),
            Value::Null,
            "its task's first answer did not think"
        );
        assert_eq!(
            thinking(2),
            json!({"source": "field", "text": "second", "redacted": 1}),
            "its task's second answer"
        );
        assert_eq!(
            thinking(1),
            json!({"source": "text", "text": "cut", "cut": true})
        );
        assert_eq!(
            thinking(3),
            Value::Null,
            "a sample whose code is not its generation's answer"
        );
    }

    #[test]
    fn an_episode_shows_each_replys_thinking_and_where_it_was_cut() {
        let episode = json!({
            "task_id": "PyBench/4", "status": "fail", "reason": "r",
            "verdicts": {"faithful": {"status": "fail", "reason": "r"}, "fixed": {"status": "fail", "reason": "r"}},
            "turns": 3, "end": "cut_while_thinking", "seconds": 1.0,
            "cells": [{"turn": 2, "status": "pass", "reason": "ran", "seconds": 0.1,
                       "output_bytes": 1, "observation_chars": 1}],
        });
        let trajectory = json!({"index": "4", "messages": [
            {"role": "user", "content": "the query"},
            {"role": "assistant", "content": "Let me look."},
            {"role": "user", "content": "nothing ran"},
            {"role": "assistant", "content": "```python\n1\n```", "thinking": "run it"},
            {"role": "user", "content": "1"},
            {"role": "assistant", "content": "", "thinking": "and then"},
        ]});
        let dir = run_dir(
            Kind::PybenchRun,
            &[
                ("results.jsonl", format!("{episode}\n")),
                ("trajectory.jsonl", format!("{trajectory}\n")),
            ],
        );
        let run = RunSource::open(0, dir.path()).unwrap();
        let detail = run.detail(4).unwrap().unwrap();
        let thinking: Vec<&Value> = detail["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| &s["thinking"])
            .collect();
        assert_eq!(
            thinking,
            [
                &Value::Null,
                &json!({"text": "run it", "cut": false}),
                &json!({"text": "and then", "cut": true}),
            ]
        );
    }
}
