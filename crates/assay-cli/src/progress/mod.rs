//! Progress while a pipeline runs, drawn from its event stream: bars on a terminal, a line
//! every so often otherwise (logs, CI), nothing with `--json`. And the setup spinner.
//!
//! Answers, reference runs and verdicts (PyBench: episodes and their checks) are counted
//! apart, since a run judges each answer as it arrives: each count has its own rate and ETA,
//! from the work done since it began (what an earlier session did is not this one's pace),
//! and a count is shown only once it has something to count.
//!
//! Here are the counts' bookkeeping from the events and the choice of display; a count's rate
//! and ETA are [`count`]'s, the line and the bars [`display`]'s, the setup spinner
//! [`spinner`]'s.

mod count;
mod display;
mod running;
mod spinner;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use assay_records::{Listener, ModelLoad, RunEvent, Status};

use self::count::Count;
use self::display::{Bars, State};
use self::running::Running;
use crate::print;

pub use self::spinner::Spinner;

/// How often a progress line is printed when stderr is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(30);

/// How progress is shown.
enum Mode {
    /// `--json`: stdout is for the document; stderr has the notices only.
    Quiet,
    /// A terminal: live bars.
    Bars(Bars),
    /// A log: a line now and then, and one at the end of each phase.
    Lines { last: Instant },
}

/// Progress of a pipeline, from its events.
pub struct Progress {
    mode: Mode,
    /// The model's answers (`assay generate`, `assay run`).
    answers: Count,
    /// PyBench's episodes (their checks are `verdicts`).
    episodes: Count,
    /// Reference solutions run.
    references: Count,
    /// Samples judged (PyBench: episodes checked).
    verdicts: Count,
    /// A stability round's reruns: shown instead of the verdicts while it runs.
    reruns: Count,
    /// An LLM judge's requests.
    judge: Count,
    /// Verdicts, kept and new (or the round's reruns), by status.
    statuses: BTreeMap<Status, usize>,
    /// The sandbox's jobs running now: what the last verdicts wait on.
    running: Running,
    /// Since when a model is asked for answers (or judgements), while it is.
    asking: Option<Instant>,
    /// Whether the generation has ended (a later `judging-started` counts the samples there
    /// are, not the answers wanted).
    generation_over: bool,
    /// Whether the verdicts wait for answers still to come: those that fail for good are
    /// never judged.
    verdicts_follow_answers: bool,
    /// Answers failed for good: `failed` of this generation.
    lost: usize,
    /// Requests in flight, the model API's load (PyBench's episodes too), tokens answered
    /// since the model was first asked, retries, failed answers.
    in_flight: usize,
    load: Option<ModelLoad>,
    tokens: u64,
    retries: u64,
    failed: usize,
}

impl Progress {
    /// Progress on stderr: quiet when `quiet`, bars on a terminal, lines otherwise.
    pub fn new(quiet: bool) -> Self {
        let now = Instant::now();
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Bars(Bars::new())
        } else {
            Mode::Lines { last: now }
        };
        Progress {
            mode,
            answers: Count::empty("answers", now),
            episodes: Count::empty("episodes", now),
            references: Count::empty("references", now),
            verdicts: Count::empty("verdicts", now),
            reruns: Count::empty("reruns", now),
            judge: Count::empty("judge requests", now),
            statuses: BTreeMap::new(),
            running: Running::default(),
            asking: None,
            generation_over: false,
            verdicts_follow_answers: false,
            lost: 0,
            in_flight: 0,
            load: None,
            tokens: 0,
            retries: 0,
            failed: 0,
        }
    }

    /// Prints `text` on stderr without tearing the bars: notices are said even with
    /// `--json`, whose document is on stdout.
    fn say(&self, text: &str) {
        match &self.mode {
            Mode::Bars(bars) => bars.suspend(|| eprintln!("assay: {text}")),
            Mode::Quiet | Mode::Lines { .. } => eprintln!("assay: {text}"),
        }
    }

    /// The counts in the order they are shown.
    fn counts(&self) -> [&Count; 6] {
        [
            &self.answers,
            &self.episodes,
            &self.references,
            &self.verdicts,
            &self.reruns,
            &self.judge,
        ]
    }

    fn counts_mut(&mut self) -> [&mut Count; 6] {
        [
            &mut self.answers,
            &mut self.episodes,
            &mut self.references,
            &mut self.verdicts,
            &mut self.reruns,
            &mut self.judge,
        ]
    }

    /// What is shown at `now`.
    fn state_at(&self, now: Instant) -> State {
        let mut waiting = Vec::new();
        let counts = self
            .counts()
            .into_iter()
            .filter(|c| c.shown())
            .map(|c| {
                let (pace, waits) = self.pace(c, now);
                waiting.extend(waits);
                (c.label, c.done, c.total, pace)
            })
            .collect();
        let mut extras = waiting;
        extras.extend(self.statuses.iter().map(|(s, n)| format!("{s} {n}")));
        // PyBench's episodes ask the model too.
        if self.asking.is_some() || self.load.is_some() {
            extras.extend(self.requests());
        }
        if let Some(since) = self.asking {
            let seconds = now.saturating_duration_since(since).as_secs_f64().max(1.0);
            extras.push(format!("{:.0} tok/s", self.tokens as f64 / seconds));
        }
        if self.retries > 0 {
            extras.push(format!("{} retries", self.retries));
        }
        if self.failed > 0 {
            extras.push(format!("{} failed", self.failed));
        }
        State { counts, extras }
    }

    /// `count`'s pace, and for sandbox jobs (verdicts, references) what the last of them
    /// wait on, when they are few and all running; else an ETA no shorter than the jobs
    /// running are expected to take.
    fn pace(&self, count: &Count, now: Instant) -> (String, Option<String>) {
        let reference = if std::ptr::eq(count, &self.verdicts) {
            false
        } else if std::ptr::eq(count, &self.references) {
            true
        } else {
            return (count.pace(now, Some(0.0)), None);
        };
        let left = count.total.saturating_sub(count.done);
        match self.running.waiting_on(reference, left, now) {
            Some(waiting) => (count.pace(now, None), Some(waiting)),
            None => {
                let least = self.running.least_left(reference, now);
                (count.pace(now, Some(least)), None)
            }
        }
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

    /// Shows the state: on the bars, or as a line when one is due (or `now`) and there is a
    /// count to show.
    fn show(&mut self, at: Instant, now: bool) {
        let state = self.state_at(at);
        match &mut self.mode {
            Mode::Quiet => {}
            Mode::Bars(bars) => bars.draw(&state),
            Mode::Lines { last } => {
                let due = now || at.saturating_duration_since(*last) >= LINE_EVERY;
                if due && !state.counts.is_empty() {
                    *last = at;
                    eprintln!("assay: {}", state.line());
                }
            }
        }
    }

    /// A model starts being asked (answers or judgements).
    fn ask(&mut self, now: Instant) {
        self.asking = Some(now);
        self.tokens = 0;
        self.load = None;
        self.in_flight = 0;
    }

    /// The model is no longer asked.
    fn stop_asking(&mut self) {
        self.asking = None;
        self.load = None;
        self.in_flight = 0;
    }

    fn status(&mut self, status: Status) {
        *self.statuses.entry(status).or_insert(0) += 1;
    }

    /// Hears `event` at `now`.
    fn hear(&mut self, event: &RunEvent, now: Instant) {
        match event {
            RunEvent::Notice { message } => self.say(message),
            RunEvent::GenerationStarted { samples, done } => {
                if *done >= *samples && *samples > 0 {
                    self.say(&format!(
                        "all {samples} answers are already there: nothing to ask"
                    ));
                } else if *done > 0 {
                    self.say(&format!(
                        "{done} of {samples} answers are already there; asking for the other {}",
                        samples - done
                    ));
                }
                self.answers = Count::new("answers", *samples, *done, now);
                self.generation_over = false;
                self.lost = 0;
                self.ask(now);
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
                        self.answers.done += record.raw.len();
                    }
                    Some(error) => {
                        self.say(&format!("no answer for {}: {error}", record.task_id));
                        let wanted = record.wanted as usize;
                        self.failed += wanted;
                        self.lost += wanted;
                        self.answers.done += wanted;
                        if self.verdicts_follow_answers {
                            self.verdicts.total = self.verdicts.total.saturating_sub(wanted);
                        }
                    }
                }
            }
            RunEvent::GenerationFinished { .. } => {}
            RunEvent::JudgingStarted { samples } => {
                // In a run, judging starts while answers arrive: those lost are never judged.
                self.verdicts_follow_answers = !self.generation_over;
                let lost = if self.verdicts_follow_answers {
                    self.lost
                } else {
                    0
                };
                self.verdicts.label = "verdicts";
                self.verdicts.total = samples.saturating_sub(lost);
                self.verdicts.began = now;
            }
            RunEvent::ReferencesStarted { references } => {
                if *references > 0 {
                    if self.references.shown() && !self.references.complete() {
                        self.references.total += references;
                    } else {
                        self.references = Count::new("references", *references, 0, now);
                    }
                }
            }
            RunEvent::JobStarted {
                task_id,
                reference,
                expected_seconds,
            } => self
                .running
                .started(task_id, *reference, *expected_seconds, now),
            RunEvent::ReferenceJudged { record } => {
                self.running.ended(&record.task_id, true);
                self.references.done += 1;
            }
            RunEvent::SampleKept { status, .. } => {
                self.status(*status);
                self.verdicts.done += 1;
                self.verdicts.earlier += 1;
            }
            RunEvent::SampleJudged { record } => {
                self.running.ended(&record.task_id, false);
                self.status(record.status);
                self.verdicts.done += 1;
            }
            RunEvent::StabilityRoundStarted {
                round,
                change,
                samples,
                done,
            } => {
                // The line of the round that ended.
                if self.reruns.shown() {
                    self.show(now, true);
                }
                self.say(&format!("stability round {round}: {}", change.describe()));
                for count in [&mut self.answers, &mut self.references, &mut self.verdicts] {
                    *count = Count::empty(count.label, now);
                }
                self.statuses.clear();
                self.running.clear();
                self.stop_asking();
                self.reruns = Count::new("reruns", *samples, *done, now);
            }
            // A confirmation under the run's own conditions is not one of the round's samples.
            RunEvent::SampleRerun { record } if record.change.is_some() => {
                self.status(record.record.status);
                self.reruns.done += 1;
            }
            RunEvent::SampleRerun { .. } => {}
            RunEvent::EpisodesStarted { episodes, done } => {
                if *done > 0 {
                    self.say(&format!(
                        "{done} of {episodes} episodes are already recorded; running the rest"
                    ));
                }
                self.episodes = Count::new("episodes", *episodes, *done, now);
                self.verdicts = Count::new("checks", *episodes, *done, now);
            }
            RunEvent::EpisodeEnded { .. } => self.episodes.done += 1,
            RunEvent::EpisodeJudged { record } => {
                self.status(record.status);
                self.verdicts.done += 1;
                // An episode checked has ended (one checked again was read, not played).
                self.episodes.done = self.episodes.done.max(self.verdicts.done);
            }
            RunEvent::JudgeStarted { requests, done } => {
                if *done == *requests && *requests > 0 {
                    self.say(&format!(
                        "all {requests} judge requests are already answered; nothing to ask"
                    ));
                } else if *done > 0 {
                    self.say(&format!(
                        "{done} of {requests} judge requests are already answered; asking the rest"
                    ));
                }
                self.judge = Count::new("judge requests", *requests, *done, now);
                self.ask(now);
            }
            RunEvent::JudgeAnswered {
                record,
                asked_again,
            } => {
                self.retries += u64::from(record.attempts.saturating_sub(1));
                self.tokens += record.usage.completion_tokens;
                if *asked_again {
                    self.judge.total += 1;
                }
                self.judge.done += 1;
                if let Some(error) = &record.error {
                    self.say(&format!("no verdict for {}: {error}", record.task_id));
                    self.failed += 1;
                }
            }
            RunEvent::JudgingFinished => {}
        }
        for count in self.counts_mut() {
            count.settle(now);
        }
    }

    /// Hears `event` at `now` and shows what it changed.
    fn on_event_at(&mut self, event: &RunEvent, now: Instant) {
        self.hear(event, now);
        match event {
            RunEvent::GenerationFinished { outcome } => {
                self.show(now, true);
                match &self.mode {
                    Mode::Bars(bars) => bars.suspend(|| print::generation(outcome)),
                    Mode::Lines { .. } => print::generation(outcome),
                    Mode::Quiet => {}
                }
                self.generation_over = true;
                self.stop_asking();
            }
            RunEvent::JudgingFinished => {
                self.stop_asking();
                self.show(now, true);
            }
            _ => self.show(now, false),
        }
    }
}

impl Listener for Progress {
    fn on_event(&mut self, event: &RunEvent) {
        self.on_event_at(event, Instant::now());
    }
}
