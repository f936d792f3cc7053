//! The report as a terminal shows it: one row per run, then each run against the baseline.

use std::fmt::Write;

use crate::{Estimate, Report};

/// How many flipped tasks a comparison lists before it counts the rest.
const LISTED: usize = 10;

fn interval(e: &Estimate) -> String {
    format!("{:.4} [{:.4}, {:.4}]", e.value, e.low, e.high)
}

fn signed(e: &Estimate) -> String {
    format!("{:+.4} [{:+.4}, {:+.4}]", e.value, e.low, e.high)
}

fn tokens(n: u64) -> String {
    match n {
        n if n >= 1_000_000 => format!("{:.1}M", n as f64 / 1e6),
        n if n >= 1_000 => format!("{:.1}k", n as f64 / 1e3),
        n => n.to_string(),
    }
}

/// The first few of `ids`, and how many more there are.
pub(crate) fn listed(ids: &[String]) -> String {
    let mut shown = ids
        .iter()
        .take(LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > LISTED {
        let _ = write!(shown, " and {} more", ids.len() - LISTED);
    }
    shown
}

/// The report as text.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let benchmark =
        |run: &crate::RunFigures| crate::setting_name(&run.benchmark, run.split.as_deref());
    let width = report
        .runs
        .iter()
        .map(|r| r.label.len())
        .max()
        .unwrap_or(3)
        .max(3);
    let bench = report
        .runs
        .iter()
        .map(|r| benchmark(r).len())
        .max()
        .unwrap_or(9)
        .max(9);
    let _ = writeln!(
        out,
        "{:<width$}  {:<bench$}  {:>5} {:>6} {:>5}  {:<26} {:<7} {:>7} {:>7}",
        "run",
        "benchmark",
        "tasks",
        "judged",
        "infra",
        "pass@1 [95% CI]",
        "pass@5",
        "time",
        "tokens"
    );
    for run in &report.runs {
        let _ = writeln!(
            out,
            "{:<width$}  {:<bench$}  {:>5} {:>6} {:>5}  {:<26} {:<7} {:>7} {:>7}",
            run.label,
            benchmark(run),
            run.tasks,
            run.judged,
            run.infra_tasks,
            run.pass_at_k.get(&1).map_or("-".into(), interval),
            run.pass_at_k
                .get(&5)
                .map_or("-".into(), |e| format!("{:.4}", e.value)),
            run.wall_seconds.map_or("-".into(), |s| format!("{s:.0} s")),
            run.tokens.as_ref().map_or("-".into(), |t| tokens(
                t.prompt_tokens + t.completion_tokens
            )),
        );
        let statuses: Vec<String> = run
            .statuses
            .iter()
            .map(|(s, n)| format!("{s} {n}"))
            .collect();
        let _ = writeln!(out, "{:<width$}  samples: {}", "", statuses.join(", "));
        if let Some(line) = crate::reasoning_line(run) {
            let _ = writeln!(out, "{:<width$}  reasoning: {line}", "");
        }
        if let Some(found) = &run.stability {
            let line = crate::stability_line(found);
            let _ = writeln!(out, "{:<width$}  stability: {line}", "");
        }
    }
    let groups: std::collections::BTreeSet<&String> =
        report.runs.iter().flat_map(|r| r.by_group.keys()).collect();
    if !groups.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "pass@1 by BigCodeBench domain / PyBench category (judged tasks in it):"
        );
        let gw = groups.iter().map(|g| g.len()).max().unwrap_or(5);
        let mut header = format!("{:<gw$}", "");
        for (i, _) in report.runs.iter().enumerate() {
            let _ = write!(header, "  {:>14}", format!("run {}", i + 1));
        }
        let _ = writeln!(out, "{header}");
        for group in groups {
            let mut line = format!("{group:<gw$}");
            for run in &report.runs {
                let cell = run
                    .by_group
                    .get(group)
                    .map_or("-".into(), |f| format!("{:.4} ({})", f.pass_at_1, f.tasks));
                let _ = write!(line, "  {cell:>14}");
            }
            let _ = writeln!(out, "{line}");
        }
        for (i, run) in report.runs.iter().enumerate() {
            let _ = writeln!(out, "  run {}: {}", i + 1, run.label);
        }
    }
    crate::judge::terminal(&mut out, report);
    for c in &report.comparisons {
        let _ = writeln!(out);
        if c.shared_tasks == 0 {
            let _ = writeln!(
                out,
                "{} and {} have no judged task in common.",
                c.run, c.baseline
            );
            continue;
        }
        let _ = writeln!(
            out,
            "{} against {} on {} shared tasks:",
            c.run, c.baseline, c.shared_tasks
        );
        if let Some(d) = &c.difference {
            let _ = writeln!(out, "  pass@1 difference {}", signed(d));
        }
        let _ = writeln!(out, "  {}", c.verdict());
        if !c.won.is_empty() {
            let _ = writeln!(out, "  now passing: {}", listed(&c.won));
        }
        if !c.lost.is_empty() {
            let _ = writeln!(out, "  now failing: {}", listed(&c.lost));
        }
    }
    if let Some(board) = &report.leaderboard {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "leaderboard (pass@1; Elo from task-level battles, 95% bootstrap interval over tasks):"
        );
        let width = board
            .rows
            .iter()
            .map(|r| r.model.len())
            .max()
            .unwrap_or(5)
            .max(5);
        let mut header = format!("{:<width$}", "model");
        for column in &board.columns {
            let _ = write!(header, "  {column:>13}");
        }
        let _ = writeln!(out, "{header}  {:>20}", "Elo");
        for row in &board.rows {
            let mut line = format!("{:<width$}", row.model);
            for column in &board.columns {
                let cell = row
                    .pass_at_1
                    .get(column)
                    .map_or("-".into(), |v| format!("{v:.4}"));
                let _ = write!(line, "  {cell:>13}");
            }
            let elo = format!(
                "{:.0} [{:.0}, {:.0}]",
                row.elo.value, row.elo.low, row.elo.high
            );
            let _ = writeln!(out, "{line}  {elo:>20}");
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "intervals: {}", report.method);
    out
}
