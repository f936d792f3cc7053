//! The report as one self-contained HTML file: no script, no request to anywhere, charts as
//! inline SVG. Everything a run says (task ids, code, tracebacks, labels) is untrusted text
//! and goes through [`escape`] before it reaches the page.

use std::collections::BTreeSet;
use std::fmt::Write;

use crate::text::escape;
use crate::{Report, Run};

/// Characters of a failing sample's code or traceback shown.
const TEXT_SHOWN: usize = 8_000;

fn clip(text: &str) -> String {
    match text.char_indices().nth(TEXT_SHOWN) {
        Some((at, _)) => format!(
            "{}\n… ({} more characters)",
            &text[..at],
            text[at..].chars().count()
        ),
        None => text.to_string(),
    }
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1200px;\
color:#1d2330;padding:0 1em}h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #dde}\
table{border-collapse:collapse;margin:.6em 0}td,th{padding:.25em .9em;border-bottom:1px solid #eef;\
text-align:right;white-space:nowrap}td:first-child,th:first-child{text-align:left}pre{background:#f6f7fb;padding:.6em;\
overflow:auto;max-height:28em;white-space:pre-wrap}details{margin:.3em 0}summary{cursor:pointer}\
.matrix td{padding:0;width:9px;height:9px;border:1px solid #fff}.p{background:#2e9e5b}\
.f{background:#d9534f}.i{background:#b8bcc8}.n{background:#fff}.muted{color:#6b7280}\
.judge-reasons td{white-space:normal;text-align:left}";

/// Status colours of the charts.
fn colour(status: &str) -> &'static str {
    match status {
        "pass" => "#2e9e5b",
        "fail" => "#d9534f",
        "error" => "#e58e26",
        "timeout" => "#8e6cc4",
        "oom" => "#5b6ee1",
        _ => "#b8bcc8",
    }
}

/// The report over `runs` (the runs `report` was made from, in the same order).
pub fn html(report: &Report, runs: &[Run]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:\">\
         <title>assay report</title><style>{STYLE}</style></head><body><h1>assay report</h1>"
    );
    runs_table(&mut out, report);
    status_chart(&mut out, report);
    groups_chart(&mut out, report);
    crate::judge::html(&mut out, report);
    libraries_table(&mut out, report);
    comparisons(&mut out, report);
    matrix(&mut out, runs);
    failures(&mut out, runs);
    let _ = write!(
        out,
        "<p class=\"muted\">Intervals: {}</p></body></html>",
        escape(&report.method)
    );
    out
}

fn runs_table(out: &mut String, report: &Report) {
    out.push_str(
        "<h2>Runs</h2><table id=\"runs\"><tr><th>run</th><th>benchmark</th><th>tasks</th>\
         <th>judged</th><th>infra</th><th>pass@1</th><th>95% interval</th><th>time</th></tr>",
    );
    for run in &report.runs {
        let bench = crate::setting_name(&run.benchmark, run.split.as_deref());
        let (value, interval) = run.pass_at_k.get(&1).map_or(("-".into(), "-".into()), |e| {
            (
                format!("{:.4}", e.value),
                format!("[{:.4}, {:.4}]", e.low, e.high),
            )
        });
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"pass1\">{}</td>\
             <td>{}</td><td>{}</td></tr>",
            escape(&run.label),
            escape(&bench),
            run.tasks,
            run.judged,
            run.infra_tasks,
            value,
            interval,
            run.wall_seconds.map_or("-".into(), |s| format!("{s:.0} s")),
        );
    }
    out.push_str("</table>");
    for run in report.runs.iter() {
        // Each line a run has, as a paragraph: (its class, what it is, the line).
        let lines = [
            ("gamed", "gamed their tests", crate::gamed_line(run)),
            ("reasoning", "reasoning", crate::reasoning_line(run)),
            (
                "stability",
                "stability",
                run.stability.as_ref().map(crate::stability_line),
            ),
        ];
        for (class, what, line) in lines {
            if let Some(line) = line {
                let _ = write!(
                    out,
                    "<p class=\"{class}\">{} {what}: {}</p>",
                    escape(&run.label),
                    escape(&line)
                );
            }
        }
    }
}

/// One stacked bar per run: its samples by status.
fn status_chart(out: &mut String, report: &Report) {
    out.push_str("<h2>Statuses</h2>");
    let width = 700.0;
    let height = 26.0 * report.runs.len() as f64 + 10.0;
    let _ = write!(
        out,
        "<svg role=\"img\" aria-label=\"statuses\" width=\"{}\" height=\"{height}\">",
        width + 220.0
    );
    for (row, run) in report.runs.iter().enumerate() {
        let y = 5.0 + 26.0 * row as f64;
        let total: u64 = run.statuses.values().sum();
        let _ = write!(
            out,
            "<text x=\"0\" y=\"{}\" font-size=\"12\">{}</text>",
            y + 15.0,
            escape(&run.label)
        );
        let mut x = 210.0;
        for (status, n) in &run.statuses {
            let w = if total == 0 {
                0.0
            } else {
                width * *n as f64 / total as f64
            };
            let _ = write!(
                out,
                "<rect x=\"{x:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"20\" fill=\"{}\">\
                 <title>{} {n}</title></rect>",
                colour(status),
                escape(status)
            );
            x += w;
        }
    }
    out.push_str("</svg><p class=\"muted\">");
    for status in ["pass", "fail", "error", "timeout", "oom", "infra"] {
        let _ = write!(
            out,
            "<span style=\"color:{}\">■</span> {status} ",
            colour(status)
        );
    }
    out.push_str("</p>");
}

/// pass@1 per BigCodeBench domain or PyBench category: a bar per run in each group.
fn groups_chart(out: &mut String, report: &Report) {
    let groups: BTreeSet<&String> = report.runs.iter().flat_map(|r| r.by_group.keys()).collect();
    if groups.is_empty() {
        return;
    }
    out.push_str("<h2>pass@1 by domain and category</h2>");
    let bar = 14.0;
    let per_group = bar * report.runs.len() as f64 + 10.0;
    let height = per_group * groups.len() as f64;
    let _ = write!(
        out,
        "<svg role=\"img\" aria-label=\"pass@1 by group\" width=\"900\" height=\"{height}\">"
    );
    let palette = [
        "#3b6fd1", "#e58e26", "#2e9e5b", "#8e6cc4", "#d9534f", "#17a2b8",
    ];
    for (g, group) in groups.iter().enumerate() {
        let y0 = per_group * g as f64;
        // The label on the middle of the group's bars.
        let _ = write!(
            out,
            "<text x=\"0\" y=\"{:.1}\" font-size=\"12\" dominant-baseline=\"middle\">{}</text>",
            y0 + (per_group - 10.0) / 2.0,
            escape(group)
        );
        for (r, run) in report.runs.iter().enumerate() {
            let Some(figure) = run.by_group.get(*group) else {
                continue;
            };
            let y = y0 + bar * r as f64;
            let w = 560.0 * figure.pass_at_1;
            let _ = write!(
                out,
                "<rect x=\"200\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\" fill=\"{}\">\
                 <title>{}: {:.4} over {} tasks</title></rect>\
                 <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\">{:.3}</text>",
                bar - 2.0,
                palette[r % palette.len()],
                escape(&run.label),
                figure.pass_at_1,
                figure.tasks,
                205.0 + w,
                y + bar - 4.0,
                figure.pass_at_1
            );
        }
    }
    out.push_str("</svg><p class=\"muted\">");
    for (r, run) in report.runs.iter().enumerate() {
        let _ = write!(
            out,
            "<span style=\"color:{}\">■</span> {} ",
            palette[r % palette.len()],
            escape(&run.label)
        );
    }
    out.push_str("</p>");
}

/// pass@1 per library, the libraries most tasks use first.
fn libraries_table(out: &mut String, report: &Report) {
    let mut libraries: Vec<(&String, usize)> = Vec::new();
    for run in &report.runs {
        for (lib, figure) in &run.by_library {
            match libraries.iter_mut().find(|(l, _)| *l == lib) {
                Some(entry) => entry.1 = entry.1.max(figure.tasks),
                None => libraries.push((lib, figure.tasks)),
            }
        }
    }
    if libraries.is_empty() {
        return;
    }
    libraries.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    out.push_str("<h2>pass@1 by library</h2><table id=\"libraries\"><tr><th>library</th>");
    for run in &report.runs {
        let _ = write!(out, "<th>{}</th>", escape(&run.label));
    }
    out.push_str("</tr>");
    for (lib, _) in libraries {
        let _ = write!(out, "<tr><td>{}</td>", escape(lib));
        for run in &report.runs {
            let cell = run.by_library.get(lib).map_or("-".into(), |f| {
                format!(
                    "{:.3} <span class=\"muted\">({})</span>",
                    f.pass_at_1, f.tasks
                )
            });
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

fn comparisons(out: &mut String, report: &Report) {
    if report.comparisons.is_empty() {
        return;
    }
    out.push_str("<h2>Against the baseline</h2>");
    for c in &report.comparisons {
        let _ = write!(
            out,
            "<h3>{} against {}</h3><p>{} shared tasks",
            escape(&c.run),
            escape(&c.baseline),
            c.shared_tasks
        );
        if let Some(d) = &c.difference {
            let _ = write!(
                out,
                "; pass@1 difference {:+.4} [{:+.4}, {:+.4}]",
                d.value, d.low, d.high
            );
        }
        let _ = write!(out, "; {}</p>", c.verdict());
        for (title, ids) in [("now passing", &c.won), ("now failing", &c.lost)] {
            if !ids.is_empty() {
                let listed: Vec<String> = ids.iter().map(|i| escape(i)).collect();
                let _ = write!(out, "<p><b>{title}</b>: {}</p>", listed.join(", "));
            }
        }
    }
}

/// A task × run grid: green passed, red failed, grey set apart, white not run.
fn matrix(out: &mut String, runs: &[Run]) {
    let tasks: BTreeSet<&String> = runs.iter().flat_map(|r| r.tasks.keys()).collect();
    if tasks.is_empty() {
        return;
    }
    out.push_str("<h2>Tasks × runs</h2><table class=\"matrix\">");
    for run in runs {
        let _ = write!(out, "<tr><th>{}</th>", escape(&run.label));
        for task in &tasks {
            let (class, what) = match run.tasks.get(*task) {
                None => ("n", "not run"),
                Some(t) if t.samples == 0 => ("i", "infra"),
                Some(t) if t.passed * 2 >= t.samples => ("p", "pass"),
                Some(_) => ("f", "fail"),
            };
            let _ = write!(
                out,
                "<td class=\"{class}\" title=\"{}: {what}\"></td>",
                escape(task)
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

fn failures(out: &mut String, runs: &[Run]) {
    out.push_str("<h2>Failing samples</h2>");
    for run in runs {
        let _ = write!(
            out,
            "<h3>{} <span class=\"muted\">({} failing)</span></h3>",
            escape(&run.label),
            run.failing
        );
        for failure in &run.failures {
            let _ = write!(
                out,
                "<details class=\"failure\"><summary>{} <span class=\"muted\">{} {}</span></summary>",
                escape(&failure.task_id),
                escape(&failure.status),
                failure.test.as_deref().map(escape).unwrap_or_default()
            );
            if !failure.code.is_empty() {
                let _ = write!(
                    out,
                    "<pre class=\"code\">{}</pre>",
                    escape(&clip(&failure.code))
                );
            }
            let _ = write!(
                out,
                "<pre class=\"detail\">{}</pre></details>",
                escape(&clip(&failure.detail))
            );
        }
        if run.failing > run.failures.len() {
            let _ = write!(
                out,
                "<p class=\"muted\">… and {} more (the run directory has them all)</p>",
                run.failing - run.failures.len()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::judge::tests::{judging, report_of};

    #[test]
    fn the_page_shows_the_figures_beside_the_papers_and_escapes_what_runs_and_judges_say() {
        let page = crate::html(&report_of("<i>run</i>", vec![judging()]), &[]);
        for part in [
            "<h2>LLM judges</h2>",
            "<h3>&lt;i&gt;run&lt;/i&gt;: judge openai:&lt;b&gt;judge&lt;/b&gt; (winlose prompt",
            "<th>this run</th><th>the paper (Qwen2-7B-Instruct)</th>",
            "<tr><td>Pass Rate (LLM), of the verdicts read</td><td>75.0% (3/4)</td><td>57.8%</td></tr>",
            "<td>2/1/1</td><td>85/2/56 against GPT-3.5</td>",
            "<tr><td>average turns by the faithful checks</td><td>3.5</td><td>-</td></tr>",
            "<tr><td>chart_analysis</td><td>3</td><td>4</td><td>75.0%</td></tr>",
            "agree 50.0%, Cohen&#39;s kappa -0.33",
            "<tr><td>judge pass</td><td>2</td><td>1</td></tr><tr><td>judge fail</td><td>1</td><td>0</td></tr>",
            "<b>passed by the checks only</b> (1): PyBench/2",
            "<b>preference changed</b> (3): PyBench/2, PyBench/3, PyBench/7",
            "<summary>unreadable (1, counted in no rate)</summary>",
            "<td>no ``` block in &lt;script&gt;x&lt;/script&gt;</td>",
            "8 requests, tokens 40000 in, 300 out, $0.0123",
        ] {
            assert!(page.contains(part), "{part:?} is not in:\n{page}");
        }
        for markup in ["<script>", "<b>judge", "<i>run"] {
            assert!(!page.contains(markup), "{markup} became markup");
        }
    }
}
