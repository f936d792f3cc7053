//! The setup spinner: the step an environment's setup is at, and its installer's latest line.
//! Apart from a pipeline's progress, as setup tells no run events.

use std::time::Duration;

use assay_pyenv::SetupObserver;
use indicatif::{ProgressBar, ProgressStyle};

/// Draws setup progress on stderr: the current step, and the installer's latest line.
pub struct Spinner(ProgressBar);

impl Spinner {
    pub fn new() -> Self {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed}] {prefix} {wide_msg}")
                .expect("valid template"),
        );
        bar.enable_steady_tick(Duration::from_millis(120));
        Spinner(bar)
    }
}

impl SetupObserver for Spinner {
    fn step(&self, message: &str) {
        // A hidden bar (stderr is not a terminal) drops println; logs still need the steps.
        if self.0.is_hidden() {
            eprintln!("assay: {message}");
        } else {
            self.0.println(format!("assay: {message}"));
        }
        self.0.set_message("");
    }
    fn output(&self, line: &str) {
        self.0.set_message(line.trim().to_string());
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
