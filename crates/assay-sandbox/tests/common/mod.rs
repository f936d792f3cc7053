//! Shared set-up for the integration tests: the `test` profile's Python environment (built
//! once, under a lock, by the first test that needs it) and engines on top of it.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;

use assay_pyenv::{Environment, Interpreter, Profile, SilentObserver};
use assay_sandbox::{Engine, EngineConfig, IsolationMode};

/// The test environment's interpreter, set up on first use.
pub fn python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let profile = Profile::by_name("test").expect("test profile");
            let interpreter = Interpreter::discover(None).expect("a Python 3.11 interpreter");
            let env = Environment::locate(profile, interpreter).expect("locate test env");
            env.ensure(&SilentObserver)
                .expect("set up the test environment");
            env.python()
        })
        .clone()
}

pub fn config() -> EngineConfig {
    let mut config = EngineConfig::new(python());
    config.preload = Profile::by_name("test")
        .unwrap()
        .preload
        .iter()
        .map(|s| s.to_string())
        .collect();
    config.isolation = IsolationMode::Strict;
    config.concurrency = 2;
    config.prefork = 2;
    config
}

pub async fn engine() -> Engine {
    Engine::start(config()).await.expect("engine starts")
}

pub const TRIVIAL_TEST: &str = r#"
import unittest

class TestCases(unittest.TestCase):
    def test_double(self):
        self.assertEqual(task_func(2), 4)

    def test_zero(self):
        self.assertEqual(task_func(0), 0)
"#;

pub const DOUBLE: &str = "def task_func(x):\n    return x * 2\n";
