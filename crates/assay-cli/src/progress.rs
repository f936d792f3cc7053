//! Progress while a pipeline runs, drawn from its event stream: a bar on a terminal, a line
//! every so often otherwise (logs, CI), nothing with `--json`. And the setup spinner.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use assay_pyenv::SetupObserver;
use assay_records::{Listener, ModelLoad, RunEvent, Status};
use indicatif::{ProgressBar, ProgressStyle};

use crate::print;

/// How often a progress line is printed when stderr is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(30);

/// How progress is shown.
enum Mode {
    /// `--json`: stdout is for the document; stderr has the notices only.
    Quiet,
    /// A terminal: a live bar.
    Bar(ProgressBar),
    /// A log: a line now and then, and one at the end of each phase.
    Lines { last: Instant },
}

/// What is happening now.
#[derive(PartialEq)]
enum Phase {
    Idle,
    Generating,
    Judging,
}

/// Progress of a pipeline, from its events.
pub struct Progress {
    mode: Mode,
    phase: Phase,
    started: Instant,
    /// Generation: answers wanted, answered (or failed), requests in flight and the model
    /// API's load (PyBench's episodes too), tokens, retries, failed answers.
    answers: (usize, usize),
    in_flight: usize,
    load: Option<ModelLoad>,
    tokens: u64,
    retries: u64,
    failed: usize,
    /// Judging: samples in all and judged, by status; reference runs done and to do.
    samples: (usize, usize),
    statuses: BTreeMap<Status, usize>,
    references: (usize, usize),
}

impl Progress {
    /// Progress on stderr: quiet when `quiet`, a bar on a terminal, lines otherwise.
    pub fn new(quiet: bool) -> Self {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} [{elapsed_precise} < {eta_precise}] {msg}",
                )
                .expect("valid template"),
            );
            Mode::Bar(bar)
        } else {
            Mode::Lines {
                last: Instant::now(),
            }
        };
        Progress {
            mode,
            phase: Phase::Idle,
            started: Instant::now(),
            answers: (0, 0),
            in_flight: 0,
            load: None,
            tokens: 0,
            retries: 0,
            failed: 0,
            samples: (0, 0),
            statuses: BTreeMap::new(),
            references: (0, 0),
        }
    }

    /// Prints `text` on stderr without tearing the bar: notices are said even with
    /// `--json`, whose document is on stdout.
    fn say(&self, text: &str) {
        match &self.mode {
            Mode::Bar(bar) => bar.suspend(|| eprintln!("assay: {text}")),
            Mode::Quiet | Mode::Lines { .. } => eprintln!("assay: {text}"),
        }
    }

    /// The bar's position and length, and its message, for the phase.
    fn state(&self) -> (usize, usize, String) {
        let mut parts = Vec::new();
        let (done, total) = match self.phase {
            Phase::Generating => {
                let seconds = self.started.elapsed().as_secs_f64().max(1e-3);
                parts.extend(self.requests());
                parts.push(format!("{:.0} tok/s", self.tokens as f64 / seconds));
                if self.retries > 0 {
                    parts.push(format!("{} retries", self.retries));
                }
                if self.failed > 0 {
                    parts.push(format!("{} failed", self.failed));
                }
                (self.answers.1, self.answers.0)
            }
            Phase::Judging | Phase::Idle => {
                parts.extend(self.statuses.iter().map(|(s, n)| format!("{s} {n}")));
                // PyBench's episodes ask the model meanwhile.
                if self.load.is_some() {
                    parts.extend(self.requests());
                }
                let references = self.references.0.min(self.references.1);
                (
                    self.samples.1 + references,
                    self.samples.0 + self.references.1,
                )
            }
        };
        let (refs_done, refs_total) = self.references;
        if refs_total > 0 {
            parts.push(format!("reference solutions {refs_done}/{refs_total}"));
        }
        (done, total, parts.join(" · "))
    }

    /// Requests in flight (and the limit, while the server's overload keeps it below
    /// `--concurrency`), and the requests sent over the last minute.
    fn requests(&self) -> Vec<String> {
        let mut parts = vec![format!("{} in flight", self.in_flight)];
        if let Some(load) = &self.load {
            if load.limit < load.concurrency {
                parts[0].push_str(&format!(" (limit {} of {})", load.limit, load.concurrency));
            }
            parts.push(format!("{} req/min", load.per_minute));
        }
        parts
    }

    /// Shows the state: on the bar, or as a line when one is due (or `now`).
    fn show(&mut self, now: bool) {
        let (done, total, message) = self.state();
        match &mut self.mode {
            Mode::Quiet => {}
            Mode::Bar(bar) => {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                bar.set_message(message);
            }
            Mode::Lines { last } => {
                if now || last.elapsed() >= LINE_EVERY {
                    *last = Instant::now();
                    let what = match self.phase {
                        Phase::Generating => "answered",
                        _ => "judged",
                    };
                    let elapsed = self.started.elapsed().as_secs();
                    eprintln!("assay: {what} {done}/{total} ({elapsed} s) {message}");
                }
            }
        }
    }

    /// Starts a phase: the bar's clock and ETA restart.
    fn enter(&mut self, phase: Phase) {
        self.phase = phase;
        self.started = Instant::now();
        self.load = None;
        if let Mode::Bar(bar) = &self.mode {
            bar.reset();
        }
    }
}

impl Listener for Progress {
    fn on_event(&mut self, event: &RunEvent) {
        match event {
            RunEvent::Notice { message } => self.say(message),
            RunEvent::GenerationStarted { samples, done } => {
                if *done > 0 {
                    self.say(&format!(
                        "{done} of {samples} answers are already there; asking for the rest"
                    ));
                }
                self.enter(Phase::Generating);
                self.answers = (*samples, *done);
            }
            RunEvent::InFlight { requests, load } => {
                self.in_flight = *requests;
                self.load = *load;
            }
            RunEvent::Answered { record } => {
                self.retries += u64::from(record.attempts.saturating_sub(1));
                match &record.error {
                    None => {
                        self.tokens += record.usage.completion_tokens;
                        self.answers.1 += record.raw.len();
                    }
                    Some(error) => {
                        self.say(&format!("no answer for {}: {error}", record.task_id));
                        self.failed += record.wanted as usize;
                        self.answers.1 += record.wanted as usize;
                    }
                }
            }
            RunEvent::JudgeStarted { requests, done } => {
                if *done > 0 {
                    self.say(&format!(
                        "{done} of {requests} judge requests are already answered; asking the rest"
                    ));
                }
                self.enter(Phase::Generating);
                self.answers = (*requests, *done);
            }
            RunEvent::JudgeAnswered { record } => {
                self.retries += u64::from(record.attempts.saturating_sub(1));
                self.tokens += record.usage.completion_tokens;
                self.answers.1 += 1;
                if let Some(error) = &record.error {
                    self.say(&format!("no verdict for {}: {error}", record.task_id));
                    self.failed += 1;
                }
            }
            RunEvent::GenerationFinished { outcome } => {
                self.show(true);
                if let Mode::Bar(bar) = &self.mode {
                    bar.suspend(|| print::generation(outcome));
                } else if !matches!(self.mode, Mode::Quiet) {
                    print::generation(outcome);
                }
                self.phase = Phase::Idle;
                self.load = None;
            }
            RunEvent::JudgingStarted {
                samples,
                done,
                references,
            } => {
                if *samples > 0 || self.phase == Phase::Idle {
                    self.enter(Phase::Judging);
                    self.samples = (*samples, *done);
                }
                self.references.1 += references;
            }
            RunEvent::SampleJudged { record } => {
                *self.statuses.entry(record.status).or_insert(0) += 1;
                self.samples.1 += 1;
            }
            RunEvent::ReferenceJudged { .. } => self.references.0 += 1,
            RunEvent::StabilityRoundStarted {
                round,
                change,
                samples,
                done,
            } => {
                self.say(&format!("stability round {round}: {}", change.describe()));
                self.enter(Phase::Judging);
                self.statuses.clear();
                self.references = (0, 0);
                self.samples = (*samples, *done);
            }
            // A confirmation under the run's own conditions is not one of the round's samples.
            RunEvent::SampleRerun { record } if record.change.is_some() => {
                *self.statuses.entry(record.record.status).or_insert(0) += 1;
                self.samples.1 += 1;
            }
            RunEvent::SampleRerun { .. } => {}
            RunEvent::EpisodesStarted { episodes, done } => {
                if *done > 0 {
                    self.say(&format!(
                        "{done} of {episodes} episodes are already recorded; running the rest"
                    ));
                }
                self.enter(Phase::Judging);
                self.samples = (*episodes, *done);
            }
            RunEvent::EpisodeJudged { record } => {
                *self.statuses.entry(record.status).or_insert(0) += 1;
                self.samples.1 += 1;
            }
            RunEvent::JudgingFinished => {}
        }
        let ended = matches!(event, RunEvent::JudgingFinished);
        self.show(ended);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Mode::Bar(bar) = &self.mode {
            bar.finish_and_clear();
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use assay_records::{GenerationRecord, TokenUsage};

    fn in_flight(requests: usize, limit: usize) -> RunEvent {
        RunEvent::InFlight {
            requests,
            load: Some(ModelLoad {
                per_minute: 57,
                limit,
                concurrency: 8,
            }),
        }
    }

    #[test]
    fn the_line_shows_the_rate_and_a_lowered_limit() {
        let mut progress = Progress::new(true);
        progress.on_event(&RunEvent::GenerationStarted {
            samples: 10,
            done: 0,
        });
        progress.on_event(&in_flight(8, 8));
        let (_, _, line) = progress.state();
        assert!(line.starts_with("8 in flight · 57 req/min · "), "{line}");
        progress.on_event(&RunEvent::Answered {
            record: Box::new(GenerationRecord {
                task_id: "BigCodeBench/1".into(),
                raw: vec!["x".into()],
                solutions: vec!["x".into()],
                finish_reasons: vec![None],
                usage: TokenUsage::default(),
                latency_seconds: 1.0,
                attempts: 3,
                error: None,
                wanted: 1,
                context: None,
                thinking: Vec::new(),
            }),
        });
        progress.on_event(&in_flight(2, 4));
        let (done, total, line) = progress.state();
        assert_eq!((done, total), (1, 10));
        assert!(
            line.starts_with("2 in flight (limit 4 of 8) · 57 req/min · "),
            "{line}"
        );
        assert!(line.ends_with(" · 2 retries"), "{line}");
        // Without a model API: only what is running.
        progress.on_event(&RunEvent::InFlight {
            requests: 3,
            load: None,
        });
        assert!(progress.state().2.starts_with("3 in flight · 0 tok/s"));
    }

    #[test]
    fn episodes_show_the_models_load_beside_their_statuses() {
        let mut progress = Progress::new(true);
        progress.on_event(&RunEvent::EpisodesStarted {
            episodes: 3,
            done: 0,
        });
        assert_eq!(progress.state().2, "");
        progress.on_event(&in_flight(5, 2));
        assert_eq!(
            progress.state().2,
            "5 in flight (limit 2 of 8) · 57 req/min"
        );
    }
}
