//! The official verdict of a sample, and why the environment decided one instead.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

/// The official harness's three statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OfficialStatus {
    /// Every test passed.
    Pass,
    /// A test failed, or the code did not run.
    Fail,
    /// The time limit was reached, or the process ended without its report.
    Timeout,
}

impl OfficialStatus {
    /// The word the official files use.
    pub fn as_str(self) -> &'static str {
        match self {
            OfficialStatus::Pass => "pass",
            OfficialStatus::Fail => "fail",
            OfficialStatus::Timeout => "timeout",
        }
    }
}

/// The official result of one sample, as the official harness writes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Official {
    /// The official status word.
    pub status: OfficialStatus,
    /// Test name → traceback, or `ALL` → message; empty for `pass` and `timeout`. Ordered as
    /// the official harness inserts them.
    #[serde(deserialize_with = "ordered_pairs")]
    pub details: Vec<(String, String)>,
}

impl Serialize for Official {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("status", &self.status)?;
        map.serialize_entry("details", &Details(&self.details))?;
        map.end()
    }
}

/// Details as a JSON object in insertion order.
pub struct Details<'a>(pub &'a [(String, String)]);

impl Serialize for Details<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (key, value) in self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

fn ordered_pairs<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<(String, String)>, D::Error> {
    struct Visitor;
    impl<'de> serde::de::Visitor<'de> for Visitor {
        type Value = Vec<(String, String)>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object of strings")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut pairs = Vec::new();
            while let Some(pair) = map.next_entry()? {
                pairs.push(pair);
            }
            Ok(pairs)
        }
    }
    d.deserialize_map(Visitor)
}

impl Official {
    /// A verdict with `status` and `details` in the official order.
    pub fn new(status: OfficialStatus, details: Vec<(String, String)>) -> Self {
        Official { status, details }
    }

    /// Whether the official harness counts it as passing.
    pub fn passed(&self) -> bool {
        self.status == OfficialStatus::Pass
    }
}

/// Why the environment rather than the sample decided a result, when it did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "cause", content = "detail")]
pub enum InfraCause {
    /// The engine itself failed (see the outcome's reason).
    Engine(String),
    /// A library the task uses is not installed here.
    MissingModule(String),
    /// NLTK data the task needs is not installed (the official image downloads it).
    NltkData(String),
    /// The task reached for the network, which the sandbox does not have.
    Network(String),
    /// The model was never heard from: its request failed for good (the reason given).
    NoAnswer(String),
}

impl InfraCause {
    /// The word records use for the cause (`network`, `missing-module`...).
    pub fn as_str(&self) -> &'static str {
        match self {
            InfraCause::Engine(_) => "engine",
            InfraCause::MissingModule(_) => "missing-module",
            InfraCause::NltkData(_) => "nltk-data",
            InfraCause::Network(_) => "network",
            InfraCause::NoAnswer(_) => "no-answer",
        }
    }
}

impl std::fmt::Display for InfraCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InfraCause::Engine(reason) => write!(f, "{reason}"),
            InfraCause::MissingModule(module) => {
                write!(f, "module `{module}` is not installed in this environment")
            }
            InfraCause::NltkData(resource) => {
                write!(f, "NLTK data `{resource}` is not installed (`assay env setup` fetches it where it can)")
            }
            InfraCause::NoAnswer(why) => write!(f, "no answer from the model: {why}"),
            InfraCause::Network(what) => {
                write!(
                    f,
                    "needs the internet ({what}); the sandbox has none (--allow-network)"
                )
            }
        }
    }
}
