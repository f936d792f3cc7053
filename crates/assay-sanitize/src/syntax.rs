//! The syntax check: CPython's own `ast.parse`, asked through one long-lived helper process.
//!
//! The official `syntax_check` is "does `ast.parse` accept this text", and no Rust parser agrees
//! with CPython 3.11 on every input (see the crate docs), so the interpreter itself answers.
//! Starting an interpreter per question would cost more than the parsing, hence one helper per
//! [`SyntaxChecker`].
//!
//! Protocol (binary, over the helper's stdin/stdout; integers are little-endian `u64`):
//! - on start the helper writes one line `assay-sanitize-helper <implementation> <x.y.z>\n`;
//! - `D <len> <bytes>` stores a UTF-8 document (no answer);
//! - `Q <n> (<start> <end>)*n` asks about `n` byte ranges of the document, in order; the helper
//!   answers one byte per range (`1` parses, `0` does not) and stops after the first `1`.
//!
//! A batch costs one round trip; the helper flushes each answer as it has it, so every answer
//! can have its own deadline (measured: 4.7 s for the 592 official answers, release build,
//! against 4.4 s when answers were flushed every 50 ms instead; the simpler rule wins). When the
//! helper dies or hangs mid-batch, the first unanswered range is asked about alone on a fresh
//! helper: a range that breaks two helpers does not parse, one broken by chance (killed from
//! outside) is answered properly.
//!
//! The helper only ever calls `ast.parse`, which builds a syntax tree and executes nothing.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use assay_pyenv::child_env::{self, Inherit};

use crate::Error;

/// The helper program. It answers `False` for every exception `ast.parse` raises: the official
/// check catches only `SyntaxError` and `MemoryError` and would crash on the others (e.g.
/// `RecursionError` for `"a" + ".b" * 100000`); for us "does not parse" is the useful answer.
const HELPER_SCRIPT: &str = r#"
import ast, sys, warnings
warnings.simplefilter("ignore")
stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
def read(n):
    data = stdin.read(n)
    if len(data) != n:
        sys.exit(0)
    return data
def read_u64():
    return int.from_bytes(read(8), "little")
stdout.write(("assay-sanitize-helper %s %d.%d.%d\n" % ((sys.implementation.name,) + tuple(sys.version_info[:3]))).encode())
stdout.flush()
document = b""
while True:
    op = read(1)
    if op == b"D":
        document = read(read_u64())
    elif op == b"Q":
        count = read_u64()
        ranges = read(16 * count)
        for k in range(0, 16 * count, 16):
            start = int.from_bytes(ranges[k:k + 8], "little")
            end = int.from_bytes(ranges[k + 8:k + 16], "little")
            try:
                ast.parse(document[start:end].decode("utf-8"))
                ok = True
            except Exception:
                ok = False
            stdout.write(b"\x01" if ok else b"\x00")
            stdout.flush()
            if ok:
                break
    else:
        sys.exit(2)
"#;

/// How long one parse may take before the helper is considered hung.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the interpreter may take to start and introduce itself (slow disks, busy machines).
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Answers "does CPython parse this?" for byte ranges of a document.
pub(crate) struct SyntaxChecker {
    python: PathBuf,
    script: String,
    answer_timeout: Duration,
    helper: Option<Helper>,
}

impl SyntaxChecker {
    /// Starts the helper with `python`, which must be CPython 3.11.
    pub(crate) fn new(python: &Path) -> Result<Self, Error> {
        Self::with_script(python, HELPER_SCRIPT.to_string(), ANSWER_TIMEOUT)
    }

    fn with_script(python: &Path, script: String, answer_timeout: Duration) -> Result<Self, Error> {
        let helper = Helper::start(python, &script)?;
        Ok(SyntaxChecker {
            python: python.to_path_buf(),
            script,
            answer_timeout,
            helper: Some(helper),
        })
    }

    /// The index of the first range of `document` that parses, trying them in order.
    ///
    /// When the helper dies or hangs, it is replaced and the first range it left unanswered is
    /// asked about alone; if that kills or hangs the new helper too, the range counts as not
    /// parsing (so a hang costs at most twice the answer timeout). An error is returned only
    /// when no helper can be started.
    pub(crate) fn first_parsing(
        &mut self,
        document: &str,
        ranges: &[Range<usize>],
    ) -> Result<Option<usize>, Error> {
        let mut next = 0;
        let mut isolate = false;
        while next < ranges.len() {
            let helper = match &mut self.helper {
                Some(helper) => helper,
                None => self
                    .helper
                    .insert(Helper::start(&self.python, &self.script)?),
            };
            let batch = if isolate {
                &ranges[next..=next]
            } else {
                &ranges[next..]
            };
            match helper.ask(document, batch, self.answer_timeout) {
                Asked::Parses(offset) => return Ok(Some(next + offset)),
                Asked::NoneParse => {
                    next += batch.len();
                    isolate = false;
                }
                Asked::Failed { answered } => {
                    self.helper = None;
                    next += answered;
                    if isolate {
                        // Alone, it broke a fresh helper: it does not parse.
                        next += 1;
                    }
                    isolate = !isolate;
                }
            }
        }
        Ok(None)
    }
}

/// What became of one question.
enum Asked {
    /// The range at this offset parses (all earlier ones do not).
    Parses(usize),
    /// No range parses.
    NoneParse,
    /// The helper died, or took longer than the timeout for an answer, after answering
    /// `answered` ranges (all "no").
    Failed { answered: usize },
}

/// One running helper process.
struct Helper {
    child: Reaped,
    stdin: ChildStdin,
    /// Chunks of the helper's stdout, read by a thread so that every read can have a deadline.
    stdout: Receiver<Vec<u8>>,
    unread: VecDeque<u8>,
    /// The document the helper holds.
    document: Option<String>,
}

/// Why the next byte from the helper did not come.
enum Silence {
    Closed,
    TimedOut,
}

impl Helper {
    /// Spawns `python` with `script` and checks that it introduces itself as CPython 3.11.
    ///
    /// The environment is empty: the helper needs none, and the caller's environment may hold
    /// secrets (API keys) that have no business reaching a process fed with model output.
    fn start(python: &Path, script: &str) -> Result<Helper, Error> {
        let spawn_error = |source| Error::StartPython {
            python: python.to_path_buf(),
            source,
        };
        let mut child = child_env::command(python, Inherit::Nothing)
            .args(["-I", "-S", "-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map(Reaped)
            .map_err(spawn_error)?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (
            child.0.stdin.take(),
            child.0.stdout.take(),
            child.0.stderr.take(),
        ) else {
            // Not expected: all three were requested as pipes.
            let missing = std::io::Error::other("its standard streams could not be connected");
            return Err(spawn_error(missing));
        };
        // The first few KiB of stderr, to explain a failed start.
        let stderr = drain(stderr, Vec::new(), |kept, chunk| {
            let room = 4096usize.saturating_sub(kept.len());
            kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
        })
        .map_err(spawn_error)?;
        let (sender, receiver) = mpsc::channel();
        drain(stdout, (), move |_, chunk| {
            let _ = sender.send(chunk.to_vec());
        })
        .map_err(spawn_error)?;
        let mut helper = Helper {
            child,
            stdin,
            stdout: receiver,
            unread: VecDeque::new(),
            document: None,
        };
        match helper.introduction() {
            Ok(found) if found.starts_with("cpython 3.11.") => Ok(helper),
            Ok(found) => Err(Error::UnsupportedPython {
                python: python.to_path_buf(),
                found,
            }),
            Err(detail) => {
                drop(helper);
                let said = stderr
                    .recv_timeout(Duration::from_secs(2))
                    .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_string())
                    .unwrap_or_default();
                Err(Error::HelperHandshake {
                    python: python.to_path_buf(),
                    detail: if said.is_empty() {
                        detail
                    } else {
                        format!("{detail}; it said: {said}")
                    },
                })
            }
        }
    }

    /// Reads the helper's first line and returns "<implementation> <version>".
    fn introduction(&mut self) -> Result<String, String> {
        const GREETING: &str = "assay-sanitize-helper ";
        let deadline = Instant::now() + START_TIMEOUT;
        let mut line = Vec::new();
        while line.len() < 200 {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_byte(left) {
                Ok(b'\n') => {
                    let line = String::from_utf8_lossy(&line);
                    return line
                        .strip_prefix(GREETING)
                        .map(str::to_string)
                        .ok_or_else(|| format!("it printed {line:?} instead of the greeting"));
                }
                Ok(byte) => line.push(byte),
                Err(Silence::Closed) => {
                    let status = self
                        .child
                        .0
                        .wait()
                        .map(|status| status.to_string())
                        .unwrap_or_else(|error| error.to_string());
                    return Err(format!("it exited ({status}) without greeting"));
                }
                Err(Silence::TimedOut) => {
                    return Err(format!(
                        "it did not greet within {} s",
                        START_TIMEOUT.as_secs()
                    ))
                }
            }
        }
        Err("it printed a long line instead of the greeting".to_string())
    }

    /// Sends `document` (if the helper does not hold it yet) and the ranges, then collects the
    /// answers.
    fn ask(&mut self, document: &str, ranges: &[Range<usize>], timeout: Duration) -> Asked {
        let new_document = self.document.as_deref() != Some(document);
        let mut message = Vec::with_capacity(9 + ranges.len() * 16);
        if new_document {
            message.push(b'D');
            message.extend_from_slice(&(document.len() as u64).to_le_bytes());
            message.extend_from_slice(document.as_bytes());
        }
        message.push(b'Q');
        message.extend_from_slice(&(ranges.len() as u64).to_le_bytes());
        for range in ranges {
            message.extend_from_slice(&(range.start as u64).to_le_bytes());
            message.extend_from_slice(&(range.end as u64).to_le_bytes());
        }
        if self
            .stdin
            .write_all(&message)
            .and_then(|()| self.stdin.flush())
            .is_err()
        {
            return Asked::Failed { answered: 0 };
        }
        if new_document {
            self.document = Some(document.to_string());
        }
        for answered in 0..ranges.len() {
            match self.next_byte(timeout) {
                Ok(0) => {}
                Ok(1) => return Asked::Parses(answered),
                // Anything else is not our protocol: replace the helper as if it had crashed.
                Ok(_) | Err(_) => return Asked::Failed { answered },
            }
        }
        Asked::NoneParse
    }

    fn next_byte(&mut self, timeout: Duration) -> Result<u8, Silence> {
        loop {
            if let Some(byte) = self.unread.pop_front() {
                return Ok(byte);
            }
            match self.stdout.recv_timeout(timeout) {
                Ok(chunk) => self.unread.extend(chunk),
                Err(RecvTimeoutError::Timeout) => return Err(Silence::TimedOut),
                Err(RecvTimeoutError::Disconnected) => return Err(Silence::Closed),
            }
        }
    }
}

/// A child process that is killed and reaped when dropped, whatever state it is in.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reads `pipe` to its end on a thread, folding chunks into `state` with `absorb`; the channel
/// delivers the final state when the pipe closes.
fn drain<R, S, F>(mut pipe: R, mut state: S, mut absorb: F) -> std::io::Result<Receiver<S>>
where
    R: Read + Send + 'static,
    S: Send + 'static,
    F: FnMut(&mut S, &[u8]) + Send + 'static,
{
    let (done, result) = mpsc::channel();
    thread::Builder::new()
        .name("assay-sanitize-helper-pipe".to_string())
        .spawn(move || {
            let mut buffer = [0u8; 8192];
            while let Ok(read @ 1..) = pipe.read(&mut buffer) {
                absorb(&mut state, &buffer[..read]);
            }
            let _ = done.send(state);
        })?;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use std::slice;

    use super::*;

    fn python() -> PathBuf {
        assay_pyenv::Interpreter::discover(None)
            .expect("a CPython 3.11 interpreter (set ASSAY_PYTHON)")
            .executable
    }

    fn lines_document() -> (String, Vec<Range<usize>>) {
        // Ranges: "x = (", "x = (\n1", "x = (\n1\n)".
        let document = "x = (\n1\n)".to_string();
        (document, vec![0..5, 0..7, 0..9])
    }

    #[test]
    fn finds_the_first_parsing_range() {
        let mut checker = SyntaxChecker::new(&python()).unwrap();
        let (document, ranges) = lines_document();
        assert_eq!(checker.first_parsing(&document, &ranges).unwrap(), Some(2));
        assert_eq!(
            checker.first_parsing(&document, &ranges[..2]).unwrap(),
            None
        );
        assert_eq!(
            checker
                .first_parsing("x", slice::from_ref(&(0..1)))
                .unwrap(),
            Some(0)
        );
        assert_eq!(checker.first_parsing("x", &[]).unwrap(), None);
    }

    #[test]
    fn a_killed_helper_is_replaced() {
        let mut checker = SyntaxChecker::new(&python()).unwrap();
        let (document, ranges) = lines_document();
        assert_eq!(checker.first_parsing(&document, &ranges).unwrap(), Some(2));
        let helper = checker.helper.as_mut().unwrap();
        let pid = helper.child.0.id();
        helper.child.0.kill().unwrap();
        // The replacement must also be given the document again.
        assert_eq!(checker.first_parsing(&document, &ranges).unwrap(), Some(2));
        assert_ne!(checker.helper.as_ref().unwrap().child.0.id(), pid);
    }

    #[test]
    fn parser_exceptions_leave_the_helper_running() {
        let mut checker = SyntaxChecker::new(&python()).unwrap();
        let pid = checker.helper.as_ref().unwrap().child.0.id();
        for bad in [
            format!("y = a{}", ".b".repeat(100_000)), // RecursionError in CPython 3.11
            format!("y = {}1", "-".repeat(100_000)),  // MemoryError (parser stack)
            format!("y = {}", "(".repeat(100_000)),   // SyntaxError (too many nested)
        ] {
            assert_eq!(
                checker
                    .first_parsing(&bad, slice::from_ref(&(0..bad.len())))
                    .unwrap(),
                None
            );
        }
        // Answered by the helper itself, not by a replacement after it died.
        assert_eq!(checker.helper.as_ref().unwrap().child.0.id(), pid);
    }

    /// The real helper, except that it dies on every range containing "crash" and hangs on
    /// every range containing "hang".
    fn fragile_script() -> String {
        let sabotage = r#"
import ast, os, time
real_parse = ast.parse
def parse(text):
    if "crash" in text:
        os._exit(1)
    if "hang" in text:
        time.sleep(3600)
    return real_parse(text)
ast.parse = parse
"#;
        format!("{sabotage}{HELPER_SCRIPT}")
    }

    #[test]
    fn a_range_that_kills_the_helper_twice_does_not_parse() {
        let mut checker =
            SyntaxChecker::with_script(&python(), fragile_script(), ANSWER_TIMEOUT).unwrap();
        let document = "x = (\ncrash = 1\n)\ny = 2";
        // "x = (", "x = (\ncrash = 1", "x = (\ncrash = 1\n)", "y = 2"
        let ranges = [0..5, 0..15, 0..17, 18..23];
        assert_eq!(checker.first_parsing(document, &ranges).unwrap(), Some(3));
        assert_eq!(
            checker
                .first_parsing(document, slice::from_ref(&(6..15)))
                .unwrap(),
            None
        );
        assert_eq!(
            checker
                .first_parsing(document, slice::from_ref(&(18..23)))
                .unwrap(),
            Some(0)
        );
    }

    #[test]
    fn a_range_that_hangs_does_not_parse() {
        let mut checker =
            SyntaxChecker::with_script(&python(), fragile_script(), Duration::from_millis(500))
                .unwrap();
        let document = "hang = 1\ny = 2";
        let hung = checker.helper.as_ref().unwrap().child.0.id();
        let started = Instant::now();
        assert_eq!(
            checker.first_parsing(document, &[0..8, 9..14]).unwrap(),
            Some(1)
        );
        // The hung helper was given up on: another one gave the answer.
        assert_ne!(checker.helper.as_ref().unwrap().child.0.id(), hung);
        // Cut by the timeout (twice 0.5 s, plus starting helpers), not waiting for the helper's
        // hour-long sleep: 60 s is over fifty times what that takes, beyond any scheduling delay.
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{:?}",
            started.elapsed()
        );
    }
}
