//! What commands print when they are done (progress while they run is `progress`).

use std::path::Path;

use assay_eval::bigcodebench::ground_truth::{could_not_run, failed_ids};
use assay_records::{
    ContextCounts, EvalSummary, GenerationOutcome, GroundTruthSummary, Slow, Split,
    StabilitySummary, TokenUsage, OFFICIAL_TIMEOUT_SECONDS,
};
use assay_report::{count, dollars};

/// An error and its causes, each said once, as `error: ...` prints it. assay's errors name the
/// file and put their cause's words in their own message, and also hand the cause on as their
/// `source()`; anyhow's `{:#}` would then say the cause twice ("x.jsonl: No such file or
/// directory (os error 2): No such file or directory (os error 2)"). A cause whose words the
/// message so far already holds is left out.
pub fn error(err: &anyhow::Error) -> String {
    let mut text = err.to_string();
    for cause in err.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

/// `, $X` when there is a cost, to end a phrase about tokens.
fn cost(usd: Option<f64>) -> String {
    usd.map(|usd| format!(", {}", dollars(usd)))
        .unwrap_or_default()
}

/// Prints what an evaluation came to.
pub fn evaluation(benchmark: &str, split: Split, version: &str, summary: &EvalSummary, dir: &Path) {
    let scores = &summary.scores;
    println!(
        "{benchmark} ({}, {version}): {}, {} of {} judged",
        split.as_str(),
        count(summary.samples, "sample", "samples"),
        scores.tasks_judged,
        count(summary.tasks_in_dataset, "task", "tasks")
    );
    let set_apart = match (scores.samples_set_apart, scores.tasks_set_apart.len()) {
        (0, _) => String::new(),
        (samples, 0) => format!(
            " ({} set apart)",
            count(samples, "infra sample", "infra samples")
        ),
        (samples, tasks) => format!(
            " ({} set apart; {} with no verdict at all)",
            count(samples, "infra sample", "infra samples"),
            count(tasks, "task", "tasks"),
        ),
    };
    for (k, v) in &scores.pass_at_k {
        println!(
            "  {k}: {v:.4} over {} judged{set_apart}",
            count(scores.tasks_judged, "task", "tasks")
        );
    }
    if scores.samples_set_apart > 0 {
        let tasks = scores.tasks_judged + scores.tasks_set_apart.len();
        for (k, v) in &scores.pass_at_k_infra_as_fail {
            println!(
                "  {k} with infra as failures: {v:.4} over {} (the official harness's figure \
                 on this machine)",
                count(tasks, "task", "tasks")
            );
        }
    }
    let counts = |m: &std::collections::BTreeMap<String, usize>| {
        m.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("  assay statuses: {}", counts(&summary.statuses));
    println!("  official statuses: {}", counts(&summary.official));
    if summary.gamed.samples > 0 {
        println!(
            "  gamed their tests: {} ({})",
            summary.gamed.samples,
            summary.gamed.kinds()
        );
    }
    let truth = &summary.ground_truth;
    println!(
        "  ground truth here: {:.4}{}",
        truth.pass_rate,
        match not_passing(truth).as_str() {
            "" => String::new(),
            said => format!(" ({said}; `assay check` lists them)"),
        }
    );
    if scores.tasks_judged < summary.tasks_in_dataset {
        println!(
            "  warning: pass@k covers {} of {} tasks ({} without samples, {} infra only)",
            scores.tasks_judged,
            summary.tasks_in_dataset,
            summary.tasks_missing.len(),
            scores.tasks_set_apart.len(),
        );
    }
    if let Some(context) = summary.context {
        println!("  {}", context_window(context));
    }
    if !summary.infra.is_empty() {
        println!(
            "  infra (not counted; the environment decided): {}",
            summary.infra.len()
        );
        for (task, reason) in &summary.infra {
            println!("    {task}: {reason}");
        }
    }
    let slow: Vec<String> = summary
        .slowest
        .iter()
        .take(5)
        .map(|Slow(task, secs, status)| format!("{task} {secs:.1} s ({status})"))
        .collect();
    println!("  slowest: {}", slow.join(", "));
    if let Some(tokens) = &summary.tokens {
        println!(
            "  model tokens: {} prompt, {} completion{}",
            tokens.prompt_tokens,
            tokens.completion_tokens,
            cost(summary.cost_usd)
        );
    }
    if let Some(found) = &summary.stability {
        stability(found);
    }
    let saved = &summary.budgets_saved;
    if saved.samples > 0 {
        println!(
            "  time budgets ended {} before the official {OFFICIAL_TIMEOUT_SECONDS} s: {:.0} s of \
             waiting saved",
            count(saved.samples, "timed-out sample", "timed-out samples"),
            saved.seconds
        );
    }
    println!(
        "  {:.0} s; results in {}",
        summary.wall_seconds,
        dir.display()
    );
}

/// The references that do not pass here, those that ran and failed apart from those that could
/// not run (`infra`), e.g. `2 reference solutions fail here, 3 could not run here (infra)`;
/// empty when all pass. The official `gt_pass_rate` and `failed_tasks` count both as failed.
fn not_passing(truth: &GroundTruthSummary) -> String {
    let unrun = truth
        .failed_tasks
        .values()
        .filter(|reason| could_not_run(reason))
        .count();
    let failing = truth.failed_tasks.len() - unrun;
    let fail = count(
        failing,
        "reference solution fails",
        "reference solutions fail",
    );
    // After the failing ones, the number alone: "2 ... fail here, 3 could not run here".
    let could = match failing {
        0 => count(
            unrun,
            "reference solution could",
            "reference solutions could",
        ),
        _ => format!("{unrun} could"),
    };
    match (failing, unrun) {
        (0, 0) => String::new(),
        (_, 0) => format!("{fail} here"),
        (0, _) => format!("{could} not run here (infra)"),
        _ => format!("{fail} here, {could} not run here (infra)"),
    }
}

/// Prints what `--stability` found.
fn stability(found: &StabilitySummary) {
    let range = &found.pass_at_1;
    println!(
        "  stability: pass@1 {:.4} here, {:.4} to {:.4} over {}",
        range.run,
        range.min,
        range.max,
        count(found.rounds.len(), "round", "rounds")
    );
    for round in &found.rounds {
        println!(
            "    round {} ({}): pass@1 {:.4}, {} of {} changed",
            round.round,
            round.change.describe(),
            round.pass_at_1,
            round.changed,
            count(round.samples, "verdict", "verdicts")
        );
    }
    for changed in &found.changed {
        let rounds: Vec<String> = changed
            .rounds
            .iter()
            .map(|r| {
                format!(
                    "{} with {} (round {}): {}",
                    r.status,
                    r.change.describe(),
                    r.round,
                    first_line(&r.reason)
                )
            })
            .collect();
        println!(
            "    {} (sample {}): {} here; {}{}",
            changed.task_id,
            changed.index,
            changed.status,
            rounds.join("; "),
            if changed.changes_anyway {
                "; changes under the same conditions too"
            } else {
                ""
            }
        );
    }
}

/// Prints what a generation came to.
pub fn generation(outcome: &GenerationOutcome) {
    let t = &outcome.totals;
    println!(
        "generated {} ({}, {} retried; tokens: {} prompt, {} completion{}{}; \
         latency mean {:.1} s, max {:.1} s)",
        count(outcome.samples, "sample", "samples"),
        count(t.requests, "request", "requests"),
        t.retried_requests,
        t.usage.prompt_tokens,
        t.usage.completion_tokens,
        reasoning(&t.usage, t.reasoning_cost_usd),
        cost(t.cost_usd),
        t.latency_mean_seconds,
        t.latency_max_seconds,
    );
    if t.cut_short > 0 || t.empty > 0 {
        println!(
            "  warning: {} the token limit (--max-tokens), {} empty; they are scored as they are",
            count(t.cut_short, "answer hit", "answers hit"),
            count(t.empty, "is", "are")
        );
    }
    if t.thinking > 0 {
        println!(
            "  {} came with thinking, set apart from what is judged{}",
            count(t.thinking, "answer", "answers"),
            if t.cut_while_thinking > 0 {
                format!(
                    "; {} ended inside it, before any answer (judged fail; a higher \
                     --max-tokens leaves room to answer)",
                    t.cut_while_thinking
                )
            } else {
                String::new()
            }
        );
    }
    if !t.context.is_zero() {
        println!("  {}", context_window(t.context));
    }
    if !outcome.unanswered.is_empty() {
        println!(
            "  {} tasks lack answers (the requests failed; rerun the same command to ask again):",
            outcome.unanswered.len()
        );
        for u in &outcome.unanswered {
            let noun = if u.samples == 1 { "sample" } else { "samples" };
            println!("    {} ({} {noun}): {}", u.task_id, u.samples, u.reason);
        }
    }
}

/// The part of the completion tokens spent thinking, where the provider said, and what it
/// cost.
fn reasoning(usage: &TokenUsage, cost_usd: Option<f64>) -> String {
    match usage.reasoning_tokens {
        0 => String::new(),
        n => format!(" (of which {n} reasoning{})", cost(cost_usd)),
    }
}

/// What the model's context window did to the answers, in a sentence.
fn context_window(context: ContextCounts) -> String {
    format!(
        "the model's context window: {} asked again with the token limit that fits, {} left \
         empty because their prompt does not fit it (judged fail; generation.jsonl says why)",
        count(context.lowered, "answer", "answers"),
        count(context.empty, "answer", "answers"),
    )
}

/// Prints what a check of the reference solutions came to.
pub fn check(benchmark: &str, tasks: usize, summary: &GroundTruthSummary) {
    println!(
        "{benchmark}: the reference solutions of {:.4} of {tasks} tasks pass here",
        summary.pass_rate
    );
    let (unrun, failing): (Vec<&str>, Vec<&str>) = failed_ids(summary)
        .into_iter()
        .partition(|task| could_not_run(&summary.failed_tasks[*task]));
    for (heading, tasks) in [("failing", failing), ("could not run here (infra)", unrun)] {
        if !tasks.is_empty() {
            println!("  {heading} ({}):", tasks.len());
        }
        for task in tasks {
            println!("    {task}: {}", first_line(&summary.failed_tasks[task]));
        }
    }
    let peaks = &summary.processes;
    if let Some((task, peak)) = peaks.highest.first() {
        println!(
            "  processes and threads at once: at most {peak} ({task}), over {} references \
             measured",
            peaks.measured
        );
    }
    println!("  reference results: {}", summary.cache.display());
}

/// A reason's first line, shortened: tracebacks belong in the files.
fn first_line(reason: &str) -> String {
    let line = reason.lines().next().unwrap_or_default();
    match line.char_indices().nth(160) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

/// Prints what a PyBench run or evaluation came to: both verdicts' pass rates (over every
/// task, as the paper divides, and over the judged ones), per category, turns and tokens.
pub fn pybench(summary: &assay_records::PybenchSummary, dir: &Path) {
    println!(
        "pybench: {}, {} judged, headline: {} checks",
        count(summary.tasks, "task", "tasks"),
        summary.judged,
        summary.checks
    );
    for (name, figures) in [("faithful", &summary.faithful), ("fixed", &summary.fixed)] {
        let categories: Vec<String> = figures
            .categories
            .iter()
            .map(|(c, f)| format!("{c} {}/{}", f.passed, f.tasks))
            .collect();
        println!(
            "  {name:<8} pass rate {:.1}% ({}/{}), {:.1}% of judged; average turns {:.1}",
            figures.pass_rate * 100.0,
            figures.passed,
            summary.tasks,
            figures.pass_rate_judged * 100.0,
            figures.average_turns
        );
        println!("           {}", categories.join(", "));
    }
    if let Some(paper) = &summary.published {
        let categories: Vec<String> = paper
            .categories
            .iter()
            .map(|(c, r)| format!("{c} {:.1}%", r * 100.0))
            .collect();
        println!(
            "  the paper ({}): pass rate {:.1}%, average turns {:.1}; {}",
            paper.model,
            paper.pass_rate * 100.0,
            paper.average_turns,
            categories.join(", ")
        );
    }
    println!(
        "  replies per judged task {:.1}; tokens {} in, {} out{}{}; {:.0} s",
        summary.average_turns_raw,
        summary.tokens.prompt_tokens,
        summary.tokens.completion_tokens,
        reasoning(&summary.tokens, summary.reasoning_cost_usd),
        cost(summary.cost_usd),
        summary.wall_seconds
    );
    if !summary.context_full.is_empty() {
        println!(
            "  ended at a full context window ({}, judged on what they produced):",
            summary.context_full.len()
        );
        for (task, said) in &summary.context_full {
            println!("    {task}: {}", first_line(said));
        }
    }
    if !summary.cut_while_thinking.is_empty() {
        println!(
            "  ended at a reply cut off inside its thinking ({}, judged on what they produced; \
             a higher --max-tokens leaves room to answer): {}",
            summary.cut_while_thinking.len(),
            summary.cut_while_thinking.join(", ")
        );
    }
    if !summary.infra.is_empty() {
        println!("  infra ({}, not judged):", summary.infra.len());
        for (task, why) in summary.infra.iter().take(20) {
            println!("    {task}: {why}");
        }
        if summary.infra.len() > 20 {
            println!(
                "    ... and {} more in summary.json",
                summary.infra.len() - 20
            );
        }
    }
    for judging in &summary.judges {
        pybench_judge(judging, dir);
    }
    println!("  files: {}", dir.display());
}

/// Prints what an LLM judge said of a PyBench run: the paper's figures, the judge against the
/// unit checks, and how far its verdict follows the order the pair came in (the report's
/// words).
pub fn pybench_judge(figures: &assay_records::JudgeFigures, dir: &Path) {
    print!("{}", assay_report::judge::lines(figures));
    println!("  files: {}", dir.join("judgements.jsonl").display());
}

/// What a user must know of fetched PyBench data, after `assay data pybench` (stdout) or a
/// run that fetched or found it (stderr): its license notice, and the tasks whose input files
/// the tree lacks (a run records them as `infra`).
pub fn pybench_data(fetched: &assay_pipeline::pybench_data::Fetched) -> String {
    let mut text = format!("{}\n", assay_pipeline::pybench_data::NOTICE);
    if fetched.lacking.is_empty() {
        text.push_str("Every task's input files are there.\n");
        return text;
    }
    let ids: Vec<&str> = fetched.lacking.iter().map(|(id, _)| id.as_str()).collect();
    text.push_str(&format!(
        "{} lack input files here (a run records them as infra): {}\n",
        count(fetched.lacking.len(), "task", "tasks"),
        ids.join(", ")
    ));
    for (id, paths) in &fetched.lacking {
        text.push_str(&format!("  {id}: {}\n", paths.join(", ")));
    }
    text
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use assay_records::{GroundTruthSummary, ProcessPeaks};

    use super::{error, not_passing};

    fn truth(reasons: &[&str]) -> GroundTruthSummary {
        GroundTruthSummary {
            pass_rate: 0.5,
            failed_tasks: reasons
                .iter()
                .enumerate()
                .map(|(n, r)| (format!("BigCodeBench/{n}"), r.to_string()))
                .collect::<BTreeMap<_, _>>(),
            cache: Default::default(),
            processes: ProcessPeaks {
                measured: 0,
                highest: Vec::new(),
            },
        }
    }

    #[test]
    fn references_that_could_not_run_are_not_said_to_fail() {
        assert_eq!(not_passing(&truth(&[])), "");
        assert_eq!(
            not_passing(&truth(&["fail: 1 of 2 tests failed"])),
            "1 reference solution fails here"
        );
        let nltk = "infra: NLTK data missing";
        assert_eq!(
            not_passing(&truth(&[nltk, nltk, "not run"])),
            "3 reference solutions could not run here (infra)"
        );
        assert_eq!(
            not_passing(&truth(&["error: ImportError", "timeout: 240 s", nltk])),
            "2 reference solutions fail here, 1 could not run here (infra)"
        );
    }

    #[test]
    fn a_cause_already_in_the_message_is_said_once() {
        let missing = std::fs::read("/nonexistent/x.jsonl").unwrap_err();
        let said = missing.to_string();
        // As assay's error types are: the cause's words in the message, and the cause chained.
        #[derive(Debug)]
        struct Named(std::io::Error);
        impl std::fmt::Display for Named {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "x.jsonl: {}", self.0)
            }
        }
        impl std::error::Error for Named {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let err = anyhow::Error::new(Named(missing)).context("reading the samples");
        assert_eq!(error(&err), format!("reading the samples: x.jsonl: {said}"));
        // A cause the message does not hold is still said.
        let err = anyhow::anyhow!("os said no").context("--samples x.jsonl");
        assert_eq!(error(&err), "--samples x.jsonl: os said no");
    }
}
