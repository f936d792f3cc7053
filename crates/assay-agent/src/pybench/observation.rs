//! What the model reads after a cell: the notebook outputs as upstream joins them, and what
//! assay adds where upstream has no answer (a cell that would not stop, output beyond a cap).

use std::time::Duration;

use assay_sandbox::{ExecOutcome, Status};

/// Upstream's preamble to a cell's error.
const ERROR_PREAMBLE: &str =
    "There are some errors in the code. All variables in this cell should be redefined. \
     Please Debug:\n";

/// A cell's outputs as upstream's interpreter message has them, in notebook order: what it
/// printed (both streams, as written), the last value's text, then the error as its name and
/// message (no traceback). Then what assay adds: that the printed output was cut, or that the
/// interpreter was restarted.
pub fn render(outcome: &ExecOutcome, cell_timeout: Duration) -> String {
    let mut text = outcome.output.text.clone();
    if outcome.output.truncated {
        text.push_str(&format!(
            "\n[assay: the cell printed {} bytes; the first {} were kept]\n",
            outcome.output.total_bytes,
            outcome.output.text.len()
        ));
    }
    if let Some(result) = &outcome.result {
        text.push_str(result);
    }
    if let Some(error) = &outcome.error {
        text.push_str(ERROR_PREAMBLE);
        text.push_str(&format!("Error: {}\n{}\n", error.name, error.message));
    }
    if !outcome.session_alive {
        let why = if outcome.status == Status::Timeout {
            format!(
                "The cell did not stop when it was interrupted at its time limit of {} s",
                cell_timeout.as_secs()
            )
        } else {
            format!("The interpreter stopped: {}", outcome.reason)
        };
        text.push_str(&format!(
            "{why}, so it was restarted: every variable and import is gone; files are kept.\n"
        ));
    }
    text
}

/// At most `max_chars` characters of `text`: its head and its tail, with how much was cut
/// between them. 0 keeps everything (upstream has no cap).
pub fn cap(text: &str, max_chars: usize) -> String {
    let total = text.chars().count();
    if max_chars == 0 || total <= max_chars {
        return text.to_string();
    }
    let head = max_chars / 2;
    let tail = max_chars - head;
    let cut = total - head - tail;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(total - tail)
        .map_or(text.len(), |(i, _)| i);
    format!(
        "{}\n... [{cut} characters cut] ...\n{}",
        &text[..head_end],
        &text[tail_start..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use assay_sandbox::{Captured, IsolationLevel, PyError};

    fn outcome(output: &str) -> ExecOutcome {
        ExecOutcome {
            status: Status::Pass,
            reason: "the cell ran".into(),
            result: None,
            error: None,
            output: Captured {
                text: output.into(),
                total_bytes: output.len() as u64,
                truncated: false,
            },
            figures: vec![],
            wall: Duration::ZERO,
            session_alive: true,
            isolation: IsolationLevel::Minimal,
        }
    }

    #[test]
    fn outputs_join_as_upstream_joins_them() {
        let mut cell = outcome("rows: 3\n");
        cell.result = Some("   a\n0  1".into());
        assert_eq!(
            render(&cell, Duration::from_secs(120)),
            "rows: 3\n   a\n0  1"
        );
        let mut failed = outcome("before\n");
        failed.status = Status::Error;
        failed.error = Some(PyError {
            name: "KeyError".into(),
            message: "'col'".into(),
            traceback: "Traceback ...".into(),
        });
        assert_eq!(
            render(&failed, Duration::from_secs(120)),
            "before\nThere are some errors in the code. All variables in this cell should be \
             redefined. Please Debug:\nError: KeyError\n'col'\n"
        );
    }

    #[test]
    fn a_restart_and_a_cut_are_said() {
        let mut killed = outcome("");
        killed.status = Status::Timeout;
        killed.session_alive = false;
        let text = render(&killed, Duration::from_secs(120));
        assert!(text.contains("time limit of 120 s"), "{text}");
        assert!(text.contains("every variable and import is gone"), "{text}");
        let mut flood = outcome("xxxx");
        flood.output.total_bytes = 10_000;
        flood.output.truncated = true;
        let text = render(&flood, Duration::from_secs(1));
        assert!(
            text.contains("printed 10000 bytes; the first 4 were kept"),
            "{text}"
        );
    }

    #[test]
    fn the_cap_keeps_head_and_tail_by_characters() {
        assert_eq!(cap("short", 0), "short");
        assert_eq!(cap("short", 5), "short");
        assert_eq!(cap("abcdefghij", 4), "ab\n... [6 characters cut] ...\nij");
        assert_eq!(cap("ééééé", 2), "é\n... [3 characters cut] ...\né");
    }
}
