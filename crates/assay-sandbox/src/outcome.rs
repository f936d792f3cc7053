//! What a job, a script or a session cell came to.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use assay_records::{Captured, IntegrityFinding, IsolationLevel, Status, TestOutcome};

/// Resources a job used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// From sending the job to its verdict.
    #[serde(with = "seconds")]
    pub wall: Duration,
    /// The job's tree with a cgroup, the job process itself otherwise.
    #[serde(with = "optional_seconds")]
    pub cpu: Option<Duration>,
    /// Peak memory: the tree's with a cgroup, the largest process's otherwise.
    pub memory_peak_bytes: Option<u64>,
    /// Most processes and threads the job's tree had at once (what `Limits::processes`
    /// caps): known with a cgroup on a kernel that keeps the peak.
    #[serde(default)]
    pub processes_peak: Option<u64>,
}

/// An exception as Python described it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PyError {
    /// The exception's type name (`ValueError`).
    pub name: String,
    /// `str(exception)`.
    pub message: String,
    /// The formatted traceback (capped).
    pub traceback: String,
}

/// What a unittest job came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnittestOutcome {
    /// The verdict.
    pub status: Status,
    /// Why, in a sentence.
    pub reason: String,
    /// Every test the class defines, in the order they ran (unrun ones last).
    pub tests: Vec<TestOutcome>,
    /// `(test key, traceback)` of failures, then of errors, in the order `unittest` recorded
    /// them: together, what the official harness puts in a result's `details`.
    pub failures: Vec<(String, String)>,
    /// `(test key, traceback)` of errors, after the failures.
    pub errors: Vec<(String, String)>,
    /// The exception that stopped the code before its tests ran (status `error`), or that
    /// escaped the test run.
    pub error: Option<PyError>,
    /// What the code did to its tests instead of passing them: a verdict these decided is
    /// `fail` (or the module's `error`), its reason the first of them.
    pub integrity: Vec<IntegrityFinding>,
    /// Whether the job delivered its final summary. False when the process died, was killed
    /// or garbled its results: what the official harness, which waits for a summary it never
    /// gets, reports as a timeout.
    pub reported: bool,
    /// What the code wrote to stdout (capped).
    pub stdout: Captured,
    /// What the code wrote to stderr (capped).
    pub stderr: Captured,
    /// What it cost.
    pub usage: Usage,
    /// How well it was isolated.
    pub isolation: IsolationLevel,
}

/// A file a script left in its working directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputFile {
    /// Relative to the working directory.
    pub path: String,
    /// Its size on disk, in bytes.
    pub size: u64,
    /// The content (cut to what fit in the collection budget).
    #[serde(with = "base64_bytes")]
    pub data: Vec<u8>,
    /// Whether `data` was cut.
    pub truncated: bool,
}

/// What a script job came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptOutcome {
    /// The verdict.
    pub status: Status,
    /// Why, in a sentence.
    pub reason: String,
    /// `None` when the process was killed.
    pub exit_code: Option<i32>,
    /// The exception that ended it, if one did.
    pub error: Option<PyError>,
    /// What the code wrote to stdout (capped).
    pub stdout: Captured,
    /// What the code wrote to stderr (capped).
    pub stderr: Captured,
    /// The files it left in its working directory.
    pub files: Vec<OutputFile>,
    /// What it cost.
    pub usage: Usage,
    /// How well it was isolated.
    pub isolation: IsolationLevel,
}

impl ScriptOutcome {
    /// An end with nothing read back yet (no exit code, output, files or usage): what a
    /// script or command job starts its outcome from.
    pub(crate) fn ended(status: Status, reason: String) -> ScriptOutcome {
        ScriptOutcome {
            status,
            reason,
            exit_code: None,
            error: None,
            stdout: Captured::default(),
            stderr: Captured::default(),
            files: Vec::new(),
            usage: Usage::default(),
            isolation: IsolationLevel::Minimal,
        }
    }
}

/// What one session cell did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecOutcome {
    /// The verdict.
    pub status: Status,
    /// Why, in a sentence.
    pub reason: String,
    /// The cell's last value as IPython displays it (`text/plain`), if the cell ended on an
    /// expression that was not `None` (and not silenced with `;`).
    pub result: Option<String>,
    /// The exception that ended it, if one did.
    pub error: Option<PyError>,
    /// What the cell and the programs it started printed, stdout and stderr in the order
    /// written, as a notebook shows them (capped).
    pub output: Captured,
    /// Images the cell displayed (matplotlib figures, shown or still open at its end, and
    /// `display()`ed images), as PNG files.
    #[serde(with = "base64_list")]
    pub figures: Vec<Vec<u8>>,
    /// How long the cell took.
    #[serde(with = "seconds")]
    pub wall: Duration,
    /// Whether the session's state survived the cell (false after a kill).
    pub session_alive: bool,
    /// How well it was isolated.
    pub isolation: IsolationLevel,
}

mod seconds {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
    }
}

mod optional_seconds {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<f64>::deserialize(d)?
            .map(|secs| Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom))
            .transpose()
    }
}

mod base64_bytes {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(data: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(data))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(serde::de::Error::custom)
    }
}

mod base64_list {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(items: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        let engine = base64::engine::general_purpose::STANDARD;
        s.collect_seq(items.iter().map(|item| engine.encode(item)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        let engine = base64::engine::general_purpose::STANDARD;
        Vec::<String>::deserialize(d)?
            .into_iter()
            .map(|text| engine.decode(text).map_err(serde::de::Error::custom))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_fields_round_trip_through_json() {
        let file = OutputFile {
            path: "out/plot.png".into(),
            size: 4,
            data: vec![0, 159, 146, 150],
            truncated: false,
        };
        let text = serde_json::to_string(&file).unwrap();
        assert_eq!(serde_json::from_str::<OutputFile>(&text).unwrap(), file);
    }
}
