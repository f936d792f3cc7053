//! The environment fingerprint: what verdicts depend on beyond the run's settings, written to
//! the manifest by every run that executes code. Shards run on different machines are one run
//! only if their fingerprints are equal, so `assay merge` compares them field by field, and a
//! run resumed on another machine must match the one that started it.

use serde::{Deserialize, Serialize};

use crate::isolation::{Enforcement, IsolationLevel};

/// The machine-side facts a verdict depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// The sandbox's Python, `X.Y.Z`.
    pub python: String,
    /// The environment's profile (`bigcodebench`, `pybench`, ...).
    pub profile: String,
    /// Digest of the installed distributions' sorted `name==version` lines: the locked set
    /// as installed, not as asked for.
    pub packages: String,
    /// How many distributions that is (to read, beside the digest).
    pub package_count: usize,
    /// The NLTK data packages installed (tasks needing others are judged `infra`).
    pub nltk_data: Vec<String>,
    /// Whether jobs had the host's network.
    pub network: bool,
    /// The isolation every job reached.
    pub isolation: IsolationLevel,
    /// How memory limits were enforced (a cgroup counts a tree's resident memory, rlimits
    /// each process's address space: a sample can pass under one and fail under the other).
    pub memory_limit: Enforcement,
}

impl Fingerprint {
    /// The first field (alphabetically) where `self` and `other` differ: its name, then each
    /// side's value as JSON.
    pub fn difference(&self, other: &Fingerprint) -> Option<(String, String, String)> {
        let a = serde_json::to_value(self).unwrap_or_default();
        let b = serde_json::to_value(other).unwrap_or_default();
        let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
            return None;
        };
        a.iter().find_map(|(field, here)| {
            let there = b.get(field).cloned().unwrap_or_default();
            (*here != there).then(|| (field.clone(), here.to_string(), there.to_string()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Fingerprint {
        Fingerprint {
            python: "3.11.7".into(),
            profile: "bigcodebench".into(),
            packages: "abc".into(),
            package_count: 3,
            nltk_data: vec!["punkt".into(), "stopwords".into()],
            network: false,
            isolation: IsolationLevel::Full,
            memory_limit: Enforcement::Cgroup,
        }
    }

    #[test]
    fn the_first_differing_field_is_named_with_both_values() {
        assert_eq!(sample().difference(&sample()), None);
        let mut other = sample();
        other.nltk_data.pop();
        assert_eq!(
            sample().difference(&other),
            Some((
                "nltk_data".into(),
                r#"["punkt","stopwords"]"#.into(),
                r#"["punkt"]"#.into()
            ))
        );
        other.isolation = IsolationLevel::Partial;
        assert_eq!(
            sample().difference(&other),
            Some((
                "isolation".into(),
                r#""full""#.into(),
                r#""partial""#.into()
            ))
        );
    }
}
