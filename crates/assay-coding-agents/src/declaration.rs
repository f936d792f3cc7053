//! What an agent is: a small declaration, read from TOML. The built-in ones are files in
//! `agents/` embedded at build time, read exactly as a user's own.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::Error;

/// The built-in declarations, by file.
const BUILT_IN: &[(&str, &str)] = &[
    ("codex.toml", include_str!("../agents/codex.toml")),
    (
        "claude-code.toml",
        include_str!("../agents/claude-code.toml"),
    ),
    (
        "mini-swe-agent.toml",
        include_str!("../agents/mini-swe-agent.toml"),
    ),
];

/// The wire protocol an agent speaks to its model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Wire {
    /// OpenAI Chat Completions.
    ChatCompletions,
    /// OpenAI Responses.
    Responses,
    /// Anthropic Messages.
    Messages,
}

impl Wire {
    /// As declarations spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Wire::ChatCompletions => "chat_completions",
            Wire::Responses => "responses",
            Wire::Messages => "messages",
        }
    }
}

/// One agent.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Declaration {
    /// The name users type (`--agent NAME`).
    pub name: String,
    /// One line for `assay agents list`.
    pub summary: String,
    /// What it speaks to the gateway.
    pub protocol: Wire,
    /// How it is installed.
    pub install: Install,
    /// How it is run on one prompt.
    pub run: Run,
    /// How the scripted model of `assay agents check` drives it.
    pub smoke: Smoke,
}

/// Packages, each pinned to one version, installed into assay's cache.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Install {
    /// npm packages, `name@version` (run with the Node assay installs from PyPI).
    #[serde(default)]
    pub npm: Vec<String>,
    /// PyPI packages, `name==version`, in a virtual environment of their own.
    #[serde(default)]
    pub pypi: Vec<String>,
}

/// The non-interactive run on one prompt. In every string, `{prompt}`, `{model}`,
/// `{base_url}` (the gateway, no trailing `/`), `{token}` (the placeholder credential) and
/// `{max_turns}` are replaced; other braces stay as they are.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// The program (found on `PATH`: its installed packages' programs come first after the
    /// benchmark's Python) and its arguments.
    pub argv: Vec<String>,
    /// Where its final answer is read.
    #[serde(default)]
    pub answer: Answer,
    /// Extra environment variables.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Files written under its home before it starts (its configuration), by relative path.
    #[serde(default)]
    pub home_files: BTreeMap<String, String>,
}

/// Where an agent's final answer is read (for the record and the judge; the graded artefacts
/// are its files).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// The last text the model sent it through the gateway.
    #[default]
    Gateway,
    /// Its whole standard output.
    Stdout,
    /// The value at this JSON pointer in the last line of its standard output that has one.
    StdoutJsonLines(String),
}

/// How the scripted model of `assay agents check` makes the agent run a shell command.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Smoke {
    /// Arguments of a call to each shell tool the agent may offer, by tool name, as JSON text
    /// with `{command}` standing for the command (JSON-escaped when replaced).
    pub shell: BTreeMap<String, String>,
    /// A command the agent must run to finish (none: a text reply finishes it).
    #[serde(default)]
    pub finish: Option<String>,
}

/// What the placeholders of a [`Run`] stand for in one episode.
#[derive(Debug, Clone)]
pub struct Values<'a> {
    /// The task's prompt.
    pub prompt: &'a str,
    /// The model name the agent asks for.
    pub model: &'a str,
    /// The gateway's URL.
    pub base_url: &'a str,
    /// The placeholder credential.
    pub token: &'a str,
    /// The turn limit, for agents that have one of their own.
    pub max_turns: u32,
}

impl Values<'_> {
    /// `text` with the placeholders replaced.
    pub fn render(&self, text: &str) -> String {
        text.replace("{prompt}", self.prompt)
            .replace("{model}", self.model)
            .replace("{base_url}", self.base_url)
            .replace("{token}", self.token)
            .replace("{max_turns}", &self.max_turns.to_string())
    }
}

impl Declaration {
    /// Every built-in declaration, by name.
    pub fn built_in() -> Vec<Declaration> {
        BUILT_IN
            .iter()
            .map(|(file, text)| {
                Declaration::parse(text, Path::new(file))
                    .unwrap_or_else(|e| panic!("built-in agent {file}: {e}"))
            })
            .collect()
    }

    /// The built-in agent `name`, or the declaration in the file `name` (a path ending in
    /// `.toml`). An unknown name lists the known ones.
    pub fn find(name: &str) -> Result<Declaration, Error> {
        if name.ends_with(".toml") {
            let path = Path::new(name);
            let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
                path: path.to_path_buf(),
                source,
            })?;
            return Declaration::parse(&text, path);
        }
        let all = Declaration::built_in();
        let known: Vec<String> = all.iter().map(|d| d.name.clone()).collect();
        all.into_iter()
            .find(|d| d.name == name)
            .ok_or_else(|| Error::UnknownAgent {
                name: name.to_string(),
                known: known.join(", "),
            })
    }

    /// Reads a declaration; errors name the file, the line and the field.
    pub fn parse(text: &str, file: &Path) -> Result<Declaration, Error> {
        let bad = |line: Option<usize>, message: String| Error::Declaration {
            file: file.to_path_buf(),
            line,
            message,
        };
        let declaration: Declaration = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|span| line_of(text, span.start));
            bad(line, e.message().to_string())
        })?;
        let at = |needle: &str| text.find(needle).map(|offset| line_of(text, offset));
        declaration
            .check()
            .map_err(|(field, message)| bad(at(field), format!("{field}: {message}")))?;
        Ok(declaration)
    }

    /// What a parse cannot say: names usable as directory names, pins exact, a program.
    fn check(&self) -> Result<(), (&'static str, String)> {
        let plain = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
        if self.name.is_empty() || !self.name.chars().all(plain) {
            let message = format!("{:?} must be letters, digits, `-` and `_`", self.name);
            return Err(("name", message));
        }
        let install = &self.install;
        if install.npm.is_empty() && install.pypi.is_empty() {
            return Err(("install", "no npm or pypi package to install".into()));
        }
        if let Some(pin) = install.npm.iter().find(|p| !npm_pin(p)) {
            return Err(("npm", format!("{pin:?} is not `name@version`")));
        }
        if let Some(pin) = install.pypi.iter().find(|p| !pypi_pin(p)) {
            return Err(("pypi", format!("{pin:?} is not `name==version`")));
        }
        if self.run.argv.is_empty() {
            return Err(("argv", "no program to run".into()));
        }
        if !self.run.argv.iter().any(|a| a.contains("{prompt}")) {
            return Err(("argv", "the prompt (`{prompt}`) is never passed".into()));
        }
        let relative =
            |p: &String| !p.starts_with('/') && p.split('/').all(|c| !matches!(c, "" | "." | ".."));
        if let Some(path) = self.run.home_files.keys().find(|p| !relative(p)) {
            return Err(("home_files", format!("{path:?} must be relative and plain")));
        }
        if self.smoke.shell.is_empty() {
            return Err(("shell", "no shell tool for the smoke test".into()));
        }
        Ok(())
    }
}

/// `name@version`, a scoped name (`@scope/name@version`) too, with an exact version.
fn npm_pin(pin: &str) -> bool {
    let Some((name, version)) = pin.rsplit_once('@') else {
        return false;
    };
    !name.is_empty() && exact_version(version)
}

/// `name==version` with an exact version.
fn pypi_pin(pin: &str) -> bool {
    pin.split_once("==")
        .is_some_and(|(name, version)| !name.trim().is_empty() && exact_version(version.trim()))
}

fn exact_version(version: &str) -> bool {
    version.starts_with(|c: char| c.is_ascii_digit())
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_agents_parse_and_are_pinned() {
        let names: Vec<String> = Declaration::built_in()
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, ["codex", "claude-code", "mini-swe-agent"]);
        let codex = Declaration::find("codex").unwrap();
        assert_eq!(codex.protocol, Wire::Responses);
        assert_eq!(codex.install.npm, ["@openai/codex@0.171.0"]);
        let claude = Declaration::find("claude-code").unwrap();
        assert_eq!(claude.run.answer, Answer::StdoutJsonLines("/result".into()));
    }

    #[test]
    fn placeholders_are_replaced_and_other_braces_kept() {
        let values = Values {
            prompt: "do it",
            model: "m",
            base_url: "http://127.0.0.1:1",
            token: "t",
            max_turns: 7,
        };
        assert_eq!(
            values.render(r#"{"a": "{model}@{base_url}/v1 {max_turns} {prompt} {token} {x}"}"#),
            r#"{"a": "m@http://127.0.0.1:1/v1 7 do it t {x}"}"#
        );
    }

    #[test]
    fn bad_declarations_name_the_file_line_and_field() {
        let file = Path::new("mine.toml");
        let text = "name = \"mine\"\nsummary = \"s\"\nprotocol = \"telnet\"\n";
        let err = Declaration::parse(text, file).unwrap_err().to_string();
        assert!(err.starts_with("mine.toml:3:"), "{err}");
        assert!(err.contains("telnet"), "{err}");
        let text = "name = \"mine\"\nsummary = \"s\"\nprotocol = \"responses\"\n\
                    [install]\nnpm = [\"left-pad\"]\n\
                    [run]\nargv = [\"x\", \"{prompt}\"]\n[smoke.shell]\nsh = \"{}\"\n";
        let err = Declaration::parse(text, file).unwrap_err().to_string();
        assert_eq!(err, "mine.toml:5: npm: \"left-pad\" is not `name@version`");
        let unknown = Declaration::find("nope").unwrap_err().to_string();
        assert!(
            unknown.contains("codex, claude-code, mini-swe-agent"),
            "{unknown}"
        );
    }

    #[test]
    fn pins_must_be_exact() {
        assert!(npm_pin("@openai/codex@0.171.0") && npm_pin("x@1.2.3-beta.1"));
        assert!(!npm_pin("@openai/codex") && !npm_pin("x@^1.2") && !npm_pin("x@latest"));
        assert!(pypi_pin("mini-swe-agent==2.4.6"));
        assert!(!pypi_pin("mini-swe-agent>=2") && !pypi_pin("mini-swe-agent"));
    }
}
