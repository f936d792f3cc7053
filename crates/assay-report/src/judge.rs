//! What LLM judges said of PyBench runs (`assay judge pybench`, kept in `summary.json`'s
//! `judges`), in the report: the paper's figures (Pass Rate (LLM), win/tie/lose against the
//! reference, average turns as it counts them), and what no paper reports: how far the judge
//! agrees with the unit checks and how far its verdict follows the order the pair came in.
//!
//! The sentences are made once here, so that the terminal and the HTML page say the same
//! thing in the same words (those `assay judge` prints).

use std::collections::BTreeMap;
use std::fmt::Write;

use assay_records::{Agreement, JudgeFigures, PositionBias, PublishedJudge, ReplyLeniency};

use crate::text::{escape, listed};
use crate::{count, dollars, Report, RunFigures};

/// Unreadable and failed tasks the terminal gives the reasons of.
const REASONS_PRINTED: usize = 5;
/// Unreadable and failed tasks the HTML page lists with their reasons (the rest are counted).
const REASONS_SHOWN: usize = 50;

/// `0.441` as `44.1%`.
fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// The judge, its prompt, its reference and the orders asked: what makes one judging.
pub fn title(f: &JudgeFigures) -> String {
    let s = &f.settings;
    format!(
        "judge {} ({} prompt, reference {}, {})",
        s.judge,
        s.prompt.as_str(),
        s.reference,
        if f.both_orders {
            "both orders"
        } else {
            "the paper's order"
        }
    )
}

/// What was read of the replies: how many only leniently (upstream's reader would have
/// counted them unreadable) and how many were asked again, so a strict reading stays
/// visible.
pub fn counts(f: &JudgeFigures) -> String {
    let mut lenient = String::new();
    if !f.lenient.is_empty() {
        let mut by_kind: BTreeMap<ReplyLeniency, usize> = BTreeMap::new();
        for kind in f.lenient.values().flatten() {
            *by_kind.entry(*kind).or_default() += 1;
        }
        let kinds: Vec<String> = by_kind
            .iter()
            .map(|(kind, n)| format!("{} {n}", kind.as_str()))
            .collect();
        lenient = format!(
            " ({} only leniently: {})",
            f.lenient.len(),
            kinds.join(", ")
        );
    }
    let mut reasked = String::new();
    if !f.reasked.is_empty() {
        reasked = format!(
            "; {} asked again ({} asks)",
            f.reasked.len(),
            f.reasked.values().sum::<u32>()
        );
    }
    format!(
        "{}, {} set apart, {} read{lenient}, {} unreadable, {} not answered{reasked}",
        count(f.tasks, "task", "tasks"),
        f.set_apart.len(),
        count(f.read, "verdict", "verdicts"),
        f.unreadable.len(),
        f.failed.len()
    )
}

/// Pass Rate (LLM) over the verdicts read (upstream's division), of all tasks, and the
/// reference's by the same judge.
pub fn pass_rate(f: &JudgeFigures) -> String {
    format!(
        "Pass Rate (LLM) {} ({}/{}; {} of all {}); the reference {}",
        pct(f.pass_rate),
        f.passed,
        f.read,
        pct(f.pass_rate_all),
        f.tasks,
        pct(f.reference_pass_rate)
    )
}

/// Per paper category: passed of read, and the rate.
pub fn categories(f: &JudgeFigures) -> String {
    f.categories
        .iter()
        .map(|(c, x)| format!("{c} {}/{} ({})", x.passed, x.tasks, pct(x.pass_rate)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Win/tie/lose of the run against the reference.
pub fn win_tie_lose(f: &JudgeFigures) -> String {
    let w = &f.win_tie_lose;
    format!(
        "win/tie/lose against the reference (by {}): {}/{}/{}",
        w.by, w.win, w.tie, w.lose
    )
}

/// Average turns as the paper counts them beside assay's count.
pub fn turns(f: &JudgeFigures) -> String {
    format!(
        "average turns {:.1} as the paper counts them (10 where the judge failed it); {:.1} by \
         the {} checks",
        f.average_turns, f.average_turns_checks, f.agreement.checks
    )
}

/// Cohen's kappa to two places, or why there is none.
pub fn kappa(a: &Agreement) -> String {
    a.kappa
        .map_or_else(|| "undefined".to_string(), |k| format!("{k:.2}"))
}

/// The judge against the unit checks, in one sentence.
pub fn agreement(a: &Agreement) -> String {
    format!(
        "the judge against the {} checks over {} tasks: agree {}, Cohen's kappa {}",
        a.checks,
        a.tasks,
        pct(a.observed),
        kappa(a)
    )
}

/// How far the verdict follows the order, in one sentence.
pub fn position(p: &PositionBias) -> String {
    format!(
        "position: over {} pairs judged both ways, the preference changed with the order in {} \
         ({} followed the position: {} Agent1 both times, {} Agent2; {} a tie one way); the \
         run's Pass changed in {} ({} only as Agent2, {} only as Agent1)",
        p.pairs,
        p.changed_tasks.len(),
        pct(p.rate),
        p.follows_first,
        p.follows_second,
        p.other,
        p.pass_changed_tasks.len(),
        p.pass_only_second,
        p.pass_only_first
    )
}

/// The paper's figures for the run's model.
pub fn paper(p: &PublishedJudge) -> String {
    format!(
        "the paper ({}): Pass Rate (LLM) {}{}, average turns {:.1}",
        p.model,
        pct(p.pass_rate),
        paper_win_tie_lose(p)
            .map(|w| format!(", win/tie/lose {w}"))
            .unwrap_or_default(),
        p.average_turns
    )
}

/// The paper's win/tie/lose, drawn against GPT-3.5's trajectories.
fn paper_win_tie_lose(p: &PublishedJudge) -> Option<String> {
    p.win_tie_lose
        .map(|[w, t, l]| format!("{w}/{t}/{l} against GPT-3.5"))
}

/// What the judge was asked and what it cost.
pub fn usage(f: &JudgeFigures) -> String {
    let t = &f.tokens;
    let mut line = format!(
        "the judge: {} requests, tokens {} in, {} out",
        f.requests, t.prompt_tokens, t.completion_tokens
    );
    if t.reasoning_tokens > 0 {
        let _ = write!(line, " (of which {} reasoning)", t.reasoning_tokens);
    }
    if let Some(usd) = f.cost_usd {
        let _ = write!(line, ", {}", dollars(usd));
    }
    line
}

/// A map of tasks by task number (`PyBench/13` before `PyBench/102`), as every list of tasks
/// reads.
fn in_task_order(map: &BTreeMap<String, String>) -> impl Iterator<Item = (&String, &String)> {
    let mut entries: Vec<(&String, &String)> = map.iter().collect();
    entries.sort_by_key(|(task, _)| {
        let number = task.rsplit('/').next().and_then(|n| n.parse::<u64>().ok());
        (number.unwrap_or(u64::MAX), task.as_str())
    });
    entries.into_iter()
}

/// The runs that were judged, each with its judgings.
fn judged(report: &Report) -> impl Iterator<Item = (&RunFigures, &JudgeFigures)> {
    report
        .runs
        .iter()
        .flat_map(|run| run.judges.iter().map(move |f| (run, f)))
}

/// The judgings in the terminal, each as [`lines`] says it, under its run's label.
pub(crate) fn terminal(out: &mut String, report: &Report) {
    let mut any = false;
    for (run, f) in judged(report) {
        if !any {
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "LLM judges (the paper's order: the reference is Agent1, the run Agent2):"
            );
            any = true;
        }
        let _ = write!(out, "{}: {}", run.label, lines(f));
    }
}

/// One judging in the terminal (as `assay judge pybench` prints it too): its sentences, its
/// confusion table and the tasks it is about (the first ten of each list).
pub fn lines(f: &JudgeFigures) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}", title(f), counts(f));
    if f.read == 0 {
        let _ = writeln!(
            out,
            "  no verdict could be read: no Pass Rate (LLM), win/tie/lose or turns"
        );
    } else {
        let _ = writeln!(out, "  {}", pass_rate(f));
        if !f.categories.is_empty() {
            let _ = writeln!(out, "    {}", categories(f));
        }
        let _ = writeln!(out, "  {}", win_tie_lose(f));
        let _ = writeln!(out, "  {}", turns(f));
    }
    let a = &f.agreement;
    if a.tasks == 0 {
        let _ = writeln!(
            out,
            "  the judge and the {} checks judged no task in common",
            a.checks
        );
    } else {
        let _ = writeln!(out, "  {}", agreement(a));
        let _ = writeln!(
            out,
            "    {:<10}  {:>11}  {:>11}",
            "", "checks pass", "checks fail"
        );
        for (row, (pass, fail)) in [
            ("judge pass", (a.both_pass, a.judge_only)),
            ("judge fail", (a.checks_only, a.both_fail)),
        ] {
            let _ = writeln!(out, "    {row:<10}  {pass:>11}  {fail:>11}");
        }
        for (what, tasks) in [
            ("passed by the judge only", &a.judge_only_tasks),
            ("passed by the checks only", &a.checks_only_tasks),
        ] {
            if !tasks.is_empty() {
                let _ = writeln!(out, "    {what}: {}", listed(tasks));
            }
        }
    }
    if let Some(p) = &f.position {
        let _ = writeln!(out, "  {}", position(p));
        for (what, tasks) in [
            ("preference changed", &p.changed_tasks),
            ("the run's Pass changed", &p.pass_changed_tasks),
        ] {
            if !tasks.is_empty() {
                let _ = writeln!(out, "    {what}: {}", listed(tasks));
            }
        }
    }
    let lenient = lenient_reasons(f);
    for (what, why, map) in [
        ("read leniently", "upstream's reader would not", &lenient),
        ("unreadable", "counted in no rate", &f.unreadable),
        ("not answered", "a rerun asks again", &f.failed),
        ("set apart", "nothing to judge", &f.set_apart),
    ] {
        if !map.is_empty() {
            let tasks: Vec<String> = in_task_order(map).map(|(t, _)| t.clone()).collect();
            let _ = writeln!(out, "  {what} ({}, {why}): {}", map.len(), listed(&tasks));
            for (task, reason) in in_task_order(map).take(REASONS_PRINTED) {
                let _ = writeln!(out, "    {task}: {}", reason.lines().next().unwrap_or(""));
            }
        }
    }
    if let Some(p) = &f.published {
        let _ = writeln!(out, "  {}", paper(p));
    }
    let _ = writeln!(out, "  {}", usage(f));
    out
}

/// The judgings on the HTML page: per run and judging, the figures beside the paper's, per
/// category, the confusion table with the tasks judge and checks disagree on, position bias,
/// and what could not be read. Everything from the run is escaped.
pub(crate) fn html(out: &mut String, report: &Report) {
    let mut any = false;
    for (run, f) in judged(report) {
        if !any {
            out.push_str(
                "<h2>LLM judges</h2><p class=\"muted\">assay judge pybench: in the paper's \
                 order the reference is Agent1 and the run Agent2.</p>",
            );
            any = true;
        }
        let _ = write!(
            out,
            "<section class=\"judge\"><h3>{}: {}</h3><p class=\"muted\">{}</p>",
            escape(&run.label),
            escape(&title(f)),
            escape(&counts(f))
        );
        figures_table(out, f);
        categories_table(out, f);
        agreement_section(out, &f.agreement);
        if let Some(p) = &f.position {
            let _ = write!(out, "<p class=\"position\">{}</p>", escape(&position(p)));
            tasks(out, "preference changed", &p.changed_tasks);
            tasks(out, "the run's Pass changed", &p.pass_changed_tasks);
        }
        let lenient = lenient_reasons(f);
        reasons(
            out,
            "read leniently",
            "upstream's reader would not",
            &lenient,
        );
        reasons(out, "unreadable", "counted in no rate", &f.unreadable);
        reasons(out, "not answered", "a rerun asks again", &f.failed);
        reasons(out, "set apart", "nothing to judge", &f.set_apart);
        let _ = write!(
            out,
            "<p class=\"muted\">{}</p></section>",
            escape(&usage(f))
        );
    }
}

/// Task → what reading its verdict needed beyond upstream's reader, in words.
fn lenient_reasons(f: &JudgeFigures) -> BTreeMap<String, String> {
    f.lenient
        .iter()
        .map(|(task, kinds)| {
            let kinds: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
            (task.clone(), kinds.join(", "))
        })
        .collect()
}

/// The paper's figures of the judging, with the paper's own beside them when it has some.
fn figures_table(out: &mut String, f: &JudgeFigures) {
    let paper = f.published.as_ref();
    let _ = write!(
        out,
        "<table class=\"judge-figures\"><tr><th></th><th>this run</th>{}</tr>",
        paper.map_or(String::new(), |p| format!(
            "<th>the paper ({})</th>",
            escape(&p.model)
        ))
    );
    let wtl = &f.win_tie_lose;
    let rows: [(String, String, Option<String>); 6] = [
        (
            "Pass Rate (LLM), of the verdicts read".into(),
            format!("{} ({}/{})", pct(f.pass_rate), f.passed, f.read),
            paper.map(|p| pct(p.pass_rate)),
        ),
        (
            "Pass Rate (LLM), of all tasks".into(),
            format!("{} ({}/{})", pct(f.pass_rate_all), f.passed, f.tasks),
            None,
        ),
        (
            "the reference, by the same judge".into(),
            pct(f.reference_pass_rate),
            None,
        ),
        (
            format!("win/tie/lose against the reference (by {})", wtl.by),
            format!("{}/{}/{}", wtl.win, wtl.tie, wtl.lose),
            paper.and_then(paper_win_tie_lose),
        ),
        (
            "average turns as the paper counts them".into(),
            format!("{:.1}", f.average_turns),
            paper.map(|p| format!("{:.1}", p.average_turns)),
        ),
        (
            format!("average turns by the {} checks", f.agreement.checks),
            format!("{:.1}", f.average_turns_checks),
            None,
        ),
    ];
    for (what, value, published) in rows {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td>",
            escape(&what),
            escape(&value)
        );
        if paper.is_some() {
            let _ = write!(
                out,
                "<td>{}</td>",
                escape(published.as_deref().unwrap_or("-"))
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

fn categories_table(out: &mut String, f: &JudgeFigures) {
    if f.categories.is_empty() {
        return;
    }
    out.push_str(
        "<table class=\"judge-categories\"><tr><th>category</th><th>passed</th>\
         <th>verdicts read</th><th>Pass Rate (LLM)</th></tr>",
    );
    for (category, x) in &f.categories {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(category),
            x.passed,
            x.tasks,
            pct(x.pass_rate)
        );
    }
    out.push_str("</table>");
}

/// The judge against the checks: the sentence, the 2×2 table, the tasks they disagree on.
fn agreement_section(out: &mut String, a: &Agreement) {
    let _ = write!(
        out,
        "<p class=\"agreement\">{}</p><table class=\"confusion\"><tr><th></th>\
         <th>checks pass</th><th>checks fail</th></tr><tr><td>judge pass</td><td>{}</td>\
         <td>{}</td></tr><tr><td>judge fail</td><td>{}</td><td>{}</td></tr></table>",
        escape(&agreement(a)),
        a.both_pass,
        a.judge_only,
        a.checks_only,
        a.both_fail
    );
    tasks(out, "passed by the judge only", &a.judge_only_tasks);
    tasks(out, "passed by the checks only", &a.checks_only_tasks);
}

/// A list of tasks under its title, when there are any.
fn tasks(out: &mut String, title: &str, ids: &[String]) {
    if ids.is_empty() {
        return;
    }
    let listed: Vec<String> = ids.iter().map(|i| escape(i)).collect();
    let _ = write!(
        out,
        "<p><b>{title}</b> ({}): {}</p>",
        ids.len(),
        listed.join(", ")
    );
}

/// Tasks and why, in a closed block (a reason can be a long parser message).
fn reasons(out: &mut String, title: &str, note: &str, map: &BTreeMap<String, String>) {
    if map.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<details class=\"judge-reasons\"><summary>{title} ({}, {note})</summary><table>",
        map.len()
    );
    for (task, why) in in_task_order(map).take(REASONS_SHOWN) {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td></tr>",
            escape(task),
            escape(why)
        );
    }
    out.push_str("</table>");
    if map.len() > REASONS_SHOWN {
        let _ = write!(
            out,
            "<p class=\"muted\">… and {} more in summary.json</p>",
            map.len() - REASONS_SHOWN
        );
    }
    out.push_str("</details>");
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A judging of five tasks with both orders, one unreadable, the paper's row beside, and
    /// markup where a run or a judge could put it.
    pub(crate) fn judging() -> JudgeFigures {
        serde_json::from_value(json!({
            "settings": {"judge": "openai:<b>judge</b>", "prompt": "winlose",
                         "reference": "data:trajectory.jsonl", "reference_digest": "0f2aa0df4e8f2134",
                         "temperature": 0.2, "top_p": 0.5, "max_tokens": 1000, "frequency_penalty": 1.02},
            "key": "94dbc972baff2f5e", "episodes_digest": "bce6e548387e7ccf", "both_orders": true,
            "tasks": 5, "read": 4,
            "unreadable": {"PyBench/102": "no ``` block in <script>x</script>"},
            "failed": {},
            "passed": 3, "pass_rate": 0.75, "pass_rate_all": 0.6,
            "categories": {"chart_analysis": {"tasks": 4, "passed": 3, "pass_rate": 0.75}},
            "reference_pass_rate": 0.5,
            "win_tie_lose": {"win": 2, "tie": 1, "lose": 1, "by": "decision"},
            "average_turns": 4.25, "average_turns_checks": 3.5,
            "agreement": {"checks": "faithful", "tasks": 4, "both_pass": 2, "judge_only": 1,
                          "checks_only": 1, "both_fail": 0, "observed": 0.5, "kappa": -0.3333,
                          "judge_only_tasks": ["PyBench/7"], "checks_only_tasks": ["PyBench/2"]},
            "position": {"pairs": 4, "consistent": 1, "follows_first": 0, "follows_second": 3,
                         "other": 0, "rate": 0.75, "changed_tasks": ["PyBench/2", "PyBench/3", "PyBench/7"],
                         "pass_same": 3, "pass_only_second": 1, "pass_only_first": 0,
                         "pass_changed_tasks": ["PyBench/3"]},
            "requests": 8,
            "tokens": {"prompt_tokens": 40000, "completion_tokens": 300},
            "cost_usd": 0.0123,
            "published": {"model": "Qwen2-7B-Instruct", "pass_rate": 0.578,
                          "win_tie_lose": [85.0, 2.0, 56.0], "average_turns": 4.9},
        }))
        .unwrap()
    }

    pub(crate) fn report_of(label: &str, judges: Vec<JudgeFigures>) -> Report {
        Report {
            runs: vec![RunFigures {
                label: label.into(),
                benchmark: "pybench".into(),
                split: None,
                model: None,
                tasks: 5,
                judged: 5,
                infra_tasks: 0,
                statuses: BTreeMap::new(),
                pass_at_k: BTreeMap::new(),
                by_group: BTreeMap::new(),
                by_library: BTreeMap::new(),
                wall_seconds: None,
                tokens: None,
                stability: None,
                thinking: 0,
                cut_while_thinking: 0,
                judges,
                gamed: Default::default(),
            }],
            comparisons: vec![],
            leaderboard: None,
            method: String::new(),
        }
    }

    /// Verdicts read only leniently and requests asked again are counted beside what was
    /// read, and the lenient ones listed with what they needed.
    #[test]
    fn lenient_reading_and_asks_again_are_shown() {
        let mut f = judging();
        assert_eq!(
            counts(&f),
            "5 tasks, 0 set apart, 4 verdicts read, 1 unreadable, 0 not answered"
        );
        f.lenient = BTreeMap::from([
            (
                "PyBench/2".into(),
                vec![ReplyLeniency::LanguageTag, ReplyLeniency::TrailingComma],
            ),
            ("PyBench/3".into(), vec![ReplyLeniency::LanguageTag]),
        ]);
        f.reasked = BTreeMap::from([("PyBench/102".into(), 2), ("PyBench/7".into(), 1)]);
        assert_eq!(
            counts(&f),
            "5 tasks, 0 set apart, 4 verdicts read (2 only leniently: language tag 2, trailing \
             comma 1), 1 unreadable, 0 not answered; 2 asked again (3 asks)"
        );
        let text = lines(&f);
        assert!(
            text.contains(
                "read leniently (2, upstream's reader would not): PyBench/2, PyBench/3\n    \
                 PyBench/2: language tag, trailing comma"
            ),
            "{text}"
        );
        let mut page = String::new();
        html(&mut page, &report_of("run", vec![f]));
        assert!(page.contains("read leniently"), "{page}");
    }
}
