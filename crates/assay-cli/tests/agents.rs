//! The built-in coding agents, really installed (pinned, from npm and PyPI) and really run:
//! `assay agents check` drives each through its own protocol, the gateway and the sandbox's
//! relay with a scripted model, and the shell command it is told to run must leave its file in
//! the agent's working directory.

mod common;

use common::assay_command;

/// Installs `agent` if needed, checks it, and returns what the check printed.
fn check(agent: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = assay_command(dir.path())
        .args(["agents", "check", agent, "--profile", "test"])
        .output()
        .expect("assay runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{agent}: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn codex_runs_a_command_through_the_responses_api() {
    let out = check("codex");
    assert!(
        out.contains("ok: it ran the command in the sandbox"),
        "{out}"
    );
    // One request asked for the command, one saw its output and finished.
    assert!(out.contains("codex: 2 model requests"), "{out}");
    assert!(out.contains("answer \"Done.\""), "{out}");
}

#[test]
fn claude_code_runs_a_command_through_anthropic_messages() {
    let out = check("claude-code");
    assert!(
        out.contains("ok: it ran the command in the sandbox"),
        "{out}"
    );
    assert!(out.contains("claude-code: 2 model requests"), "{out}");
    assert!(out.contains("answer \"Done.\""), "{out}");
}

#[test]
fn mini_swe_agent_runs_a_command_through_chat_completions() {
    let out = check("mini-swe-agent");
    assert!(
        out.contains("ok: it ran the command in the sandbox"),
        "{out}"
    );
    // Its second command is the one that submits.
    assert!(out.contains("mini-swe-agent: 2 model requests"), "{out}");
}

#[test]
fn agents_are_listed_with_their_protocol_and_pins() {
    let dir = tempfile::tempdir().unwrap();
    let out = assay_command(dir.path())
        .args(["agents", "list"])
        .output()
        .expect("assay runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    for line in [
        "speaks responses; @openai/codex@0.171.0",
        "speaks messages; @anthropic-ai/claude-code@2.1.332",
        "speaks chat_completions; mini-swe-agent==2.4.6",
    ] {
        assert!(stdout.contains(line), "{line}\n{stdout}");
    }
}
