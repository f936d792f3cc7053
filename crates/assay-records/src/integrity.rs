//! What a sample did to its tests instead of passing them: the findings that decide a verdict
//! by integrity (docs/sandbox.md, "Faking a pass").

use serde::{Deserialize, Serialize};

/// What kind of thing the code did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IntegrityKind {
    /// A test ended as skipped: an exception (`SkipTest`, `skipTest()`) ended its body, or a
    /// class fixture skipped it before it started.
    Skipped,
    /// A test recorded a pass (or an expected failure) although its body did not run to its
    /// end: an exception unittest swallows (`_ShouldStop`), an outcome rewritten.
    EndedEarly,
    /// A test's own body never ran (its method replaced or emptied).
    NotRun,
    /// unittest's machinery, or the test instance, was changed: a method replaced, a function's
    /// code or defaults rewritten, a module swapped.
    Tampered,
    /// A test method was not the test source's own code once the class existed.
    Altered,
    /// A trace or profile function was installed (it can rewrite a test's locals or skip its
    /// assertions).
    Traced,
    /// Code other than a test's own body called the witness of its end.
    Forged,
    /// A value whose `__eq__` or `__ne__` is the answer's own code claimed an equality that the
    /// value it was compared with did not claim back.
    Equality,
}

impl IntegrityKind {
    /// The word records use.
    pub fn as_str(&self) -> &'static str {
        match self {
            IntegrityKind::Skipped => "skipped",
            IntegrityKind::EndedEarly => "ended-early",
            IntegrityKind::NotRun => "not-run",
            IntegrityKind::Tampered => "tampered",
            IntegrityKind::Altered => "altered",
            IntegrityKind::Traced => "traced",
            IntegrityKind::Forged => "forged",
            IntegrityKind::Equality => "equality",
        }
    }

    /// How a reason says it, before the detail.
    fn says(&self) -> &'static str {
        match self {
            IntegrityKind::Skipped => "the code skipped its tests",
            IntegrityKind::EndedEarly => "the code ended a test early without a failure",
            IntegrityKind::NotRun => "a test's own body never ran",
            IntegrityKind::Tampered => "the code tampered with unittest",
            IntegrityKind::Altered => "the code altered the test class",
            IntegrityKind::Traced => "the code installed a trace function",
            IntegrityKind::Forged => "the code called the witness of a test's end itself",
            IntegrityKind::Equality => "a returned value claimed an equality it does not have",
        }
    }
}

/// One thing the code did, and in which test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntegrityFinding {
    /// What kind of thing.
    pub kind: IntegrityKind,
    /// The test it happened in; none when outside any (at import, in a class fixture).
    pub test: Option<String>,
    /// What exactly (`SkipTest raised from task_func`, `TestCase.assertEqual`).
    pub what: String,
}

impl std::fmt::Display for IntegrityFinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind.says(), self.what)?;
        match &self.test {
            Some(test) => write!(f, " in {test}"),
            None => Ok(()),
        }
    }
}

/// The reason a verdict decided by `findings` gives: the first, and how many more.
pub fn reason(findings: &[IntegrityFinding]) -> Option<String> {
    let first = findings.first()?;
    Some(match findings.len() {
        1 => first.to_string(),
        n => format!("{first} (and {} more)", n - 1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_says_what_was_done_and_where() {
        let skipped = IntegrityFinding {
            kind: IntegrityKind::Skipped,
            test: Some("test_case_1".into()),
            what: "SkipTest raised from task_func".into(),
        };
        assert_eq!(
            reason(std::slice::from_ref(&skipped)).unwrap(),
            "the code skipped its tests: SkipTest raised from task_func in test_case_1"
        );
        let tampered = IntegrityFinding {
            kind: IntegrityKind::Tampered,
            test: None,
            what: "TestCase.assertEqual".into(),
        };
        assert_eq!(
            reason(&[tampered, skipped]).unwrap(),
            "the code tampered with unittest: TestCase.assertEqual (and 1 more)"
        );
        assert_eq!(reason(&[]), None);
    }

    #[test]
    fn kinds_name_themselves_as_records_do() {
        for kind in [
            IntegrityKind::Skipped,
            IntegrityKind::EndedEarly,
            IntegrityKind::NotRun,
            IntegrityKind::Tampered,
            IntegrityKind::Altered,
            IntegrityKind::Traced,
            IntegrityKind::Forged,
            IntegrityKind::Equality,
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }
}
