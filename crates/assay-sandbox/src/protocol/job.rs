//! A job process's pipes: the job on its control pipe (fd 3), its events on its results pipe
//! (fd 4); frames of a 4-byte little-endian length and UTF-8 JSON (`frames`). The other end is
//! `python/assay_worker/child.py` and the job kinds it runs.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};

use super::Rusage;
use crate::outcome::PyError;
use assay_records::{Conditions, IntegrityFinding, IntegrityKind, Layers, TestResult};

/// Supervisor → job process. (Only the worker reads these, so no `deny_unknown_fields`: serde
/// cannot apply it across the flattened `base`.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Control {
    /// Run code and its unittest class in one module (the first frame, once).
    Unittest {
        #[serde(flatten)]
        base: JobBase,
        code: String,
        test: String,
        test_class: String,
        /// Install the official harness's process guards.
        guards: bool,
        files: Vec<FileData>,
        dirs: Vec<String>,
    },
    /// Run code as `__main__` (the first frame, once).
    Script {
        #[serde(flatten)]
        base: JobBase,
        code: String,
        argv: Vec<String>,
        files: Vec<FileData>,
        /// What the script reads on its standard input (`None`: `/dev/null`).
        stdin: Option<String>,
    },
    /// Become a persistent interpreter and wait for cells (the first frame, once).
    Session {
        #[serde(flatten)]
        base: JobBase,
        files: Vec<FileData>,
        dirs: Vec<String>,
    },
    /// Run a program in the working directory (the first frame, once).
    Command {
        #[serde(flatten)]
        base: JobBase,
        /// The program and its arguments; the program is looked up on the job's `PATH`.
        argv: Vec<String>,
        files: Vec<FileData>,
        dirs: Vec<String>,
        /// Files written under the job's home (`HOME`), not read back.
        home_files: Vec<FileData>,
        /// Relay the job's loopback port to a socket the supervisor serves.
        relay: Option<RelaySpec>,
    },
    /// A session's cell.
    Exec {
        /// Echoed in its `exec_done`.
        id: u64,
        code: String,
        /// The cell's CPU-time limit.
        cpu_seconds: u64,
    },
    /// The session's end.
    Close {},
}

/// What every job kind starts from: its directories, environment and limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct JobBase {
    /// The whole environment (the worker's is cleared).
    pub env: BTreeMap<String, String>,
    /// The working directory, made if missing.
    pub cwd: String,
    /// Directories made before the job (its home and temporary directory).
    pub make_dirs: Vec<String>,
    pub limits: Rlimits,
    #[cfg_attr(test, schemars(with = "serde_json::Value"))]
    pub conditions: Conditions,
}

/// The rlimits a job process sets on itself (soft and hard alike); `null`: not set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct Rlimits {
    /// `RLIMIT_CPU`, on top of what the process has already used.
    pub cpu_seconds: Option<u64>,
    pub file_size_bytes: u64,
    pub open_files: u64,
    /// `RLIMIT_NPROC`.
    pub processes: Option<u64>,
    /// `RLIMIT_DATA`.
    pub data_bytes: Option<u64>,
    pub stack_bytes: Option<u64>,
}

/// A TCP port on the job's loopback whose connections are relayed to a Unix socket in the
/// workspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct RelaySpec {
    pub port: u16,
    /// The socket's path as the job sees it.
    pub socket: String,
}

/// A file written into the working directory before the job starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct FileData {
    /// Relative and plain.
    pub path: String,
    /// Base64.
    pub data: String,
}

/// Job process → supervisor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(tag = "ev", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Event {
    /// Confined, waiting for its job (the first frame).
    Ready {
        #[serde(deserialize_with = "every_layer")]
        #[cfg_attr(test, schemars(with = "serde_json::Value"))]
        layers: Layers,
    },
    /// It could not confine itself (the first frame, instead of `ready`); it exits.
    SetupFailed { error: String },
    /// The job is prepared and its untrusted code starts now.
    Started {},
    /// The harness inside the process failed: preparing the job, or around the code.
    InternalError { stage: Stage, error: String },
    /// A unittest job's module ran and its tests were collected, in order.
    Loaded { tests: Vec<String> },
    /// A test starts (its own budget, if it has one, counts from here).
    TestStart { name: String },
    /// The running test's own body ran to its end (sent by the witness compiled into it).
    BodyDone { name: String },
    /// A test ended.
    Test {
        name: String,
        outcome: Outcome,
        /// Its traceback or skip reason (capped).
        detail: String,
        seconds: f64,
        /// The exception that ended its body, if one did.
        ended: Option<Ended>,
    },
    /// A class or module fixture (`setUpClass`...) reported outside any test.
    Fixture { outcome: Outcome, detail: String },
    /// A unittest job's module raised before its tests ran (the final frame).
    ModuleError {
        error: ErrorFrame,
        /// What the code did to the test machinery.
        integrity: Vec<Finding>,
        rusage: Rusage,
    },
    /// A unittest job's tests ran (the final frame).
    TestsDone(TestsDone),
    /// A script ended (the final frame).
    ScriptDone {
        exit_code: i32,
        /// The uncaught exception, if one ended it.
        error: Option<ErrorFrame>,
        rusage: Rusage,
    },
    /// A command job's program ended (the final frame).
    CommandDone {
        /// Its exit code, unless a signal ended it.
        exit_code: Option<i32>,
        /// The signal that ended it.
        signal: Option<i32>,
        rusage: Rusage,
    },
    /// A session's cell ended.
    ExecDone(ExecDone),
}

/// How a test (or a fixture) ended, as the worker reports it: the record's `TestResult` less
/// what only the supervisor concludes (`crashed`, `not-run`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
    Pass,
    Fail,
    Error,
    Skip,
    Xfail,
    Xpass,
}

impl From<Outcome> for TestResult {
    fn from(outcome: Outcome) -> TestResult {
        match outcome {
            Outcome::Pass => TestResult::Pass,
            Outcome::Fail => TestResult::Fail,
            Outcome::Error => TestResult::Error,
            Outcome::Skip => TestResult::Skip,
            Outcome::Xfail => TestResult::ExpectedFailure,
            Outcome::Xpass => TestResult::UnexpectedSuccess,
        }
    }
}

/// Where the harness inside the job process failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub(crate) enum Stage {
    /// Before `started`: the harness's own failure.
    Prepare,
    /// After it: next to untrusted code.
    Run,
}

/// The summary of a unittest job's tests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct TestsDone {
    pub tests_run: u64,
    /// (test, traceback) of each failure, as unittest's result lists them.
    pub failures: Vec<(String, String)>,
    /// (test, traceback) of each error.
    pub errors: Vec<(String, String)>,
    /// What escaped unittest and stopped the run, if anything did.
    pub aborted: Option<ErrorFrame>,
    /// What the code did to the test machinery.
    pub integrity: Vec<Finding>,
    pub rusage: Rusage,
}

/// The exception that ended a test's body before its end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct Ended {
    /// The type's name.
    #[serde(rename = "type")]
    pub name: String,
    /// The answer's function it was raised in (the innermost in its traceback), if any.
    pub raised_in: Option<String>,
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.raised_in {
            Some(function) => write!(f, "{} raised from {function}", self.name),
            None => write!(f, "{} raised", self.name),
        }
    }
}

/// One thing the worker found the code did to the test machinery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct Finding {
    #[cfg_attr(test, schemars(with = "String"))]
    pub kind: IntegrityKind,
    /// The test it happened in, if one ran.
    pub test: Option<String>,
    pub what: String,
}

impl From<Finding> for IntegrityFinding {
    fn from(f: Finding) -> IntegrityFinding {
        IntegrityFinding {
            kind: f.kind,
            test: f.test,
            what: f.what,
        }
    }
}

/// A session cell's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct ExecDone {
    /// The `exec`'s id.
    pub id: u64,
    /// The last value's `text/plain`, if the cell ended on one.
    pub result: Option<String>,
    /// The exception that ended the cell.
    pub error: Option<ErrorFrame>,
    /// PNGs, base64.
    pub figures: Vec<String>,
    /// Why figures were dropped (too many, too large).
    pub figure_error: Option<String>,
}

/// An exception as the worker describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct ErrorFrame {
    /// The type's name.
    #[serde(rename = "type")]
    pub name: String,
    /// `str(exception)` (capped).
    pub message: String,
    /// The formatted traceback (capped).
    pub traceback: String,
}

impl From<ErrorFrame> for PyError {
    fn from(e: ErrorFrame) -> PyError {
        PyError {
            name: e.name,
            message: e.message,
            traceback: e.traceback,
        }
    }
}

impl Event {
    /// The frame's tag, for messages about a frame that is refused or out of place. Taken
    /// from its serialized form, so it is the wire's name and cannot drift from it (only
    /// error paths pay for the serialization).
    pub fn tag(&self) -> String {
        let value = serde_json::to_value(self).unwrap_or_default();
        value
            .get("ev")
            .and_then(|t| t.as_str())
            .unwrap_or("?")
            .to_string()
    }

    /// What the process said it used, if the frame is a final report.
    pub fn rusage(&self) -> Option<Rusage> {
        match self {
            Event::ModuleError { rusage, .. }
            | Event::ScriptDone { rusage, .. }
            | Event::CommandDone { rusage, .. } => Some(*rusage),
            Event::TestsDone(done) => Some(done.rusage),
            _ => None,
        }
    }
}

/// `Layers` as a job process must report them: every layer named, and no other. (The record
/// type defaults missing layers to `false`, for run directories written before a layer
/// existed; on the wire a missing or renamed layer is an error, not a layer quietly off.)
fn every_layer<'de, D: Deserializer<'de>>(d: D) -> Result<Layers, D::Error> {
    // The layers' names, as `Layers` serializes them: read once, not per job process.
    static KNOWN: LazyLock<Vec<String>> = LazyLock::new(|| {
        let layers = serde_json::to_value(Layers::default()).unwrap_or_default();
        layers
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k.clone())
            .collect()
    });
    let given = serde_json::Map::deserialize(d)?;
    if let Some(missing) = KNOWN.iter().find(|k| !given.contains_key(*k)) {
        return Err(D::Error::custom(format!("layer `{missing}` missing")));
    }
    if let Some(unknown) = given.keys().find(|k| !KNOWN.contains(k)) {
        return Err(D::Error::custom(format!("unknown layer `{unknown}`")));
    }
    serde_json::from_value(serde_json::Value::Object(given)).map_err(D::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::parse;

    const LAYERS: &str = r#"{"user_ns": true, "mount_ns": true, "pid_ns": true, "net_ns": true,
        "network": false, "ipc_ns": true, "private_tmp": true, "private_shm": true,
        "unprivileged": true, "no_new_privs": true, "landlock_abi": 6, "seccomp": true}"#;

    #[test]
    fn events_parse_whole_or_not_at_all() {
        let ready = format!(r#"{{"ev": "ready", "layers": {LAYERS}}}"#);
        let Ok(Event::Ready { layers }) = parse::<Event>(ready.as_bytes()) else {
            panic!("a full ready frame parses");
        };
        assert_eq!(layers.landlock_abi, 6);
        let refused = |frame: &str| parse::<Event>(frame.as_bytes()).unwrap_err().to_string();
        // A field renamed, one missing, one added, an unknown tag, no tag, not JSON.
        let renamed =
            r#"{"ev": "test", "name": "t", "result": "pass", "detail": "", "seconds": 0}"#;
        assert!(refused(renamed).starts_with("unknown field `result`"));
        let concluded = r#"{"ev": "test", "name": "t", "outcome": "crashed", "detail": "",
            "seconds": 0}"#;
        assert!(refused(concluded).starts_with("unknown variant `crashed`"));
        assert!(refused(r#"{"ev": "test_start"}"#).starts_with("missing field `name`"));
        assert!(refused(r#"{"ev": "started", "x": 1}"#).starts_with("unknown field `x`"));
        assert!(refused(r#"{"ev": "victory"}"#).starts_with("unknown variant `victory`"));
        assert!(refused(r#"{"name": "t"}"#).starts_with("missing field `ev`"));
        let garbage = refused("{{{");
        assert!(garbage.ends_with("what arrived: {{{"), "{garbage}");
        // Layers: every one named, no other.
        let missing = ready.replace(r#""seccomp": true"#, r#""seccomp_x": true"#);
        assert!(refused(&missing).contains("layer `seccomp` missing"));
        let extra = ready.replace(r#""seccomp": true"#, r#""seccomp": true, "gpu": true"#);
        assert!(refused(&extra).contains("unknown layer `gpu`"));
    }

    #[test]
    fn a_refusal_quotes_a_long_frame_cut_short() {
        let long = format!(
            r#"{{"ev": "loaded", "tests": ["{}"], "x": 0}}"#,
            "t".repeat(5000)
        );
        let refused = parse::<Event>(long.as_bytes()).unwrap_err();
        let tail = format!("tt\"], \"x\": 0}} ({} bytes)", long.len());
        assert!(refused.arrived.ends_with(&tail), "{}", refused.arrived);
        assert!(refused.arrived.starts_with(r#"{"ev": "loaded""#));
        assert!(refused.arrived.chars().count() < 350);
    }
}
