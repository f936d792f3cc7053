//! How progress is drawn: the state of a moment, as one line (a log) or as a terminal's bars,
//! one per count with a status line under them. Apart from the bookkeeping that makes the
//! state ([`super::Progress`]), as it is all the drawing.

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

/// The width of the bars' labels: the longest, `judge requests`.
const LABEL_WIDTH: usize = 14;

/// What the display shows at a moment: the counts that have a total, then the rest.
pub(super) struct State {
    /// Each shown count's label, done, total and pace.
    pub(super) counts: Vec<(&'static str, usize, usize, String)>,
    /// Statuses, requests, tokens, retries, failures.
    pub(super) extras: Vec<String>,
}

impl State {
    /// One line: the counts, then the extras, joined by ` · `; empty without a count.
    pub(super) fn line(&self) -> String {
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
pub(super) struct Bars {
    pub(super) multi: MultiProgress,
    pub(super) counts: Vec<(&'static str, ProgressBar)>,
    pub(super) status: Option<ProgressBar>,
}

impl Bars {
    pub(super) fn new() -> Self {
        Bars {
            multi: MultiProgress::new(),
            counts: Vec::new(),
            status: None,
        }
    }

    /// Draws `state`: bars added for counts that now have a total, in the display's order,
    /// and removed for counts no longer shown (a stability round's reruns replace the
    /// verdicts).
    pub(super) fn draw(&mut self, state: &State) {
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
    pub(super) fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
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
