//! Recorded trajectories: read from upstream's `trajectory.jsonl` (to judge them, or to replay
//! their replies as the model, `--model replay:FILE`).

use std::collections::BTreeMap;
use std::path::Path;

use assay_records::TrajectoryRecord;
use assay_tasks::pybench::Task;

use super::transcript::{Replier, Reply, ReplyError, Transcript};

/// A trajectories file that cannot be used, with where.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct TrajectoryError {
    /// The file.
    pub file: String,
    /// The line, from 1 (0: the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Reads a trajectories file: one JSON object per line with at least `index` and `messages`
/// (each `{role, content}`); an index may appear once. Blank lines are skipped.
pub fn read_trajectories(path: &Path) -> Result<Vec<TrajectoryRecord>, TrajectoryError> {
    let file = path.display().to_string();
    let error = |line: usize, message: String| TrajectoryError {
        file: file.clone(),
        line,
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| error(0, e.to_string()))?;
    let mut records: Vec<TrajectoryRecord> = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let number = n + 1;
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| error(number, format!("not a JSON object: {e}")))?;
        for field in ["index", "messages"] {
            if value.get(field).is_none() {
                return Err(error(number, format!("field `{field}` is missing")));
            }
        }
        let mut value = value;
        // Upstream's indices are strings; a number is taken as the same index.
        if let Some(number) = value["index"].as_u64() {
            value["index"] = serde_json::Value::from(number.to_string());
        }
        let record: TrajectoryRecord = serde_json::from_value(value)
            .map_err(|e| error(number, format!("not a trajectory record: {e}")))?;
        if let Some(first) = seen.insert(record.index.clone(), number) {
            return Err(error(
                number,
                format!(
                    "field `index`: \"{}\" appears again (first on line {first})",
                    record.index
                ),
            ));
        }
        records.push(record);
    }
    Ok(records)
}

/// Replies taken from recorded trajectories, in order, whatever the observations say.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    replies: BTreeMap<String, Vec<String>>,
}

impl Replay {
    /// The assistant messages of each record.
    pub fn new(records: &[TrajectoryRecord]) -> Replay {
        let replies = records
            .iter()
            .map(|r| {
                let said = r
                    .messages
                    .iter()
                    .filter(|m| m.role == "assistant")
                    .map(|m| m.content.clone())
                    .collect();
                (r.index.clone(), said)
            })
            .collect();
        Replay { replies }
    }

    /// Whether the file has a trajectory for this task.
    pub fn has(&self, index: &str) -> bool {
        self.replies.contains_key(index)
    }
}

impl Replier for Replay {
    async fn reply(&self, task: &Task, transcript: &Transcript) -> Result<Reply, ReplyError> {
        let given = transcript.replies();
        self.replies
            .get(&task.index)
            .and_then(|said| said.get(given))
            .map(|content| Reply {
                content: content.clone(),
                ..Reply::default()
            })
            .ok_or(ReplyError::Exhausted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(lines: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trajectory.jsonl");
        std::fs::write(&path, lines).unwrap();
        (dir, path)
    }

    #[test]
    fn reads_upstreams_records_and_numbers_as_indices() {
        let (_dir, path) = write(concat!(
            r#"{"messages": [{"role": "assistant", "content": "a"}], "index": "3", "user": "q"}"#,
            "\n\n",
            r#"{"messages": [], "index": 7}"#,
            "\n"
        ));
        let records = read_trajectories(&path).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(
            (records[1].index.as_str(), records[0].user.as_str()),
            ("7", "q")
        );
    }

    #[test]
    fn errors_name_the_line_and_the_field() {
        for (text, want) in [
            (r#"{"index": "3"}"#, ":1: field `messages` is missing"),
            (r#"{"messages": []}"#, ":1: field `index` is missing"),
            (
                "{\"messages\": [], \"index\": \"3\"}\n{\"messages\": [], \"index\": \"3\"}",
                ":2: field `index`: \"3\" appears again (first on line 1)",
            ),
            ("[1, 2]", ":1: field `index` is missing"),
            ("{oops", ":1: not a JSON object"),
            (
                r#"{"messages": [{"role": "user"}], "index": "3"}"#,
                ":1: not a trajectory record: missing field `content`",
            ),
        ] {
            let (_dir, path) = write(text);
            let err = read_trajectories(&path).unwrap_err().to_string();
            assert!(err.contains(want), "{err} (wanted {want})");
            assert!(err.starts_with(&path.display().to_string()), "{err}");
        }
    }
}
