//! docs/reference/cli.md, written from the command line's own definition so that it cannot
//! drift from `assay --help`: the test renders it and fails while the committed page differs;
//! `ASSAY_UPDATE_DOCS=1` writes it instead.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::builder::PossibleValue;
use clap::{Arg, ArgAction, Command, CommandFactory};

/// The documentation site: its URLs in help texts become links; others stay text.
const SITE: &str = "https://assay-eval.github.io/assay/";

/// The whole page.
fn render(mut cli: Command) -> String {
    cli.build();
    let mut page = String::from(
        "# Command-line reference\n\nThis page is generated from `assay --help`: every \
         command takes `-h` for a summary and `--help` for all of it.\n",
    );
    section(&mut page, &cli, 0);
    page.truncate(page.trim_end().len());
    page.push('\n');
    page
}

/// One command's section, then its subcommands' (`depth` 0 is `assay` itself).
fn section(page: &mut String, cmd: &Command, depth: usize) {
    let name = cmd.get_bin_name().unwrap_or(cmd.get_name());
    blank_line(page);
    let _ = write!(
        page,
        "{} {name}\n\n",
        "#".repeat(2 + depth.saturating_sub(1))
    );
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        paragraphs(page, &sentence(&about.to_string()), "");
        page.push('\n');
    }
    let usage = cmd.clone().render_usage().to_string();
    let usage = usage.strip_prefix("Usage: ").unwrap_or(&usage);
    let lines: Vec<&str> = usage.lines().map(str::trim).collect();
    let _ = write!(page, "```text\n{}\n```\n", lines.join("\n"));

    let subcommands: Vec<&Command> = visible_subcommands(cmd).collect();
    if !subcommands.is_empty() {
        blank_line(page);
        page.push_str("**Commands**\n\n");
        for sub in &subcommands {
            item(page, "", sub.get_name(), sub.get_about());
        }
    }
    for (heading, args) in groups(cmd, depth) {
        blank_line(page);
        let _ = write!(page, "**{heading}**\n\n");
        for arg in args {
            option(page, arg);
        }
    }
    for sub in subcommands {
        section(page, sub, depth + 1);
    }
}

/// Ends the page with one blank line, before a new block.
fn blank_line(page: &mut String) {
    while page.ends_with("\n\n") {
        page.pop();
    }
    page.push_str(if page.ends_with('\n') { "\n" } else { "\n\n" });
}

fn visible_subcommands(cmd: &Command) -> impl Iterator<Item = &Command> {
    cmd.get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
}

/// The arguments shown, grouped as `--help` groups them: positionals, then options without a
/// heading, then each heading in the order its first option came. `-h`, `-V` and the global
/// options (given once, under `assay`) are left out.
fn groups(cmd: &Command, depth: usize) -> Vec<(String, Vec<&Arg>)> {
    let shown = cmd.get_arguments().filter(|arg| {
        !arg.is_hide_set()
            && !matches!(
                arg.get_action(),
                ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version
            )
            && (depth == 0 || !arg.is_global_set())
    });
    let mut groups: Vec<(String, Vec<&Arg>)> = vec![
        ("Arguments".to_string(), Vec::new()),
        ("Options".to_string(), Vec::new()),
    ];
    for arg in shown {
        let heading = match arg.get_help_heading() {
            Some(heading) => heading.to_string(),
            None if arg.is_positional() => "Arguments".to_string(),
            None => "Options".to_string(),
        };
        match groups.iter_mut().find(|(name, _)| *name == heading) {
            Some((_, args)) => args.push(arg),
            None => groups.push((heading, vec![arg])),
        }
    }
    groups.retain(|(_, args)| !args.is_empty());
    groups
}

/// One option as a list item: its form, its help, and what clap knows of its values.
fn option(page: &mut String, arg: &Arg) {
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let mut facts = Vec::new();
    if arg.is_required_set() {
        facts.push("Required.".to_string());
    }
    let takes_values = arg.get_action().takes_values();
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| format!("`{}`", v.to_string_lossy()))
        .collect();
    if takes_values && !defaults.is_empty() && !arg.is_hide_default_value_set() {
        facts.push(format!("Default: {}.", defaults.join(", ")));
    }
    if let Some(env) = arg.get_env().filter(|_| !arg.is_hide_env_set()) {
        facts.push(format!(
            "Environment variable: `{}`.",
            env.to_string_lossy()
        ));
    }
    if let Some(aliases) = arg.get_visible_aliases() {
        let aliases: Vec<String> = aliases.iter().map(|a| format!("`--{a}`")).collect();
        facts.push(format!("Alias: {}.", aliases.join(", ")));
    }
    let values: Vec<PossibleValue> = if arg.is_hide_possible_values_set() {
        Vec::new()
    } else {
        arg.get_possible_values()
            .into_iter()
            .filter(|v| !v.is_hide_set())
            .collect()
    };
    let described = values.iter().any(|v| v.get_help().is_some());
    if !values.is_empty() && !described {
        let names: Vec<String> = values
            .iter()
            .map(|v| format!("`{}`", v.get_name()))
            .collect();
        facts.push(format!("Possible values: {}.", names.join(", ")));
    }

    let mut text = help.trim_end().to_string();
    if !text.is_empty() {
        text = sentence(&text);
    }
    let _ = write!(page, "- `{}`: ", form(arg));
    let mut body = String::new();
    paragraphs(&mut body, &text, "    ");
    let body = body.trim_start().trim_end();
    page.push_str(body);
    if !facts.is_empty() {
        if !body.is_empty() {
            page.push(' ');
        }
        page.push_str(&facts.join(" "));
    }
    page.push('\n');
    if described {
        page.push('\n');
        for value in values {
            item(page, "    ", value.get_name(), value.get_help());
        }
    }
    page.push('\n');
}

/// A named thing and its one-line help as a list item (a subcommand, a possible value).
fn item(page: &mut String, indent: &str, name: &str, help: Option<&clap::builder::StyledStr>) {
    let help = help.map(|h| h.to_string()).unwrap_or_default();
    let _ = writeln!(page, "{indent}- `{name}`: {}", sentence(&inline(&help)));
}

/// How the option is written: `-n, --n-samples <N>`, `<RUNS>...`, `-- <ARGS>...`.
fn form(arg: &Arg) -> String {
    let value = || {
        let names: Vec<String> = match arg.get_value_names() {
            Some(names) => names.iter().map(|n| format!("<{n}>")).collect(),
            None => vec![format!("<{}>", arg.get_id().as_str().to_uppercase())],
        };
        let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1);
        format!("{}{}", names.join(" "), if many { "..." } else { "" })
    };
    if arg.is_positional() {
        let prefix = if arg.is_last_set() { "-- " } else { "" };
        return format!("{prefix}{}", value());
    }
    let mut names = Vec::new();
    if let Some(short) = arg.get_short() {
        names.push(format!("-{short}"));
    }
    if let Some(long) = arg.get_long() {
        names.push(format!("--{long}"));
    }
    let mut form = names.join(", ");
    if arg.get_action().takes_values() {
        form = format!("{form} {}", value());
    }
    form
}

/// Help text's paragraphs (blank-line separated), each escaped, later ones indented by
/// `indent` (a list item's continuation).
fn paragraphs(out: &mut String, text: &str, indent: &str) {
    for (i, paragraph) in text
        .split("\n\n")
        .filter(|p| !p.trim().is_empty())
        .enumerate()
    {
        if i > 0 {
            out.push('\n');
            out.push_str(indent);
        }
        let joined: Vec<&str> = paragraph.lines().map(str::trim).collect();
        out.push_str(&inline(&joined.join(" ")));
        out.push('\n');
    }
}

/// Ends `text` as a sentence: clap drops the full stop of a one-paragraph help.
fn sentence(text: &str) -> String {
    let text = text.trim_end();
    match text.chars().last() {
        None => String::new(),
        Some('.' | '!' | '?' | ':') => text.to_string(),
        Some(_) => format!("{text}."),
    }
}

/// Help text as Markdown: code spans kept, the site's URLs made links, and everything else
/// that Markdown would read as markup escaped.
fn inline(text: &str) -> String {
    let spans: Vec<&str> = text.split('`').collect();
    if spans.len() % 2 == 0 {
        // An unpaired backtick: no code spans at all.
        return plain(text);
    }
    spans
        .iter()
        .enumerate()
        .map(|(i, span)| {
            if i % 2 == 1 {
                format!("`{span}`")
            } else {
                plain(span)
            }
        })
        .collect()
}

/// Text outside code spans.
fn plain(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(SITE) {
        out.push_str(&escape(&rest[..start]));
        let url = &rest[start..];
        let end = url.find(char::is_whitespace).unwrap_or(url.len());
        let link = url[..end].trim_end_matches(['.', ',', ';', ':', ')']);
        let _ = write!(out, "<{link}>");
        rest = &url[link.len()..];
    }
    out.push_str(&escape(rest));
    out
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '*' | '_' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '|' => out.push_str("&#124;"),
            _ => out.push(c),
        }
    }
    out
}

#[test]
fn the_cli_reference_is_up_to_date() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference/cli.md");
    let rendered = render(crate::Cli::command());
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if rendered == committed {
        return;
    }
    if std::env::var_os("ASSAY_UPDATE_DOCS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().expect("docs/reference")).unwrap();
        std::fs::write(&path, rendered).unwrap();
        return;
    }
    let line = rendered
        .lines()
        .zip(committed.lines())
        .position(|(new, old)| new != old)
        .unwrap_or_else(|| rendered.lines().count().min(committed.lines().count()))
        + 1;
    panic!(
        "docs/reference/cli.md is not what `assay --help` says (from line {line} on): run\n    \
         ASSAY_UPDATE_DOCS=1 cargo test -p assay --bin assay cli_reference\nto write it again, \
         and commit it"
    );
}

#[test]
fn help_text_becomes_markdown_that_reads_as_the_text() {
    assert_eq!(
        inline("runs/<benchmark>-<model> (`a|b` or *-reasoner_x) [THINK] a|b"),
        "runs/&lt;benchmark&gt;-&lt;model&gt; (`a|b` or \\*-reasoner\\_x) \\[THINK\\] a&#124;b"
    );
    assert_eq!(
        inline(&format!(
            "(see {SITE}parity/), or http://localhost:8000/v1."
        )),
        format!("(see <{SITE}parity/>), or http://localhost:8000/v1.")
    );
    // An unpaired backtick (a fence) is text, not a code span.
    assert_eq!(inline("a ```python block"), "a ```python block");
    assert_eq!(sentence("Answers per task"), "Answers per task.");
    assert_eq!(sentence("The run directory:"), "The run directory:");
}
