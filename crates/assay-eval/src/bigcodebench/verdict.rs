//! From the engine's outcome to BigCodeBench's verdict: the official status word and details,
//! or `infra` when the environment, not the sample, decided the result.

use std::collections::BTreeSet;

pub use assay_records::verdict::Details;
use assay_records::{InfraCause, Official, OfficialStatus};
use assay_sandbox::{Status, UnittestOutcome};

/// Python dict semantics: a repeated key keeps its first position and takes the last value.
fn insert(details: &mut Vec<(String, String)>, key: &str, value: &str) {
    match details.iter_mut().find(|(k, _)| k == key) {
        Some(entry) => entry.1 = value.to_string(),
        None => details.push((key.to_string(), value.to_string())),
    }
}

/// The official verdict of an outcome; `None` for `infra` (there is none to give).
pub fn official(outcome: &UnittestOutcome) -> Option<Official> {
    let all = |message: &str| vec![("ALL".to_string(), message.to_string())];
    let from_tests = || {
        let mut details = Vec::new();
        for (key, trace) in outcome.failures.iter().chain(&outcome.errors) {
            insert(&mut details, key, trace);
        }
        details
    };
    Some(match outcome.status {
        Status::Infra => return None,
        Status::Pass => Official::new(OfficialStatus::Pass, Vec::new()),
        Status::Timeout => Official::new(OfficialStatus::Timeout, Vec::new()),
        // The official child reports only at its very end: a process that dies or is killed
        // before leaves its status unknown, which the harness calls a timeout.
        _ if !outcome.reported => Official::new(OfficialStatus::Timeout, Vec::new()),
        Status::Error => Official::new(
            OfficialStatus::Fail,
            all(outcome.error.as_ref().map_or("", |e| e.message.as_str())),
        ),
        // An exception escaping the test run skips the official per-test details.
        Status::Fail if outcome.error.is_some() => Official::new(
            OfficialStatus::Fail,
            all(outcome.error.as_ref().map_or("", |e| e.message.as_str())),
        ),
        Status::Fail | Status::Oom => {
            let details = from_tests();
            if details.is_empty() {
                Official::new(OfficialStatus::Fail, all(&outcome.reason))
            } else {
                Official::new(OfficialStatus::Fail, details)
            }
        }
    })
}

/// Judges a sample that gamed its tests as the official harness would: from the failures and
/// errors unittest recorded alone (`--gamed-as-official`). Its findings stay in the record.
pub fn as_official(outcome: &mut UnittestOutcome) {
    let clean = outcome.failures.is_empty() && outcome.errors.is_empty() && outcome.error.is_none();
    if outcome.status == Status::Fail && outcome.reported && !outcome.integrity.is_empty() && clean
    {
        outcome.status = Status::Pass;
        outcome.reason = format!(
            "no test failed, as the official harness counts (judged as officially; {})",
            outcome.reason
        );
    }
}

/// What the environment is missing, as far as classification goes.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// Top-level modules tasks declare that this environment cannot import.
    pub missing_modules: BTreeSet<String>,
    /// Whether jobs had the network (then network failures are the sample's).
    pub network: bool,
}

impl Environment {
    /// What the engine's environment lacks of the libraries `dataset`'s tasks declare, for
    /// jobs with the network or not: probed once per dataset by every judging pipeline.
    pub async fn probe(
        engine: &assay_sandbox::Engine,
        dataset: &assay_tasks::bigcodebench::Dataset,
        network: bool,
    ) -> Result<Environment, crate::error::EvalError> {
        let libraries = dataset
            .tasks
            .iter()
            .flat_map(|t| t.libs.iter().map(String::as_str));
        Ok(Environment {
            missing_modules: crate::probe::missing_modules(engine, libraries).await?,
            network,
        })
    }
}

/// The infra cause of an outcome, if every failure in it comes from the environment. A sample
/// that also fails for its own reasons keeps its verdict: it would fail anywhere.
pub fn infra_cause(outcome: &UnittestOutcome, env: &Environment) -> Option<InfraCause> {
    match outcome.status {
        Status::Infra => return Some(InfraCause::Engine(outcome.reason.clone())),
        Status::Fail | Status::Error => {}
        _ => return None,
    }
    let texts: Vec<&str> = match &outcome.error {
        Some(error) => vec![error.traceback.as_str()],
        None => outcome
            .failures
            .iter()
            .chain(&outcome.errors)
            .map(|(_, trace)| trace.as_str())
            .collect(),
    };
    if texts.is_empty() {
        return None;
    }
    let causes: Vec<Option<InfraCause>> = texts.iter().map(|t| classify(t, env)).collect();
    if causes.iter().all(Option::is_some) {
        causes.into_iter().flatten().next()
    } else {
        None
    }
}

/// The environmental cause of one traceback, if it shows one.
fn classify(trace: &str, env: &Environment) -> Option<InfraCause> {
    if let Some(module) = trace
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("ModuleNotFoundError: No module named '"))
        .and_then(|rest| rest.split('\'').next())
    {
        let top = module.split('.').next().unwrap_or(module);
        if env.missing_modules.contains(top) {
            return Some(InfraCause::MissingModule(top.to_string()));
        }
    }
    if trace.contains("LookupError") && trace.contains("nltk") {
        // NLTK colours the name: "Resource \x1b[93mpunkt\x1b[0m not found."
        let plain = trace.replace("\u{1b}[93m", "").replace("\u{1b}[0m", "");
        let resource = plain
            .split("Resource ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or("?")
            .to_string();
        return Some(InfraCause::NltkData(resource));
    }
    if !env.network {
        const SIGNS: &[&str] = &[
            "Temporary failure in name resolution",
            "Name or service not known",
            "No address associated with hostname",
            "Network is unreachable",
            "[Errno -3]",
            "[Errno -2]",
            "[Errno 101]",
        ];
        if let Some(sign) = SIGNS.iter().find(|s| trace.contains(*s)) {
            return Some(InfraCause::Network(
                sign.trim_matches(['[', ']']).to_string(),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use assay_sandbox::{Captured, IsolationLevel, PyError, Usage};

    fn outcome(status: Status) -> UnittestOutcome {
        UnittestOutcome {
            status,
            reason: "because".into(),
            tests: Vec::new(),
            failures: Vec::new(),
            errors: Vec::new(),
            error: None,
            integrity: Vec::new(),
            reported: true,
            stdout: Captured::default(),
            stderr: Captured::default(),
            usage: Usage::default(),
            isolation: IsolationLevel::Full,
        }
    }

    fn error(name: &str, message: &str, traceback: &str) -> PyError {
        PyError {
            name: name.into(),
            message: message.into(),
            traceback: traceback.into(),
        }
    }

    #[test]
    fn official_statuses_and_details() {
        assert_eq!(
            official(&outcome(Status::Pass)).unwrap(),
            Official::new(OfficialStatus::Pass, vec![])
        );
        assert_eq!(
            official(&outcome(Status::Timeout)).unwrap().status,
            OfficialStatus::Timeout
        );
        assert!(official(&outcome(Status::Infra)).is_none());

        let mut failed = outcome(Status::Fail);
        failed.failures = vec![
            ("test_a".into(), "tb a".into()),
            ("test_b".into(), "tb b1".into()),
        ];
        failed.errors = vec![
            ("test_b".into(), "tb b2".into()),
            ("test_c".into(), "tb c".into()),
        ];
        let verdict = official(&failed).unwrap();
        assert_eq!(verdict.status, OfficialStatus::Fail);
        let keys: Vec<_> = verdict
            .details
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        assert_eq!(keys, ["test_a=tb a", "test_b=tb b2", "test_c=tb c"]);
        assert_eq!(
            serde_json::to_string(&verdict).unwrap(),
            r#"{"status":"fail","details":{"test_a":"tb a","test_b":"tb b2","test_c":"tb c"}}"#
        );

        let mut module = outcome(Status::Error);
        module.error = Some(error("NameError", "name 'x' is not defined", "tb"));
        assert_eq!(
            official(&module).unwrap(),
            Official::new(
                OfficialStatus::Fail,
                vec![("ALL".into(), "name 'x' is not defined".into())]
            )
        );

        let mut crashed = outcome(Status::Fail);
        crashed.reported = false;
        assert_eq!(
            official(&crashed).unwrap(),
            Official::new(OfficialStatus::Timeout, vec![])
        );

        let mut tampered = outcome(Status::Fail);
        tampered.reason = "the code tampered with unittest: TestCase.run".into();
        assert_eq!(official(&tampered).unwrap().details[0].0, "ALL");
    }

    #[test]
    fn environment_failures_are_infra_and_only_when_nothing_else_failed() {
        let env = Environment {
            missing_modules: BTreeSet::from(["tensorflow".to_string()]),
            network: false,
        };
        let mut missing = outcome(Status::Error);
        missing.error = Some(error(
            "ModuleNotFoundError",
            "No module named 'tensorflow'",
            "Traceback...\nModuleNotFoundError: No module named 'tensorflow.keras'\n",
        ));
        assert_eq!(
            infra_cause(&missing, &env),
            Some(InfraCause::MissingModule("tensorflow".into()))
        );
        let mut hallucinated = missing.clone();
        hallucinated.error = Some(error(
            "ModuleNotFoundError",
            "",
            "ModuleNotFoundError: No module named 'magic'\n",
        ));
        assert_eq!(infra_cause(&hallucinated, &env), None);

        let mut offline = outcome(Status::Fail);
        offline.errors = vec![(
            "test_download".into(),
            "socket.gaierror: [Errno -3] Temporary failure in name resolution\n".into(),
        )];
        let cause = infra_cause(&offline, &env).unwrap();
        assert!(matches!(cause, InfraCause::Network(_)), "{cause:?}");
        assert!(cause.to_string().contains("--allow-network"));
        let online = Environment {
            network: true,
            ..env.clone()
        };
        assert_eq!(infra_cause(&offline, &online), None);

        let mut mixed = offline.clone();
        mixed.failures = vec![("test_value".into(), "AssertionError: 1 != 2\n".into())];
        assert_eq!(infra_cause(&mixed, &env), None);

        let mut nltk = outcome(Status::Fail);
        nltk.errors = vec![("test_tokens".into(), "LookupError: \n****\n  Resource \u{1b}[93mpunkt\u{1b}[0m not found.\n  Please use the NLTK Downloader...\n  >>> import nltk\n".into())];
        assert_eq!(
            infra_cause(&nltk, &env),
            Some(InfraCause::NltkData("punkt".into()))
        );
        assert_eq!(infra_cause(&outcome(Status::Pass), &env), None);
    }
}
