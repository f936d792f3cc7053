//! The report as a terminal shows it: one row per run, then each run against the baseline.

use std::fmt::Write;

use crate::text::listed;
use crate::{Estimate, Report};

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
        if let Some(line) = crate::gamed_line(run) {
            let _ = writeln!(out, "{:<width$}  gamed their tests: {line}", "");
        }
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

#[cfg(test)]
mod tests {
    use crate::judge::tests::{judging, report_of};

    #[test]
    fn the_terminal_gives_the_papers_figures_the_agreement_and_the_position() {
        let text = crate::render(&report_of("run1", vec![judging()]));
        for line in [
            "run1: judge openai:<b>judge</b> (winlose prompt, reference data:trajectory.jsonl, \
             both orders): 5 tasks, 0 set apart, 4 verdicts read, 1 unreadable, 0 not answered",
            "  Pass Rate (LLM) 75.0% (3/4; 60.0% of all 5); the reference 50.0%",
            "    chart_analysis 3/4 (75.0%)",
            "  win/tie/lose against the reference (by decision): 2/1/1",
            "  average turns 4.2 as the paper counts them (10 where the judge failed it); 3.5 by \
             the faithful checks",
            "  the judge against the faithful checks over 4 tasks: agree 50.0%, Cohen's kappa -0.33",
            "                checks pass  checks fail",
            "    judge pass            2            1",
            "    judge fail            1            0",
            "    passed by the judge only: PyBench/7",
            "    passed by the checks only: PyBench/2",
            "  position: over 4 pairs judged both ways, the preference changed with the order in 3 \
             (75.0% followed the position: 0 Agent1 both times, 3 Agent2; 0 a tie one way); the \
             run's Pass changed in 1 (1 only as Agent2, 0 only as Agent1)",
            "    preference changed: PyBench/2, PyBench/3, PyBench/7",
            "    the run's Pass changed: PyBench/3",
            "  unreadable (1, counted in no rate): PyBench/102",
            "  the paper (Qwen2-7B-Instruct): Pass Rate (LLM) 57.8%, win/tie/lose 85/2/56 against \
             GPT-3.5, average turns 4.9",
            "  the judge: 8 requests, tokens 40000 in, 300 out, $0.0123",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} is not in:\n{text}");
        }
    }

    #[test]
    fn kappa_is_undefined_where_chance_agrees_on_every_task_and_a_run_unjudged_reads_as_before() {
        let mut f = judging();
        f.agreement.kappa = None;
        f.position = None;
        f.published = None;
        let text = crate::render(&report_of("run1", vec![f]));
        assert!(text.contains("Cohen's kappa undefined"), "{text}");
        assert!(!text.contains("position:"), "{text}");
        assert!(!text.contains("the paper ("), "{text}");
        let plain = crate::render(&report_of("run1", vec![]));
        assert!(!plain.contains("LLM judges"), "{plain}");
        let page = crate::html(&report_of("run1", vec![]), &[]);
        assert!(!page.contains("LLM judges"));
    }
}
