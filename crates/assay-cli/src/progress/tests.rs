//! The tests of a pipeline's progress: what each kind of run counts, its rates, and the bars
//! that come and go with the counts. Apart, as they are longer than the code they test.

use std::time::{Duration, Instant};

use assay_records::{
    Captured, CheckVerdict, Conditions, EpisodeEnd, EpisodeRecord, GenerationOutcome,
    GenerationRecord, GenerationTotals, IsolationLevel, Listener, ModelLoad, RunEvent,
    SampleRecord, StabilityRecord, Status, TokenUsage, Verdicts,
};
use indicatif::MultiProgress;

use super::display::Bars;
use super::{Mode, Progress};

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
        integrity: Vec::new(),
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
    // pace). The verdicts: 1 new in 10 s (not 2: the kept one was not judged now); the one
    // left was due by 6 s at the rate of 3 s, so the rate's ETA is past.
    assert_eq!(
        line(&progress, at(5.0)),
        "answers 4/4 (36/min) · verdicts 2/3 (12/min, ETA 5 s) · pass 1 · fail 1 · \
         2 in flight · 57 req/min · 40 tok/s · 1 retries · 1 failed"
    );
    assert_eq!(
        line(&progress, at(10.0)),
        "answers 4/4 (36/min) · verdicts 2/3 (6.0/min, ETA ?) · pass 1 · fail 1 · \
         2 in flight · 57 req/min · 20 tok/s · 1 retries · 1 failed"
    );
    let state = progress.state_at(at(10.0));
    assert_eq!(
        state.counts,
        vec![
            ("answers", 4, 4, "36/min".to_string()),
            ("verdicts", 2, 3, "6.0/min, ETA ?".to_string()),
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

fn started(task: &str, reference: bool, expected: Option<f64>) -> RunEvent {
    RunEvent::JobStarted {
        task_id: task.into(),
        reference,
        expected_seconds: expected,
    }
}

#[test]
fn the_last_verdicts_say_what_they_wait_on_not_a_rate() {
    let at = clock();
    let mut progress = Progress::new(true);
    progress.on_event_at(&RunEvent::JudgingStarted { samples: 4 }, at(0.0));
    progress.on_event_at(&started("BigCodeBench/461", false, Some(156.0)), at(0.0));
    for (i, task) in ["BigCodeBench/1", "BigCodeBench/2", "BigCodeBench/3"]
        .into_iter()
        .enumerate()
    {
        progress.on_event_at(&started(task, false, None), at(i as f64));
        progress.on_event_at(&judged(task, Status::Pass), at(i as f64 + 1.0));
    }
    // Three verdicts in 3 s would say "ETA 1 s"; the one left is expected to take minutes.
    assert_eq!(
        line(&progress, at(6.0)),
        "verdicts 3/4 (30/min) · waiting on BigCodeBench/461 (expected 2 min 36 s, 2 min 30 s \
         left) · pass 3"
    );
    progress.on_event_at(&judged("BigCodeBench/461", Status::Pass), at(156.0));
    assert_eq!(
        line(&progress, at(156.0)),
        "verdicts 4/4 (1.5/min) · pass 4"
    );
}

#[test]
fn an_eta_is_no_shorter_than_the_jobs_running_are_expected_to_take() {
    let at = clock();
    let mut progress = Progress::new(true);
    progress.on_event_at(&RunEvent::JudgingStarted { samples: 10 }, at(0.0));
    progress.on_event_at(&started("BigCodeBench/461", false, Some(156.0)), at(0.0));
    for task in ["BigCodeBench/1", "BigCodeBench/2"] {
        progress.on_event_at(&started(task, false, None), at(0.0));
        progress.on_event_at(&judged(task, Status::Pass), at(1.0));
    }
    // Eight left, not all running: an ETA, from the rate but no less than 461's 2 min 26 s.
    assert_eq!(
        line(&progress, at(10.0)),
        "verdicts 2/10 (12/min, ETA 2 min 26 s) · pass 2"
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
    // The episode left was due by 4.5 s at the rate of 3 s: past it, no ETA is said.
    assert_eq!(
        line(&progress, at(10.0)),
        "episodes 3/4 (12/min, ETA ?) · checks 2/4 (6.0/min, ETA 20 s) · pass 1 · \
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
