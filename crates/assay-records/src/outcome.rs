//! The vocabulary of a job's outcome that records keep: its status, its tests, its captured
//! output. The sandbox produces these; run directories store them; reports read them.

use serde::{Deserialize, Serialize};

/// The verdict of a job. Each comes with a human-readable reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Unittest: every test ran and passed (skips count as passes, as in the official
    /// harness). Script: exit code 0. Cell: ran without raising.
    Pass,
    /// Unittest: a test failed or errored, a test crashed the process, or the code tampered
    /// with the test machinery.
    Fail,
    /// The code failed before any test ran (syntax error, import error, exception at module
    /// level); a script's non-zero exit; a cell that raised.
    Error,
    /// The wall-clock or CPU-time limit was reached.
    Timeout,
    /// The memory limit was reached.
    Oom,
    /// The harness or the environment failed, not the code: no sandbox could be started, the
    /// worker died, the isolation required could not be reached.
    Infra,
}

impl Status {
    /// The word records use.
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Error => "error",
            Status::Timeout => "timeout",
            Status::Oom => "oom",
            Status::Infra => "infra",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How one test method ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TestResult {
    /// It passed.
    #[serde(rename = "pass")]
    Pass,
    /// An assertion failed.
    #[serde(rename = "fail")]
    Fail,
    /// It raised.
    #[serde(rename = "error")]
    Error,
    /// It was skipped.
    #[serde(rename = "skip")]
    Skip,
    /// An expected failure failed.
    #[serde(rename = "xfail")]
    ExpectedFailure,
    /// An expected failure passed.
    #[serde(rename = "xpass")]
    UnexpectedSuccess,
    /// The process died (or was killed) before the test finished.
    #[serde(rename = "crashed")]
    Crashed,
    /// The test never started.
    #[serde(rename = "not-run")]
    NotRun,
}

impl TestResult {
    /// Whether the test counts as passing, as officially: it passed, was skipped, or failed
    /// as expected.
    pub fn counts_as_passing(&self) -> bool {
        matches!(
            self,
            TestResult::Pass | TestResult::Skip | TestResult::ExpectedFailure
        )
    }

    /// The word records use.
    pub fn as_str(&self) -> &'static str {
        match self {
            TestResult::Pass => "pass",
            TestResult::Fail => "fail",
            TestResult::Error => "error",
            TestResult::Skip => "skip",
            TestResult::ExpectedFailure => "xfail",
            TestResult::UnexpectedSuccess => "xpass",
            TestResult::Crashed => "crashed",
            TestResult::NotRun => "not-run",
        }
    }
}

/// One test method's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestOutcome {
    /// The method name (the key the official results use).
    pub name: String,
    /// How it ended.
    pub result: TestResult,
    /// The traceback of a failure or error, a skip's reason.
    pub detail: String,
    /// How long it ran.
    pub seconds: f64,
    /// CPU time the job's processes used while it ran, read by the supervisor from the job's
    /// cgroup (or `/proc`) between the test's start and end events; none where the meter could
    /// not be read. The events come from the job, so this is a measure, not a proof.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<f64>,
}

/// What a job wrote to one of its output streams, capped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Captured {
    /// The first bytes (up to the cap), decoded as UTF-8 with replacement characters.
    pub text: String,
    /// Every byte the job wrote, kept or not.
    pub total_bytes: u64,
    /// Whether bytes were left out.
    pub truncated: bool,
}

impl Captured {
    /// At most `bytes` of the text (cut at a character boundary), still counting every byte
    /// the job wrote: what a record keeps of a stream.
    pub fn capped(mut self, bytes: usize) -> Captured {
        if self.text.len() > bytes {
            let mut cut = bytes;
            while !self.text.is_char_boundary(cut) {
                cut -= 1;
            }
            self.text.truncate(cut);
            self.truncated = true;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_serialize_as_the_documented_words() {
        for (status, word) in [
            (Status::Pass, "pass"),
            (Status::Fail, "fail"),
            (Status::Error, "error"),
            (Status::Timeout, "timeout"),
            (Status::Oom, "oom"),
            (Status::Infra, "infra"),
        ] {
            assert_eq!(serde_json::to_value(status).unwrap(), word);
            assert_eq!(status.to_string(), word);
        }
    }

    #[test]
    fn test_results_name_themselves_as_records_do() {
        for result in [
            TestResult::Pass,
            TestResult::Fail,
            TestResult::Error,
            TestResult::Skip,
            TestResult::ExpectedFailure,
            TestResult::UnexpectedSuccess,
            TestResult::Crashed,
            TestResult::NotRun,
        ] {
            assert_eq!(serde_json::to_value(result).unwrap(), result.as_str());
        }
    }

    #[test]
    fn a_capped_stream_keeps_whole_characters_and_says_it_was_cut() {
        let full = Captured {
            text: "aé€".into(),
            total_bytes: 6,
            truncated: false,
        };
        let cut = full.clone().capped(4);
        assert_eq!(
            (cut.text.as_str(), cut.total_bytes, cut.truncated),
            ("aé", 6, true)
        );
        assert_eq!(full.clone().capped(6), full);
    }
}
