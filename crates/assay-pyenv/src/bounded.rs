//! Running a child to its end or a time limit, its output streamed line by line and
//! collected: how every tool assay starts while setting up an environment runs (the
//! installers, the interpreter probe, the NLTK downloader), and what runs in an environment
//! once it is set up for assay's own use (the uploaders of `assay export --to mlflow|wandb`).
//! Its own module because those callers live in `install`, `interpreter` and `nltk`, and
//! `install` uses the other two.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How a child ended, and all it wrote.
pub struct Finished {
    /// Its exit status.
    pub status: ExitStatus,
    /// Whether it exited 0.
    pub success: bool,
    /// Its standard output, line by line.
    pub stdout: String,
    /// Its standard error, line by line.
    pub stderr: String,
}

/// How long, once the child has exited, its output is still read: what it wrote before it
/// exited is in the pipes already, but a grandchild that inherited them (wandb's service,
/// which starts its own session) can keep them open long after. Past this its output is no
/// longer waited for.
const AFTER_EXIT: Duration = Duration::from_secs(5);

/// The child was stopped at its time limit: what it wrote until then is kept, so that a caller
/// can use what it had done (the `std::io::Error` of kind `TimedOut` that [`run_bounded`]
/// returns then holds it; see [`TimedOut::of`]).
#[derive(Debug)]
pub struct TimedOut {
    /// The time limit.
    pub after: Duration,
    /// Its standard output until it was stopped.
    pub stdout: String,
    /// Its standard error until it was stopped.
    pub stderr: String,
}

impl std::fmt::Display for TimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no result after {} s; stopped it", self.after.as_secs())
    }
}

impl std::error::Error for TimedOut {}

impl TimedOut {
    /// The partial output `error` holds, when it is [`run_bounded`]'s time limit.
    pub fn of(error: &std::io::Error) -> Option<&TimedOut> {
        error.get_ref()?.downcast_ref::<TimedOut>()
    }
}

/// Runs `cmd` to completion or until `timeout` (then kills it, and the error holds what it
/// wrote: [`TimedOut`]), streaming both output streams line by line to `on_line` and
/// collecting them. The output is read for at most [`AFTER_EXIT`] once the child has exited
/// (and never past `timeout`): the reader threads of pipes still held open are left behind.
pub fn run_bounded(
    mut cmd: Command,
    timeout: Duration,
    on_line: &mut dyn FnMut(&str),
) -> std::io::Result<Finished> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn()?;
    let (tx, rx) = mpsc::channel::<(bool, String)>();
    pump(child.stdout.take(), true, tx.clone());
    pump(child.stderr.take(), false, tx);
    let deadline = Instant::now() + timeout;
    let mut output = Output::default();
    let status = loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(line) => output.add(line, on_line),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            // Both streams closed: the child is exiting; don't spin while it does.
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                std::thread::sleep(Duration::from_millis(10))
            }
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            // What is already in the pipes, without waiting on a grandchild holding them.
            output.drain(&rx, Instant::now() + Duration::from_millis(200), on_line);
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                TimedOut {
                    after: timeout,
                    stdout: output.stdout,
                    stderr: output.stderr,
                },
            ));
        }
    };
    output.drain(&rx, deadline.min(Instant::now() + AFTER_EXIT), on_line);
    Ok(Finished {
        success: status.success(),
        status,
        stdout: output.stdout,
        stderr: output.stderr,
    })
}

/// Both streams as collected so far.
#[derive(Default)]
struct Output {
    stdout: String,
    stderr: String,
}

impl Output {
    fn add(&mut self, (is_stdout, line): (bool, String), on_line: &mut dyn FnMut(&str)) {
        on_line(&line);
        let buf = if is_stdout {
            &mut self.stdout
        } else {
            &mut self.stderr
        };
        buf.push_str(&line);
        buf.push('\n');
    }

    /// Takes lines until both streams are closed or `until`.
    fn drain(
        &mut self,
        rx: &mpsc::Receiver<(bool, String)>,
        until: Instant,
        on_line: &mut dyn FnMut(&str),
    ) {
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match rx.recv_timeout(left) {
                Ok(line) => self.add(line, on_line),
                Err(_) => return,
            }
        }
    }
}

/// Sends `stream`'s lines until it closes, on a thread of its own that nothing waits for
/// (see [`AFTER_EXIT`]).
fn pump(
    stream: Option<impl Read + Send + 'static>,
    is_stdout: bool,
    tx: mpsc::Sender<(bool, String)>,
) {
    let Some(stream) = stream else {
        return;
    };
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(|l| l.ok()) {
            if tx.send((is_stdout, line)).is_err() {
                break;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut command = crate::child_env::command("sh", crate::child_env::Inherit::Tools);
        command.args(["-c", script]);
        command
    }

    #[test]
    fn a_grandchild_holding_the_pipes_does_not_hold_the_wait() {
        let started = Instant::now();
        let finished = run_bounded(
            sh("echo before; (sleep 60 &) ; echo after"),
            Duration::from_secs(120),
            &mut |_| {},
        )
        .unwrap();
        assert!(finished.success);
        assert_eq!(finished.stdout, "before\nafter\n");
        let waited = started.elapsed();
        assert!(waited < AFTER_EXIT + Duration::from_secs(5), "{waited:?}");
    }

    #[test]
    fn a_timeout_keeps_what_was_written_until_then() {
        let error = run_bounded(
            sh("echo done one; echo said >&2; exec sleep 60"),
            Duration::from_secs(2),
            &mut |_| {},
        )
        .err()
        .expect("stopped at its limit");
        assert_eq!(error.kind(), std::io::ErrorKind::TimedOut);
        assert_eq!(error.to_string(), "no result after 2 s; stopped it");
        let partial = TimedOut::of(&error).expect("the output until then");
        assert_eq!(partial.stdout, "done one\n");
        assert_eq!(partial.stderr, "said\n");
    }
}
