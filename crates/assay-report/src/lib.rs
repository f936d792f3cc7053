//! Reports over run directories: how good each run is, with how much certainty, and how two
//! runs differ, task by task.
//!
//! Every interval is a 95% percentile bootstrap over tasks (`assay_score::compare`: 10,000
//! resamples from a fixed seed, so the same runs always give the same report). Two runs are
//! compared on the tasks both judged: the difference of their pass@1 with its paired
//! interval (tasks resampled together), and McNemar's exact test on the tasks one passes and
//! the other fails. A task counts as passed, for the test and the lists of flipped tasks,
//! when at least half its samples pass (with one sample per task: when it passes).

mod html;
pub mod judge;
pub mod source;
mod terminal;
mod text;

use std::collections::BTreeMap;

use assay_records::{Gamed, JudgeFigures, StabilitySummary, TokenUsage};
use assay_score::compare::{bootstrap_mean, mcnemar_exact, RESAMPLES, SEED};
use assay_score::elo::ratings;
use assay_score::{pass_at_k, DEFAULT_KS};
use serde::{Deserialize, Serialize};

pub use html::html;
pub use source::{
    answers, finished_at, judged_trajectories, last_write, read_lines, read_manifest,
    read_numbered_lines, Answer, Failure, Run, SourceError, TaskResult,
};
pub use terminal::render;
pub use text::escape;

/// Bootstrap resamples of the Elo ratings (each one a full fit).
const ELO_RESAMPLES: usize = 1_000;

/// A figure and its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The figure.
    pub value: f64,
    /// Lower bound of its interval.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
}

/// One run's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFigures {
    /// The run's name.
    pub label: String,
    /// The benchmark.
    pub benchmark: String,
    /// The prompt style (BigCodeBench).
    pub split: Option<String>,
    /// The model.
    pub model: Option<String>,
    /// Tasks with a sample.
    pub tasks: usize,
    /// Of them, with a judged sample.
    pub judged: usize,
    /// Tasks with only `infra` samples (set apart).
    pub infra_tasks: usize,
    /// Samples by status.
    pub statuses: BTreeMap<String, u64>,
    /// pass@k over the judged tasks, for each k every task's samples allow.
    pub pass_at_k: BTreeMap<u64, Estimate>,
    /// pass@1 per group (BigCodeBench domain, PyBench category) over its judged tasks; a task
    /// counts in every domain of its libraries.
    pub by_group: BTreeMap<String, GroupFigure>,
    /// pass@1 per library a BigCodeBench task uses, over the judged tasks using it.
    pub by_library: BTreeMap<String, GroupFigure>,
    /// Wall time of the judging.
    pub wall_seconds: Option<f64>,
    /// Tokens billed.
    pub tokens: Option<TokenUsage>,
    /// What `--stability` found.
    pub stability: Option<StabilitySummary>,
    /// BigCodeBench: answers that came with thinking.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub thinking: usize,
    /// Answers (BigCodeBench) or episodes (PyBench) that ended inside their thinking.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cut_while_thinking: usize,
    /// PyBench: what each LLM judging of the run found (`assay judge pybench`), as its
    /// `summary.json` keeps it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judges: Vec<JudgeFigures>,
    /// BigCodeBench: the samples that gamed their tests (skipped them, tampered with
    /// unittest...), whatever their verdict: the figure a reward built on the run must not pay.
    #[serde(default, skip_serializing_if = "source::none_gamed")]
    pub gamed: Gamed,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A group's figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupFigure {
    /// Judged tasks in the group.
    pub tasks: usize,
    /// Their mean pass@1.
    pub pass_at_1: f64,
}

impl Comparison {
    /// The tasks won and lost, and the test on them, in words.
    pub fn verdict(&self) -> String {
        // Four decimals, and a bound where they would round a small p to nothing.
        let p = if self.mcnemar_p < 1e-4 {
            "p < 0.0001".to_string()
        } else {
            format!("p = {:.4}", self.mcnemar_p)
        };
        format!(
            "{} won, {} lost; McNemar exact {p}",
            self.won.len(),
            self.lost.len(),
        )
    }
}

/// A run against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline's name.
    pub baseline: String,
    /// The run's name.
    pub run: String,
    /// Tasks both judged.
    pub shared_tasks: usize,
    /// The run's pass@1 minus the baseline's, over the shared tasks.
    pub difference: Option<Estimate>,
    /// Shared tasks the run passes and the baseline fails.
    pub won: Vec<String>,
    /// Shared tasks the baseline passes and the run fails.
    pub lost: Vec<String>,
    /// McNemar's exact two-sided p-value on `won` against `lost`.
    pub mcnemar_p: f64,
}

/// What `assay report` says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Each run, in the order given.
    pub runs: Vec<RunFigures>,
    /// Each run but the baseline, against it.
    pub comparisons: Vec<Comparison>,
    /// One row per model over BigCodeBench's settings, with Elo ratings, when the runs hold
    /// two models or more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaderboard: Option<Leaderboard>,
    /// How the intervals and the test are made.
    pub method: String,
}

/// The leaderboard view of the BigCodeBench paper and site.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Leaderboard {
    /// The settings, as columns: `complete`/`instruct` × `full`/`hard`, those present.
    pub columns: Vec<String>,
    /// One row per model, by rating.
    pub rows: Vec<LeaderRow>,
}

/// A model's row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaderRow {
    /// The model.
    pub model: String,
    /// pass@1 per setting it was run on.
    pub pass_at_1: BTreeMap<String, f64>,
    /// Its Elo rating from task-level battles, with a 95% bootstrap interval over tasks.
    pub elo: Estimate,
}

/// The per-task pass@k of `task`.
fn task_pass_at(task: &TaskResult, k: u64) -> f64 {
    pass_at_k(task.samples, task.passed, k)
}

fn estimate(values: &[f64]) -> Option<Estimate> {
    bootstrap_mean(values, RESAMPLES, SEED).map(|(value, ci)| Estimate {
        value,
        low: ci.low,
        high: ci.high,
    })
}

/// pass@1 per label of `labels` (task → its labels) over the run's judged tasks.
fn group_figures(
    run: &Run,
    labels: &BTreeMap<String, Vec<String>>,
) -> BTreeMap<String, GroupFigure> {
    let mut sums: BTreeMap<String, (usize, f64)> = BTreeMap::new();
    for (id, task) in run.judged() {
        for label in labels.get(id).into_iter().flatten() {
            let entry = sums.entry(label.clone()).or_default();
            entry.0 += 1;
            entry.1 += task_pass_at(task, 1);
        }
    }
    sums.into_iter()
        .map(|(label, (tasks, sum))| {
            let pass_at_1 = sum / tasks as f64;
            (label, GroupFigure { tasks, pass_at_1 })
        })
        .collect()
}

/// A run's figures.
pub fn figures(run: &Run) -> RunFigures {
    let judged: Vec<&TaskResult> = run.judged().map(|(_, t)| t).collect();
    let fewest = judged.iter().map(|t| t.samples).min().unwrap_or(0);
    let pass_at_k = DEFAULT_KS
        .iter()
        .filter(|&&k| k <= fewest)
        .filter_map(|&k| {
            let values: Vec<f64> = judged.iter().map(|t| task_pass_at(t, k)).collect();
            estimate(&values).map(|e| (k, e))
        })
        .collect();
    let by_group = group_figures(run, &run.groups);
    let by_library = group_figures(run, &run.libraries);
    RunFigures {
        label: run.label.clone(),
        benchmark: run.benchmark.clone(),
        split: run.split.clone(),
        model: run.model.clone(),
        tasks: run.tasks.len(),
        judged: judged.len(),
        infra_tasks: run.tasks.len() - judged.len(),
        statuses: run.statuses.clone(),
        pass_at_k,
        by_group,
        by_library,
        wall_seconds: run.wall_seconds,
        tokens: run.tokens.clone(),
        stability: run.stability.clone(),
        thinking: run.thinking,
        cut_while_thinking: run.cut_while_thinking,
        judges: run.judges.clone(),
        gamed: run.gamed.clone(),
    }
}

/// The samples of a run that gamed their tests, in one line: how many, of which kinds, in
/// which tasks; none for a run without any.
pub(crate) fn gamed_line(run: &RunFigures) -> Option<String> {
    let gamed = &run.gamed;
    (gamed.samples > 0).then(|| {
        format!(
            "{} ({}) in {}",
            count(gamed.samples, "sample", "samples"),
            gamed.kinds(),
            text::listed(&gamed.tasks)
        )
    })
}

/// What `--stability` found, in one line: pass@1's range and the verdicts that changed, each
/// with what changed it.
pub(crate) fn stability_line(found: &StabilitySummary) -> String {
    let range = &found.pass_at_1;
    let changed: Vec<String> = found
        .changed
        .iter()
        .map(|c| {
            let mut causes: Vec<&str> = c
                .rounds
                .iter()
                .map(|r| r.change.as_str())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            if c.changes_anyway {
                causes.push("and under the same conditions");
            }
            format!("{} ({})", c.task_id, causes.join(", "))
        })
        .collect();
    format!(
        "pass@1 {:.4}, {:.4} to {:.4} over {}; {} changed{}{}",
        range.run,
        range.min,
        range.max,
        count(found.rounds.len(), "round", "rounds"),
        count(changed.len(), "verdict", "verdicts"),
        if changed.is_empty() { "" } else { ": " },
        changed.join(", ")
    )
}

/// What a reasoning model's run came to, in one line: the completion tokens it spent thinking
/// (apart, since they are billed as output but are not the answers), the answers that came with
/// thinking, and those cut off inside it, which failed for the token limit rather than for
/// their code. None for a run without any, so that other runs' reports read as before.
pub(crate) fn reasoning_line(run: &RunFigures) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(t) = run.tokens.as_ref().filter(|t| t.reasoning_tokens > 0) {
        parts.push(format!(
            "{} completion tokens, of which {} reasoning",
            t.completion_tokens, t.reasoning_tokens
        ));
    }
    if run.thinking > 0 {
        parts.push(format!(
            "{} came with thinking",
            count(run.thinking, "answer", "answers")
        ));
    }
    if run.cut_while_thinking > 0 {
        parts.push(if run.benchmark == "pybench" {
            format!(
                "{} ended at a reply cut off inside its thinking (judged on what they produced)",
                count(run.cut_while_thinking, "episode", "episodes")
            )
        } else {
            format!(
                "{} ended inside its thinking, before any answer (judged fail)",
                count(run.cut_while_thinking, "answer", "answers")
            )
        });
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// `n` and what it counts: `one` when `n` is 1, else `many`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A cost in US dollars: cents, or finer below a dollar (a few requests cost fractions of a
/// cent).
pub fn dollars(usd: f64) -> String {
    if usd >= 1.0 {
        format!("${usd:.2}")
    } else {
        format!("${usd:.4}")
    }
}

/// A benchmark with its prompt style, as reports show it: `bigcodebench-hard complete`.
pub(crate) fn setting_name(benchmark: &str, split: Option<&str>) -> String {
    match split {
        Some(split) => format!("{benchmark} {split}"),
        None => benchmark.to_string(),
    }
}

/// A run as comparisons name it: its label, its benchmark and split.
fn name(run: &Run) -> String {
    format!(
        "{} ({})",
        run.label,
        setting_name(&run.benchmark, run.split.as_deref())
    )
}

/// `run` against `baseline`, on the tasks both judged.
pub fn compare(baseline: &Run, run: &Run) -> Comparison {
    let shared: Vec<(&String, &TaskResult, &TaskResult)> = baseline
        .judged()
        .filter_map(|(id, b)| {
            run.tasks
                .get(id)
                .filter(|r| r.samples > 0)
                .map(|r| (id, b, r))
        })
        .collect();
    let differences: Vec<f64> = shared
        .iter()
        .map(|(_, b, r)| task_pass_at(r, 1) - task_pass_at(b, 1))
        .collect();
    let won: Vec<String> = shared
        .iter()
        .filter(|(_, b, r)| r.passes() && !b.passes())
        .map(|(id, _, _)| id.to_string())
        .collect();
    let lost: Vec<String> = shared
        .iter()
        .filter(|(_, b, r)| b.passes() && !r.passes())
        .map(|(id, _, _)| id.to_string())
        .collect();
    Comparison {
        baseline: name(baseline),
        run: name(run),
        shared_tasks: shared.len(),
        difference: estimate(&differences),
        mcnemar_p: mcnemar_exact(won.len() as u64, lost.len() as u64),
        won,
        lost,
    }
}

/// The report over `runs`, each compared with `runs[baseline]`.
pub fn report(runs: &[Run], baseline: usize) -> Report {
    let comparisons = runs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != baseline)
        .map(|(_, run)| compare(&runs[baseline], run))
        .collect();
    Report {
        runs: runs.iter().map(figures).collect(),
        comparisons,
        leaderboard: leaderboard(runs),
        method: format!(
            "95% percentile bootstrap over tasks ({RESAMPLES} resamples, seed {SEED}); paired \
             differences resample tasks together; McNemar's exact test on tasks passed by one \
             run only (a task passes when at least half its samples do)"
        ),
    }
}

/// A BigCodeBench run's setting: `complete full`, `instruct hard`...
fn setting(run: &Run) -> Option<String> {
    let subset = match run.benchmark.as_str() {
        "bigcodebench" => "full",
        "bigcodebench-hard" => "hard",
        _ => return None,
    };
    Some(format!(
        "{} {subset}",
        run.split.as_deref().unwrap_or("complete")
    ))
}

/// The leaderboard over the BigCodeBench runs, when they hold two models or more: each
/// model's pass@1 per setting (its first run there), and Elo ratings from battles on every
/// task of every setting between the models judged on it.
fn leaderboard(runs: &[Run]) -> Option<Leaderboard> {
    let mut cells: BTreeMap<(String, String), &Run> = BTreeMap::new();
    for run in runs {
        if let Some(setting) = setting(run) {
            let model = run.model.clone().unwrap_or_else(|| run.label.clone());
            cells.entry((model, setting)).or_insert(run);
        }
    }
    let mut models: Vec<String> = cells.keys().map(|(m, _)| m.clone()).collect();
    models.dedup();
    if models.len() < 2 {
        return None;
    }
    let order = [
        "complete full",
        "instruct full",
        "complete hard",
        "instruct hard",
    ];
    let columns: Vec<String> = order
        .iter()
        .filter(|c| cells.keys().any(|(_, s)| s == *c))
        .map(|c| c.to_string())
        .collect();
    // One battle ground per (setting, task): whether each model passed it there.
    let mut grounds: BTreeMap<(String, String), Vec<Option<bool>>> = BTreeMap::new();
    for ((model, setting), run) in &cells {
        let index = models.iter().position(|m| m == model).expect("listed");
        for (task, result) in run.judged() {
            let ground = grounds
                .entry((setting.clone(), task.clone()))
                .or_insert_with(|| vec![None; models.len()]);
            ground[index] = Some(result.passes());
        }
    }
    let tasks: Vec<Vec<Option<bool>>> = grounds.into_values().collect();
    let rated = ratings(models.len(), &tasks, ELO_RESAMPLES, SEED);
    let mut rows: Vec<LeaderRow> = models
        .iter()
        .zip(rated)
        .map(|(model, (rating, ci))| LeaderRow {
            model: model.clone(),
            pass_at_1: cells
                .iter()
                .filter(|((m, _), _)| m == model)
                .map(|((_, s), run)| {
                    let values: Vec<f64> = run.judged().map(|(_, t)| task_pass_at(t, 1)).collect();
                    (
                        s.clone(),
                        values.iter().sum::<f64>() / values.len().max(1) as f64,
                    )
                })
                .collect(),
            elo: Estimate {
                value: rating,
                low: ci.low,
                high: ci.high,
            },
        })
        .collect();
    rows.sort_by(|a, b| b.elo.value.total_cmp(&a.elo.value));
    Some(Leaderboard { columns, rows })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn run(label: &str, tasks: &[(&str, u64, u64)]) -> Run {
        Run {
            label: label.into(),
            path: PathBuf::from(label),
            benchmark: "bigcodebench".into(),
            split: Some("complete".into()),
            model: None,
            tasks: tasks
                .iter()
                .map(|(id, n, c)| {
                    (
                        id.to_string(),
                        TaskResult {
                            samples: *n,
                            passed: *c,
                            infra: 0,
                        },
                    )
                })
                .collect(),
            groups: BTreeMap::new(),
            libraries: BTreeMap::new(),
            statuses: BTreeMap::new(),
            wall_seconds: None,
            tokens: None,
            stability: None,
            thinking: 0,
            cut_while_thinking: 0,
            judges: Vec::new(),
            gamed: Default::default(),
            failures: Vec::new(),
            failing: 0,
        }
    }

    #[test]
    fn figures_and_a_paired_comparison() {
        let a = run(
            "a",
            &[("t1", 1, 1), ("t2", 1, 0), ("t3", 1, 1), ("t4", 1, 0)],
        );
        let mut b = run(
            "b",
            &[("t1", 1, 1), ("t2", 1, 1), ("t3", 1, 0), ("t4", 1, 1)],
        );
        b.tasks.insert(
            "t5".into(),
            TaskResult {
                samples: 0,
                passed: 0,
                infra: 1,
            },
        );
        let f = figures(&b);
        assert_eq!((f.tasks, f.judged, f.infra_tasks), (5, 4, 1));
        assert_eq!(f.pass_at_k[&1].value, 0.75);
        let c = compare(&a, &b);
        assert_eq!(c.shared_tasks, 4);
        assert_eq!(
            (c.won.clone(), c.lost.clone()),
            (vec!["t2".to_string(), "t4".into()], vec!["t3".to_string()])
        );
        assert_eq!(c.difference.unwrap().value, 0.25);
        assert_eq!(c.mcnemar_p, 1.0); // binomtest(1, 3) = 1.0
        let same = |r: &Run| Run {
            model: Some("m1".into()),
            ..r.clone()
        };
        let r = report(&[same(&a), same(&b)], 0);
        assert_eq!(r.comparisons.len(), 1);
        assert!(r.leaderboard.is_none(), "one model");
        let mut other = b.clone();
        other.model = Some("m2".into());
        let board = report(&[a, other], 0).leaderboard.unwrap();
        assert_eq!(board.columns, ["complete full"]);
        assert_eq!(board.rows.len(), 2);
        assert_eq!(board.rows[0].model, "m2", "the better model first");
    }

    #[test]
    fn a_task_with_exactly_half_its_samples_passing_passes() {
        let half = TaskResult {
            samples: 6,
            passed: 3,
            infra: 0,
        };
        assert!(half.passes());
        assert!(
            task_pass_at(&half, 1) < 0.5,
            "what a rule on pass@1 would miss"
        );
        assert!(!TaskResult {
            samples: 6,
            passed: 2,
            infra: 0
        }
        .passes());
        assert!(!TaskResult::default().passes(), "no judged sample");
        let a = run("a", &[("t1", 6, 0), ("t2", 8, 4)]);
        let b = run("b", &[("t1", 6, 3), ("t2", 8, 3)]);
        let c = compare(&a, &b);
        assert_eq!(
            (c.won, c.lost),
            (vec!["t1".to_string()], vec!["t2".to_string()])
        );
        // The leaderboard's battles count the same way: m2 wins two tasks on exact halves
        // and loses one; a rule on pass@1 would have it lose one and tie the rest.
        let mut a = run("a", &[("t1", 6, 0), ("t2", 6, 6), ("t3", 8, 0)]);
        let mut b = run("b", &[("t1", 6, 3), ("t2", 6, 0), ("t3", 8, 4)]);
        a.model = Some("m1".into());
        b.model = Some("m2".into());
        let board = report(&[a, b], 0).leaderboard.unwrap();
        assert_eq!(
            board.rows[0].model, "m2",
            "the model winning more battles first"
        );
        assert!(board.rows[0].elo.value > board.rows[1].elo.value);
    }

    #[test]
    fn pass_at_k_needs_enough_samples_on_every_task() {
        let r = run("r", &[("t1", 5, 2), ("t2", 10, 0)]);
        let f = figures(&r);
        assert_eq!(f.pass_at_k.keys().copied().collect::<Vec<_>>(), [1, 5]);
        assert!((f.pass_at_k[&1].value - 0.2).abs() < 1e-12);
    }

    #[test]
    fn a_p_value_too_small_for_four_decimals_is_bounded_not_rounded_to_zero() {
        let comparison = |p: f64| Comparison {
            baseline: "a".into(),
            run: "b".into(),
            shared_tasks: 143,
            difference: None,
            won: vec![],
            lost: vec!["BigCodeBench/1".into()],
            mcnemar_p: p,
        };
        assert_eq!(
            comparison(1e-35).verdict(),
            "0 won, 1 lost; McNemar exact p < 0.0001"
        );
        assert_eq!(
            comparison(0.0432854).verdict(),
            "0 won, 1 lost; McNemar exact p = 0.0433"
        );
    }
}
