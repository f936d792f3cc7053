//! Progress while a pipeline runs, drawn from its event stream: bars on a terminal, a line
//! every so often otherwise (logs, CI), nothing with `--json`. And the setup spinner.
//!
//! Answers, reference runs and verdicts (PyBench: episodes and their checks) are counted
//! apart, since a run judges each answer as it arrives: each count has its own rate and ETA,
//! from the work done since it began (what an earlier session did is not this one's pace),
//! and a count is shown only once it has something to count.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use assay_pyenv::SetupObserver;
use assay_records::{Listener, ModelLoad, RunEvent, Status};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use crate::print;

/// How often a progress line is printed when stderr is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(30);

/// The width of the bars' labels: the longest, `judge requests`.
const LABEL_WIDTH: usize = 14;

/// One thing being counted: answers, judge requests, reference runs, verdicts (checks),
/// episodes, reruns.
#[derive(Debug)]
struct Count {
    /// What it counts.
    label: &'static str,
    /// Done so far, by this session and earlier ones.
    done: usize,
    /// In all: shown only once above 0.
    total: usize,
    /// Of `done`, what was there before this session worked: not counted in the rate.
    earlier: usize,
    /// When it began.
    began: Instant,
    /// When it was first complete: the rate stops there.
    ended: Option<Instant>,
}

impl Count {
    fn new(label: &'static str, total: usize, earlier: usize, now: Instant) -> Self {
        Count {
            label,
            done: earlier,
            total,
            earlier,
            began: now,
            ended: None,
        }
    }

    /// A count with nothing to count yet (hidden until it has a total).
    fn empty(label: &'static str, now: Instant) -> Self {
        Count::new(label, 0, 0, now)
    }

    /// Whether it is shown: it has something to count.
    fn shown(&self) -> bool {
        self.total > 0
    }

    fn complete(&self) -> bool {
        self.done >= self.total
    }

    /// Marks when it became complete.
    fn settle(&mut self, now: Instant) {
        if self.shown() && self.complete() {
            self.ended.get_or_insert(now);
        } else {
            self.ended = None;
        }
    }

    /// Seconds it has run (until it ended), at least one: a rate over less is noise.
    fn seconds(&self, now: Instant) -> f64 {
        let until = self.ended.unwrap_or(now);
        until
            .saturating_duration_since(self.began)
            .as_secs_f64()
            .max(1.0)
    }

    /// Work done this session per second, once there is some.
    fn rate(&self, now: Instant) -> Option<f64> {
        let new = self.done.saturating_sub(self.earlier);
        (new > 0).then(|| new as f64 / self.seconds(now))
    }

    /// The rate and, while unfinished, the time left: `2.1/s, ETA 13 s`; empty before this
    /// session did any of it.
    fn pace(&self, now: Instant) -> String {
        let Some(rate) = self.rate(now) else {
            return String::new();
        };
        let mut pace = per_time(rate);
        if !self.complete() {
            let left = (self.total - self.done) as f64 / rate;
            pace.push_str(&format!(", ETA {}", duration(left.ceil() as u64)));
        }
        pace
    }
}

/// A rate in a unit that reads well: `2.1/s`, `12/min`, `0.5/h`.
fn per_time(per_second: f64) -> String {
    let figure = |x: f64| {
        if x >= 9.95 {
            format!("{x:.0}")
        } else {
            format!("{x:.1}")
        }
    };
    if per_second >= 0.995 {
        format!("{}/s", figure(per_second))
    } else if per_second * 60.0 >= 0.995 {
        format!("{}/min", figure(per_second * 60.0))
    } else {
        format!("{}/h", figure(per_second * 3600.0))
    }
}

/// A time left that reads well: `45 s`, `3 min 20 s`, `1 h 5 min`.
fn duration(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => match (s / 60, s % 60) {
            (m, 0) => format!("{m} min"),
            (m, s) => format!("{m} min {s} s"),
        },
        s => match (s / 3600, s % 3600 / 60) {
            (h, 0) => format!("{h} h"),
            (h, m) => format!("{h} h {m} min"),
        },
    }
}

/// What the display shows at a moment: the counts that have a total, then the rest.
struct State {
    /// Each shown count's label, done, total and pace.
    counts: Vec<(&'static str, usize, usize, String)>,
    /// Statuses, requests, tokens, retries, failures.
    extras: Vec<String>,
}

impl State {
    /// One line: the counts, then the extras, joined by ` · `; empty without a count.
    fn line(&self) -> String {
        if self.counts.is_empty() {
            return String::new();
        }
        // `answers 120/148 (2.1/s, ETA 13 s)`.
        let counts = self.counts.iter().map(|(label, done, total, pace)| {
            if pace.is_empty() {
                format!("{label} {done}/{total}")
            } else {
                format!("{label} {done}/{total} ({pace})")
            }
        });
        counts
            .chain(self.extras.iter().cloned())
            .collect::<Vec<_>>()
            .join(" · ")
    }
}

/// A terminal's bars: one per shown count, and a status line under them.
struct Bars {
    multi: MultiProgress,
    counts: Vec<(&'static str, ProgressBar)>,
    status: Option<ProgressBar>,
}

impl Bars {
    fn new() -> Self {
        Bars {
            multi: MultiProgress::new(),
            counts: Vec::new(),
            status: None,
        }
    }

    /// Draws `state`: bars added for counts that now have a total, in the display's order,
    /// and removed for counts no longer shown (a stability round's reruns replace the
    /// verdicts).
    fn draw(&mut self, state: &State) {
        let shown: Vec<&str> = state.counts.iter().map(|c| c.0).collect();
        self.counts.retain(|(label, bar)| {
            let keep = shown.contains(label);
            if !keep {
                bar.finish_and_clear();
                self.multi.remove(bar);
            }
            keep
        });
        let mut previous: Option<ProgressBar> = None;
        for (label, done, total, pace) in &state.counts {
            let bar = match self.counts.iter().find(|(l, _)| l == label) {
                Some((_, bar)) => bar.clone(),
                None => {
                    let bar = ProgressBar::new(*total as u64);
                    let bar = match &previous {
                        Some(previous) => self.multi.insert_after(previous, bar),
                        None => self.multi.insert(0, bar),
                    };
                    bar.set_style(
                        ProgressStyle::with_template(&format!(
                            "{{prefix:{LABEL_WIDTH}}} {{bar:30}} {{pos}}/{{len}} {{msg}}"
                        ))
                        .expect("valid template"),
                    );
                    bar.set_prefix(*label);
                    self.counts.push((label, bar.clone()));
                    bar
                }
            };
            bar.set_length(*total as u64);
            bar.set_position(*done as u64);
            bar.set_message(pace.clone());
            previous = Some(bar);
        }
        let extras = state.extras.join(" · ");
        match &self.status {
            Some(status) => status.set_message(extras),
            None if !extras.is_empty() => {
                let status = self.multi.add(ProgressBar::new(0));
                status.set_style(ProgressStyle::with_template("{msg}").expect("valid template"));
                status.set_message(extras);
                self.status = Some(status);
            }
            None => {}
        }
    }

    /// Runs `f` (which prints) without tearing the bars.
    fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.multi.suspend(f)
    }
}

impl Drop for Bars {
    fn drop(&mut self) {
        for (_, bar) in &self.counts {
            bar.finish_and_clear();
        }
        if let Some(status) = &self.status {
            status.finish_and_clear();
        }
        let _ = self.multi.clear();
    }
}

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
        let counts = self
            .counts()
            .into_iter()
            .filter(|c| c.shown())
            .map(|c| (c.label, c.done, c.total, c.pace(now)))
            .collect();
        let mut extras: Vec<String> = self
            .statuses
            .iter()
            .map(|(s, n)| format!("{s} {n}"))
            .collect();
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
                if *done > 0 {
                    self.say(&format!(
                        "{done} of {samples} answers are already there; asking for the rest"
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
            RunEvent::ReferenceJudged { .. } => self.references.done += 1,
            RunEvent::SampleKept { status, .. } => {
                self.status(*status);
                self.verdicts.done += 1;
                self.verdicts.earlier += 1;
            }
            RunEvent::SampleJudged { record } => {
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
                if *done > 0 {
                    self.say(&format!(
                        "{done} of {requests} judge requests are already answered; asking the rest"
                    ));
                }
                self.judge = Count::new("judge requests", *requests, *done, now);
                self.ask(now);
            }
            RunEvent::JudgeAnswered { record } => {
                self.retries += u64::from(record.attempts.saturating_sub(1));
                self.tokens += record.usage.completion_tokens;
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
    use assay_records::{
        Captured, CheckVerdict, Conditions, EpisodeEnd, EpisodeRecord, GenerationOutcome,
        GenerationRecord, GenerationTotals, IsolationLevel, SampleRecord, StabilityRecord,
        TokenUsage, Verdicts,
    };

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

    fn answered(task: &str, tokens: u64, attempts: u32, error: Option<&str>) -> RunEvent {
        let raw: Vec<String> = match error {
            None => vec!["x".into()],
            Some(_) => Vec::new(),
        };
        RunEvent::Answered {
            record: Box::new(GenerationRecord {
                task_id: task.into(),
                solutions: raw.clone(),
                finish_reasons: raw.iter().map(|_| None).collect(),
                raw,
                usage: TokenUsage {
                    completion_tokens: tokens,
                    ..TokenUsage::default()
                },
                latency_seconds: 1.0,
                attempts,
                error: error.map(String::from),
                wanted: 1,
                context: None,
                thinking: Vec::new(),
            }),
        }
    }

    fn sample(task: &str, status: Status) -> SampleRecord {
        SampleRecord {
            index: 0,
            task_id: task.into(),
            program_digest: "p".into(),
            status,
            reason: "r".into(),
            official: None,
            infra: None,
            tests: Vec::new(),
            wall_seconds: 1.0,
            cpu_seconds: None,
            memory_peak_bytes: None,
            processes_peak: None,
            isolation: IsolationLevel::Minimal,
            stdout: Captured::default(),
            stderr: Captured::default(),
        }
    }

    fn judged(task: &str, status: Status) -> RunEvent {
        RunEvent::SampleJudged {
            record: Box::new(sample(task, status)),
        }
    }

    fn kept(task: &str, status: Status) -> RunEvent {
        RunEvent::SampleKept {
            task_id: task.into(),
            status,
        }
    }

    fn reference(task: &str) -> RunEvent {
        RunEvent::ReferenceJudged {
            record: Box::new(sample(task, Status::Pass)),
        }
    }

    fn episode_judged(task: &str, status: Status) -> RunEvent {
        let verdict = CheckVerdict {
            status,
            reason: "r".into(),
        };
        RunEvent::EpisodeJudged {
            record: Box::new(EpisodeRecord {
                task_id: task.into(),
                category: None,
                status,
                reason: "r".into(),
                verdicts: Verdicts {
                    faithful: verdict.clone(),
                    fixed: verdict,
                },
                turns: 1,
                end: EpisodeEnd::Answered,
                end_reason: "r".into(),
                cells: Vec::new(),
                tokens: TokenUsage::default(),
                seconds: 1.0,
                outputs: Vec::new(),
            }),
        }
    }

    fn ended(task: &str) -> RunEvent {
        RunEvent::EpisodeEnded {
            task_id: task.into(),
        }
    }

    /// A clock for the events: `at(s)` is `s` seconds after the test began.
    fn clock() -> impl Fn(f64) -> Instant {
        let t0 = Instant::now();
        move |s| t0 + Duration::from_secs_f64(s)
    }

    fn line(progress: &Progress, now: Instant) -> String {
        progress.state_at(now).line()
    }

    #[test]
    fn rates_and_times_read_well() {
        assert_eq!(per_time(2.14), "2.1/s");
        assert_eq!(per_time(12.6), "13/s");
        assert_eq!(per_time(0.5), "30/min");
        assert_eq!(per_time(0.1), "6.0/min");
        assert_eq!(per_time(0.001), "3.6/h");
        assert_eq!(duration(45), "45 s");
        assert_eq!(duration(200), "3 min 20 s");
        assert_eq!(duration(180), "3 min");
        assert_eq!(duration(3900), "1 h 5 min");
        assert_eq!(duration(7200), "2 h");
    }

    #[test]
    fn nothing_is_counted_before_there_is_a_count() {
        let at = clock();
        let mut progress = Progress::new(true);
        assert_eq!(line(&progress, at(0.0)), "");
        // Starts with nothing to do yet, and requests already running: still no count, and
        // no line (the requests alone are not progress).
        for event in [
            RunEvent::Notice {
                message: "resuming".into(),
            },
            RunEvent::ReferencesStarted { references: 0 },
            RunEvent::JudgingStarted { samples: 0 },
            RunEvent::GenerationStarted {
                samples: 0,
                done: 0,
            },
            in_flight(3, 8),
        ] {
            progress.on_event_at(&event, at(1.0));
            let state = progress.state_at(at(2.0));
            assert!(state.counts.is_empty(), "{event:?}");
            assert_eq!(state.line(), "");
        }
        assert!(!progress.state_at(at(2.0)).extras.is_empty());
    }

    #[test]
    fn a_run_counts_answers_and_verdicts_apart() {
        let at = clock();
        let mut progress = Progress::new(true);
        // One answer and its verdict are there from an earlier session.
        for event in [
            RunEvent::GenerationStarted {
                samples: 4,
                done: 1,
            },
            RunEvent::ReferencesStarted { references: 0 },
            RunEvent::JudgingStarted { samples: 4 },
            kept("BigCodeBench/0", Status::Fail),
        ] {
            progress.on_event_at(&event, at(0.0));
        }
        assert_eq!(
            line(&progress, at(1.0)),
            "answers 1/4 · verdicts 1/4 · fail 1 · 0 in flight · 0 tok/s"
        );
        progress.on_event_at(&in_flight(2, 8), at(1.0));
        progress.on_event_at(&answered("BigCodeBench/1", 100, 1, None), at(2.0));
        progress.on_event_at(&judged("BigCodeBench/1", Status::Pass), at(3.0));
        // Failed for good: never judged.
        progress.on_event_at(&answered("BigCodeBench/2", 0, 1, Some("HTTP 500")), at(4.0));
        assert_eq!(progress.verdicts.total, 3);
        progress.on_event_at(&answered("BigCodeBench/3", 100, 2, None), at(5.0));
        // The answers ended at 5 s: 3 this session (the kept one is not this session's
        // pace). The verdicts: 1 new in 10 s (not 2: the kept one was not judged now).
        assert_eq!(
            line(&progress, at(10.0)),
            "answers 4/4 (36/min) · verdicts 2/3 (6.0/min, ETA 10 s) · pass 1 · fail 1 · \
             2 in flight · 57 req/min · 20 tok/s · 1 retries · 1 failed"
        );
        let state = progress.state_at(at(10.0));
        assert_eq!(
            state.counts,
            vec![
                ("answers", 4, 4, "36/min".to_string()),
                ("verdicts", 2, 3, "6.0/min, ETA 10 s".to_string()),
            ]
        );
        progress.on_event_at(
            &RunEvent::GenerationFinished {
                outcome: GenerationOutcome {
                    samples: 3,
                    unanswered: Vec::new(),
                    totals: GenerationTotals::default(),
                },
            },
            at(11.0),
        );
        progress.on_event_at(&judged("BigCodeBench/3", Status::Fail), at(12.0));
        progress.on_event_at(&RunEvent::JudgingFinished, at(12.0));
        // Once finished, the rates hold still.
        assert_eq!(
            line(&progress, at(100.0)),
            "answers 4/4 (36/min) · verdicts 3/3 (10/min) · pass 1 · fail 2 · 1 retries · \
             1 failed"
        );
    }

    #[test]
    fn a_failure_before_judging_starts_is_not_judged_either() {
        let at = clock();
        let mut progress = Progress::new(true);
        progress.on_event_at(
            &RunEvent::GenerationStarted {
                samples: 3,
                done: 0,
            },
            at(0.0),
        );
        progress.on_event_at(&answered("BigCodeBench/0", 0, 1, Some("e")), at(1.0));
        progress.on_event_at(&RunEvent::JudgingStarted { samples: 3 }, at(1.0));
        assert_eq!(progress.verdicts.total, 2);
    }

    #[test]
    fn a_resumed_evaluation_rates_only_its_own_verdicts() {
        let at = clock();
        let mut progress = Progress::new(true);
        for event in [
            RunEvent::JudgingStarted { samples: 5 },
            RunEvent::ReferencesStarted { references: 2 },
            kept("BigCodeBench/0", Status::Pass),
            kept("BigCodeBench/1", Status::Pass),
        ] {
            progress.on_event_at(&event, at(0.0));
        }
        assert_eq!(
            line(&progress, at(0.5)),
            "references 0/2 · verdicts 2/5 · pass 2"
        );
        progress.on_event_at(&reference("BigCodeBench/2"), at(1.0));
        progress.on_event_at(&reference("BigCodeBench/3"), at(2.0));
        progress.on_event_at(&judged("BigCodeBench/2", Status::Fail), at(4.0));
        assert_eq!(
            line(&progress, at(10.0)),
            "references 2/2 (1.0/s) · verdicts 3/5 (6.0/min, ETA 20 s) · pass 2 · fail 1"
        );
    }

    #[test]
    fn a_check_counts_references_only() {
        let at = clock();
        let mut progress = Progress::new(true);
        progress.on_event_at(&RunEvent::ReferencesStarted { references: 3 }, at(0.0));
        assert_eq!(line(&progress, at(0.0)), "references 0/3");
        progress.on_event_at(&reference("BigCodeBench/0"), at(1.0));
        progress.on_event_at(&reference("BigCodeBench/1"), at(2.0));
        assert_eq!(line(&progress, at(2.0)), "references 2/3 (1.0/s, ETA 1 s)");
        progress.on_event_at(&reference("BigCodeBench/2"), at(4.0));
        progress.on_event_at(&RunEvent::JudgingFinished, at(4.0));
        assert_eq!(line(&progress, at(60.0)), "references 3/3 (45/min)");
    }

    #[test]
    fn pybench_counts_episodes_and_checks_apart() {
        let at = clock();
        let mut progress = Progress::new(true);
        progress.on_event_at(
            &RunEvent::EpisodesStarted {
                episodes: 4,
                done: 1,
            },
            at(0.0),
        );
        progress.on_event_at(&in_flight(5, 2), at(0.0));
        assert_eq!(
            line(&progress, at(0.0)),
            "episodes 1/4 · checks 1/4 · 5 in flight (limit 2 of 8) · 57 req/min"
        );
        progress.on_event_at(&ended("PyBench/1"), at(2.0));
        progress.on_event_at(&ended("PyBench/2"), at(3.0));
        assert_eq!(
            line(&progress, at(4.0)),
            "episodes 3/4 (30/min, ETA 2 s) · checks 1/4 · 5 in flight (limit 2 of 8) · \
             57 req/min"
        );
        progress.on_event_at(&episode_judged("PyBench/1", Status::Pass), at(5.0));
        assert_eq!(
            line(&progress, at(10.0)),
            "episodes 3/4 (12/min, ETA 5 s) · checks 2/4 (6.0/min, ETA 20 s) · pass 1 · \
             5 in flight (limit 2 of 8) · 57 req/min"
        );
        // An episode checked again (read, not played) has ended too.
        progress.on_event_at(&episode_judged("PyBench/2", Status::Fail), at(10.0));
        progress.on_event_at(&episode_judged("PyBench/3", Status::Fail), at(10.0));
        assert_eq!(progress.episodes.done, 4);
    }

    #[test]
    fn a_stability_round_replaces_the_verdicts_with_its_reruns() {
        let at = clock();
        let mut progress = Progress::new(true);
        for event in [
            RunEvent::JudgingStarted { samples: 2 },
            judged("BigCodeBench/0", Status::Pass),
            judged("BigCodeBench/1", Status::Fail),
            RunEvent::JudgingFinished,
            RunEvent::StabilityRoundStarted {
                round: 1,
                change: assay_records::Change::Seed,
                samples: 2,
                done: 1,
            },
        ] {
            progress.on_event_at(&event, at(0.0));
        }
        assert_eq!(line(&progress, at(0.0)), "reruns 1/2");
        let rerun = |change| RunEvent::SampleRerun {
            record: Box::new(StabilityRecord {
                round: 1,
                change,
                conditions: Conditions::default(),
                record: sample("BigCodeBench/1", Status::Pass),
            }),
        };
        progress.on_event_at(&rerun(Some(assay_records::Change::Seed)), at(2.0));
        // A confirmation under the run's own conditions is not one of the round's.
        progress.on_event_at(&rerun(None), at(3.0));
        assert_eq!(line(&progress, at(3.0)), "reruns 2/2 (30/min) · pass 1");
    }

    #[test]
    fn a_bar_comes_with_its_count_and_goes_with_it() {
        let at = clock();
        let mut progress = Progress::new(true);
        progress.mode = Mode::Bars(Bars {
            multi: MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::hidden()),
            counts: Vec::new(),
            status: None,
        });
        // The bars in the order they were added (each is drawn where its count is shown).
        let bars = |progress: &Progress| match &progress.mode {
            Mode::Bars(bars) => bars
                .counts
                .iter()
                .map(|(label, bar)| (*label, bar.position(), bar.length()))
                .collect::<Vec<_>>(),
            _ => unreachable!(),
        };
        progress.on_event_at(&RunEvent::ReferencesStarted { references: 0 }, at(0.0));
        progress.on_event_at(&RunEvent::JudgingStarted { samples: 2 }, at(0.0));
        assert_eq!(bars(&progress), vec![("verdicts", 0, Some(2))]);
        progress.on_event_at(
            &RunEvent::GenerationStarted {
                samples: 2,
                done: 0,
            },
            at(0.0),
        );
        progress.on_event_at(&answered("BigCodeBench/0", 10, 1, None), at(1.0));
        assert_eq!(
            bars(&progress),
            vec![("verdicts", 0, Some(2)), ("answers", 1, Some(2))]
        );
        progress.on_event_at(&judged("BigCodeBench/0", Status::Pass), at(1.0));
        progress.on_event_at(&RunEvent::JudgingFinished, at(1.0));
        progress.on_event_at(
            &RunEvent::StabilityRoundStarted {
                round: 1,
                change: assay_records::Change::Load,
                samples: 1,
                done: 0,
            },
            at(2.0),
        );
        assert_eq!(bars(&progress), vec![("reruns", 0, Some(1))]);
    }

    #[test]
    fn the_line_shows_the_rate_and_a_lowered_limit() {
        let mut progress = Progress::new(true);
        progress.on_event(&RunEvent::GenerationStarted {
            samples: 10,
            done: 0,
        });
        progress.on_event(&in_flight(8, 8));
        let state = progress.state_at(Instant::now());
        assert!(
            state
                .line()
                .starts_with("answers 0/10 · 8 in flight · 57 req/min · "),
            "{}",
            state.line()
        );
        progress.on_event(&answered("BigCodeBench/1", 0, 3, None));
        progress.on_event(&in_flight(2, 4));
        let state = progress.state_at(Instant::now());
        assert_eq!((state.counts[0].1, state.counts[0].2), (1, 10));
        let extras = state.extras.join(" · ");
        assert!(
            extras.starts_with("2 in flight (limit 4 of 8) · 57 req/min · "),
            "{extras}"
        );
        assert!(extras.ends_with(" · 2 retries"), "{extras}");
        // Without a model API: only what is running.
        progress.on_event(&RunEvent::InFlight {
            requests: 3,
            load: None,
        });
        let extras = progress.state_at(Instant::now()).extras.join(" · ");
        assert!(extras.starts_with("3 in flight · 0 tok/s"), "{extras}");
    }

    #[test]
    fn episodes_show_the_models_load_beside_their_statuses() {
        let mut progress = Progress::new(true);
        progress.on_event(&RunEvent::EpisodesStarted {
            episodes: 3,
            done: 0,
        });
        assert!(progress.state_at(Instant::now()).extras.is_empty());
        progress.on_event(&in_flight(5, 2));
        progress.on_event(&episode_judged("PyBench/0", Status::Pass));
        assert_eq!(
            progress.state_at(Instant::now()).extras.join(" · "),
            "pass 1 · 5 in flight (limit 2 of 8) · 57 req/min"
        );
    }
}
