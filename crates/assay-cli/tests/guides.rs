//! The guides' commands, run as a reader runs them, so that the documentation cannot go stale.
//!
//! Every page of `docs/guides/` and `docs/getting-started.md` is a test. Its ```` ```console ````
//! blocks hold what a reader types (a line starting `$ `; a line ending in `\` goes on) and
//! what it printed (the lines after it). The commands of one page run in order in one bash, in
//! a fresh working directory, so that a variable exported or a file written by one is there
//! for the next; a command ending in `&` runs on in the background until the page ends. Each
//! must exit 0 (or 1 where the page shows it printing an `error:`), and each line the page shows it printing must be a line it printed, where
//! any number stands for any number, `…` for any text, and runs of spaces for any spaces (a
//! table's columns widen with its figures).
//!
//! The reader's environment here: `assay` (this build) on `PATH`; `OPENAI_BASE_URL` and
//! `ANTHROPIC_BASE_URL` (which assay reads as the providers' SDKs do) at a loopback server
//! speaking both APIs, so that a page's
//! `--model openai:...` is asked for real over HTTP without a key for the real API. That
//! server answers a BigCodeBench-Hard prompt with the task's reference solution (after
//! thinking in `<think>` tags when the model's name says `r1`), a PyBench turn with code that
//! does task 3 and then says it is finished, and an LLM judge with a verdict.
//! `ASSAY_PYBENCH_DATA` is the shared PyBench data, read in place, and the wheel's Python
//! package `assay_code` is importable, as installing the wheel makes it. A block titled
//! `title="NAME"` is a file the reader writes: it is written where the page shows it.

mod common;
#[path = "../../assay-models/tests/mock/mod.rs"]
mod mock;

use std::io::{Read, Seek};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{asked_about, cache_root, fenced, hard_task, pybench_data, without_cluster_vars};
use mock::{MockServer, Reply, Route};
use serde_json::Value;

/// How long one page's commands may take together (the first full run of BigCodeBench-Hard
/// on 2 cores, with its reference times to measure, takes about 6 minutes).
const PAGE_LIMIT: Duration = Duration::from_secs(20 * 60);

/// One command of a page, with what the page shows it printing.
#[derive(Debug)]
struct Step {
    /// The line of the page the command starts on.
    line: usize,
    command: String,
    shown: Vec<String>,
}

impl Step {
    /// Whether the page shows the command refused: an `error:` among what it printed.
    fn refused(&self) -> bool {
        self.shown.iter().any(|line| line.starts_with("error:"))
    }
}

/// The commands of `page` (Markdown), in order, a file the page shows (a block with a
/// `title="NAME"`) written by a command of its own where it stands.
fn steps(page: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut block: Option<Block> = None;
    let mut continued = false;
    for (i, line) in page.lines().enumerate() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            block = match block {
                Some(Block::File(name, body)) => {
                    steps.push(Step {
                        line: i + 1,
                        command: format!("cat > {name} <<'@@EOF@@'\n{body}@@EOF@@"),
                        shown: Vec::new(),
                    });
                    None
                }
                Some(_) => None,
                None if info.trim() == "console" => Some(Block::Console),
                None => match info.split_once("title=\"") {
                    Some((_, rest)) => Some(Block::File(
                        rest.split('"').next().unwrap_or_default().to_string(),
                        String::new(),
                    )),
                    None => Some(Block::Other),
                },
            };
            continued = false;
            continue;
        }
        match &mut block {
            Some(Block::File(_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            Some(Block::Console) if continued => {
                let step = steps.last_mut().unwrap();
                step.command.push('\n');
                step.command.push_str(line);
                continued = line.ends_with('\\');
            }
            Some(Block::Console) => {
                if let Some(command) = line.strip_prefix("$ ") {
                    steps.push(Step {
                        line: i + 1,
                        command: command.to_string(),
                        shown: Vec::new(),
                    });
                    continued = command.ends_with('\\');
                } else if !line.trim().is_empty() {
                    let step = steps
                        .last_mut()
                        .unwrap_or_else(|| panic!("line {}: output before any command", i + 1));
                    step.shown.push(line.to_string());
                }
            }
            _ => {}
        }
    }
    assert!(block.is_none(), "a ``` block is not closed");
    steps
}

/// The fenced block a line of a page is in.
enum Block {
    /// What a reader types, and what it prints.
    Console,
    /// A file the reader writes: its name and text so far.
    File(String, String),
    Other,
}

/// A line as compared: numbers as `#`, runs of white space as one space, no space at the ends.
fn normalized(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.trim().chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            // One number: digits with the separators and decimal points between them.
            while let Some(&next) = chars.peek() {
                let within = matches!(next, '.' | ',') && {
                    let mut ahead = chars.clone();
                    ahead.next();
                    ahead.peek().is_some_and(char::is_ascii_digit)
                };
                if next.is_ascii_digit() || within {
                    chars.next();
                } else {
                    break;
                }
            }
            out.push('#');
        } else if c.is_whitespace() {
            while chars.peek().is_some_and(|n| n.is_whitespace()) {
                chars.next();
            }
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether `printed` is what `shown` shows: equal once normalized, `…` standing for any text.
fn shows(shown: &str, printed: &str) -> bool {
    let shown = normalized(shown);
    let printed = normalized(printed);
    let parts: Vec<&str> = shown.split('…').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if parts.len() == 1 {
        return printed == first;
    }
    if !printed.starts_with(first) || !printed[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &printed[first.len()..printed.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

#[test]
fn the_comparison_allows_numbers_spaces_and_elisions_only() {
    assert!(shows(
        "pass@1 0.9662 over 143 tasks (5 set apart)",
        "pass@1  1.0 over 12 tasks (1,140 set apart)"
    ));
    assert!(shows("wrote runs/… in … s", "wrote runs/x/y in 12.5 s"));
    assert!(shows("…: listening on …", "assay: listening on http://x"));
    assert!(!shows("pass@1 0.9662", "pass@k 0.9662"));
    assert!(!shows("wrote runs/… in … s", "wrote runs/x in 12 ms"));
    assert!(!shows("judged 3 tasks", "judged 3 tasks, 2 failed"));
    let page =
        "text\n```console\n$ assay run \\\n    --x 1\nout 1\n\n$ echo\n```\n```sh\n$ no\n```\n\
                ```python title=\"a.py\"\nprint(1)\n```\n";
    let steps = steps(page);
    assert_eq!(steps.len(), 3, "{steps:?}");
    assert_eq!(steps[0].command, "assay run \\\n    --x 1");
    assert_eq!(steps[0].shown, ["out 1"]);
    assert_eq!((steps[1].line, steps[1].command.as_str()), (7, "echo"));
    assert_eq!(
        steps[2].command,
        "cat > a.py <<'@@EOF@@'\nprint(1)\n@@EOF@@"
    );
}

/// The loopback model every page's `openai:` models are asked through.
fn model_server() -> &'static MockServer {
    static SERVER: OnceLock<MockServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let server = MockServer::start_on_thread();
        server.respond_with(Route::Chat, |body| {
            agent_turn(body).unwrap_or_else(|| Reply::chat(&[&answer(body)]))
        });
        server.respond_with(Route::Messages, |body| Reply::message(&answer(body)));
        server
    })
}

/// A coding agent's turn, when the request offers the one `bash` tool mini-swe-agent offers:
/// the task's reference solution written to `solution.py`, then the command that submits.
fn agent_turn(body: &Value) -> Option<Reply> {
    let tools = body["tools"].as_array()?;
    if !tools.iter().any(|t| t["function"]["name"] == "bash") {
        return None;
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let text: String = messages
        .iter()
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
            _ => String::new(),
        })
        .collect();
    let task = common::hard()
        .tasks
        .into_iter()
        .find(|t| text.contains(t.complete_prompt.trim()))?;
    let command = if messages.iter().any(|m| m["role"] == "tool") {
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT".to_string()
    } else {
        format!(
            "cat > solution.py <<'GUIDE_EOF'\n{}\nGUIDE_EOF",
            task.reference_solution()
        )
    };
    let call = serde_json::json!([{"id": "call_guide", "type": "function",
        "function": {"name": "bash", "arguments": serde_json::json!({"command": command}).to_string()}}]);
    Some(Reply::ok(serde_json::json!({
        "id": "chatcmpl-guide", "object": "chat.completion", "created": 0, "model": "guide",
        "choices": [{"index": 0, "finish_reason": "tool_calls",
                     "message": {"role": "assistant", "content": "", "tool_calls": call}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    })))
}

/// What the loopback model answers to a chat request.
fn answer(body: &Value) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let all_text = serde_json::to_string(&messages).unwrap_or_default();
    if all_text.contains("Agent1") {
        // An LLM judge (PyBench's): a verdict in upstream's format, for either of its prompts.
        return "Agent1 did it.\n```\n{\"Pass\": {\"Agent1\": \"Pass\", \"Agent2\": \"Pass\"}, \
                \"Decision\": {\"Agent1\": 1, \"Agent2\": 0}}\n```"
            .to_string();
    }
    let task = asked_about(body);
    if !task.is_empty() {
        let code = fenced(&hard_task(&task).reference_solution());
        let model = body["model"].as_str().unwrap_or_default();
        return if model.contains("r1") {
            format!("<think>The tests call task_func; write it.</think>{code}")
        } else {
            code
        };
    }
    // A PyBench turn: the task done in the first, then the end said.
    if messages.len() <= 3 {
        format!(
            "Analyse: read the CSV, drop its duplicates.\nAction:\n```python\n{}\n```",
            common::PYBENCH_DEDUP
        )
    } else {
        "Finished: the duplicates are dropped and the result is in ./output/3.csv".to_string()
    }
}

/// Runs the commands of `page` (under `docs/`), failing at the first that exits non-zero or
/// does not print what the page shows.
fn run_guide(page: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(page);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{page}: {e}"));
    let steps = steps(&text);
    assert!(!steps.is_empty(), "{page} has no ```console commands");

    let mut script =
        String::from("exec 2>&1\nset -o pipefail\ntrap 'kill $(jobs -p) 2>/dev/null' EXIT\n");
    for (i, step) in steps.iter().enumerate() {
        let must_succeed = u8::from(!step.refused());
        script.push_str(&format!(
            "printf '\\n@@step {i}@@\\n'\n{}\nstatus=$?; printf '\\n@@status {i} %s@@\\n' $status\n\
             if [ $status -ne 0 ] && [ {must_succeed} = 1 ]; then exit 1; fi\n",
            step.command
        ));
    }
    script.push_str("printf '\\n@@end@@\\n'\n");

    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let log = tempfile::tempfile().unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_assay")).parent().unwrap();
    // The wheel's Python package (the verifier service's client), as installing it would give.
    let python_package = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python");
    let path_var = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // Started as a reader's shell is, with the test's environment and the reader's additions.
    #[allow(clippy::disallowed_methods)]
    let mut bash = Command::new("bash");
    bash.args(["-c", &script])
        .current_dir(dir.path())
        .env("PATH", path_var)
        .env("ASSAY_CACHE_DIR", cache_root())
        .env("OPENAI_BASE_URL", model_server().openai_base())
        .env("OPENAI_API_KEY", "sk-guide-test")
        .env("ANTHROPIC_BASE_URL", model_server().url())
        .env("ASSAY_PYBENCH_DATA", pybench_data())
        .env("PYTHONPATH", python_package)
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log.try_clone().unwrap());
    without_cluster_vars(&mut bash);
    std::os::unix::process::CommandExt::process_group(&mut bash, 0);
    let mut child = bash.spawn().expect("start bash");
    let deadline = Instant::now() + PAGE_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // Whatever the page left running (a server it started) ends with it.
    let _ = rustix::process::kill_process_group(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::KILL,
    );
    let _ = child.wait();
    let output = {
        let mut log = log;
        let mut bytes = Vec::new();
        log.rewind().unwrap();
        log.read_to_end(&mut bytes).unwrap();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    // What the page printed, for `--nocapture` (the outputs a page shows are copied from it).
    println!("{output}");
    let segments = segments(&output);
    for (i, step) in steps.iter().enumerate() {
        let where_ = format!("{page}:{}: `{}`", step.line, step.command);
        let printed = segments.get(i).unwrap_or_else(|| {
            panic!(
                "{where_} never ran ({}):\n{output}",
                match status {
                    None => format!("the page took longer than {PAGE_LIMIT:?}"),
                    Some(status) => format!("bash ended with {status}"),
                }
            )
        });
        let status = output
            .lines()
            .find_map(|l| l.strip_prefix(&format!("@@status {i} ")))
            .map(|code| code.trim_end_matches('@'))
            .unwrap_or("0");
        match (step.refused(), status) {
            (false, "0") | (true, "1") => {}
            (false, code) => panic!("{where_} exited with {code}; it printed:\n{printed}"),
            (true, code) => panic!(
                "{where_} should be refused (exit 1, as the page's `error:` says); it exited with \
                 {code} and printed:\n{printed}"
            ),
        }
        // A background command prints on while the page goes on.
        let background = step.command.trim_end().ends_with('&');
        let printed = if background {
            segments[i..].join("\n")
        } else {
            printed.clone()
        };
        for shown in &step.shown {
            assert!(
                printed.lines().any(|line| shows(shown, line)),
                "{where_}: the page shows it printing\n    {shown}\nbut it printed:\n{printed}"
            );
        }
    }
    assert!(
        status.is_some() && output.contains("@@end@@"),
        "{page}: the commands did not all end within {PAGE_LIMIT:?}:\n{output}"
    );
}

/// What each step printed, in order: the output between its marker and the next (the markers
/// start on a line of their own, whether or not the step's output ended its last line).
fn segments(output: &str) -> Vec<String> {
    let mut segments: Vec<String> = Vec::new();
    for line in output.lines() {
        if line.starts_with("@@step ") {
            segments.push(String::new());
        } else if line.starts_with("@@") {
            continue;
        } else if let Some(segment) = segments.last_mut() {
            segment.push_str(line);
            segment.push('\n');
        }
    }
    segments
}

#[test]
fn every_guide_is_run() {
    let guides = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/guides");
    let mut found: Vec<String> = std::fs::read_dir(&guides)
        .unwrap()
        .map(|e| format!("guides/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    found.push("getting-started.md".into());
    found.sort();
    let mut run: Vec<String> = PAGES.iter().map(|p| p.to_string()).collect();
    run.sort();
    assert_eq!(
        found, run,
        "a page of docs/guides/ that no test runs, or the reverse"
    );
}

/// A test for each page, named after it, and [`PAGES`], the pages run here.
macro_rules! guides {
    ($($name:ident => $page:expr),* $(,)?) => {
        const PAGES: &[&str] = &[$($page),*];
        $(
            #[test]
            fn $name() {
                run_guide($page);
            }
        )*
    };
}

guides! {
    getting_started => "getting-started.md",
    api_model => "guides/api-model.md",
    local_model => "guides/local-model.md",
    thinking_models => "guides/thinking-models.md",
    pybench => "guides/pybench.md",
    coding_agents => "guides/coding-agents.md",
    verifier_service => "guides/verifier-service.md",
    reports => "guides/reports.md",
    viewer => "guides/viewer.md",
    tracking => "guides/tracking.md",
    many_machines => "guides/many-machines.md",
    sandbox => "guides/sandbox.md",
}
