//! Running git in one directory: never waiting on a password prompt, never hanging on a
//! remote that stops answering (a step with no output for [`STALL`] is killed, with the
//! helpers it started), its progress lines (which git rewrites in place with `\r`) handed to
//! an observer one by one. Apart from the fetch's logic as it is all process handling.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use assay_pyenv::child_env::{command, Inherit};
use assay_pyenv::SetupObserver;
use rustix::process::{Pid, Signal};

use super::DataError;

/// How long a git step may go without a word (progress included) before it is stopped: a
/// fetch of 100 MB has no sensible bound on its total time, but a remote that says nothing
/// for two minutes is gone.
const STALL: Duration = Duration::from_secs(120);
/// The lines of git's stderr an error keeps (the last ones: where it says why).
const TAIL_LINES: usize = 8;

/// git, run in `dir`.
pub(super) struct Git {
    dir: PathBuf,
}

/// What a git step printed, when it succeeded.
pub(super) struct Said {
    pub(super) stdout: String,
}

/// Why a git step failed.
pub(super) enum Failure {
    /// It ran and exited non-zero; the last lines of its stderr.
    Exit(String),
    /// Anything else (git missing, stalled, unreadable): already the error to give.
    Other(DataError),
}

impl Git {
    pub(super) fn new(dir: &Path) -> Git {
        Git {
            dir: dir.to_path_buf(),
        }
    }

    /// Runs `git ARGS` to its end, each line of its stderr to `observer`.
    pub(super) fn run(&self, args: &[&str], observer: &dyn SetupObserver) -> Result<Said, Failure> {
        let mut cmd = command("git", Inherit::Tools);
        cmd.current_dir(&self.dir)
            // A remote asking for a password fails instead of waiting on a prompt no one sees:
            // no terminal prompt, no askpass program (the environment's or the user's
            // `core.askPass`), no credential helper of the user's (which may prompt itself),
            // and ssh in batch mode, which otherwise asks on /dev/tty for a passphrase or a
            // host key. `GIT_SSH_COMMAND` also overrides the user's `core.sshCommand` (the
            // user's own `GIT_SSH_COMMAND` never reaches git: `Inherit::Tools` leaves it out).
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_ASKPASS", "")
            .env("SSH_ASKPASS", "")
            .env("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
            .args(["-c", "core.askPass=", "-c", "credential.helper="])
            // The files as committed, whatever the user's settings would make of line ends.
            .args([
                "-c",
                "core.autocrlf=false",
                "-c",
                "advice.detachedHead=false",
            ])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // git fetches through helpers (`git-remote-https`, `fetch-pack`, `index-pack`),
            // which write into the checkout and hold its stderr open: stopping a stalled git
            // means stopping its whole group.
            .process_group(0);
        let parent = rustix::process::getpid();
        // Out of assay's group, git no longer hears the terminal's Ctrl-C, nor a kill of
        // assay's group: it hears assay's death instead, and ends (its helpers then read the
        // end of their input).
        // SAFETY: runs in the forked child before exec, where only async-signal-safe calls are
        // allowed: `prctl` and `getppid` are plain system calls, and nothing is allocated.
        unsafe {
            cmd.pre_exec(move || {
                rustix::process::set_parent_process_death_signal(Some(Signal::TERM))?;
                // assay may have died before the line above took effect.
                if rustix::process::getppid() != Some(parent) {
                    return Err(std::io::Error::other("assay exited"));
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| {
            Failure::Other(if e.kind() == std::io::ErrorKind::NotFound {
                DataError::NoGit
            } else {
                DataError::Io {
                    path: "git".into(),
                    source: e,
                }
            })
        })?;
        let stdout = child.stdout.take().map(|mut out| {
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = out.read_to_string(&mut text);
                text
            })
        });
        let (tx, rx) = mpsc::channel::<String>();
        let reader = child.stderr.take().map(|err| {
            std::thread::spawn(move || {
                for line in progress_lines(err) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            })
        });
        let mut tail: Vec<String> = Vec::new();
        loop {
            match rx.recv_timeout(STALL) {
                Ok(line) => {
                    observer.output(&line);
                    // Progress lines say nothing about why it failed, and would push out
                    // the lines that do.
                    let line = line.trim();
                    if !line.is_empty() && !is_progress(line) {
                        tail.push(line.to_string());
                        if tail.len() > TAIL_LINES {
                            tail.remove(0);
                        }
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    stop(&mut child);
                    return Err(Failure::Other(DataError::Stalled {
                        step: format!("git {}", args.join(" ")),
                        seconds: STALL.as_secs(),
                    }));
                }
            }
        }
        let status = child.wait().map_err(|source| {
            Failure::Other(DataError::Io {
                path: "git".into(),
                source,
            })
        })?;
        if let Some(reader) = reader {
            let _ = reader.join();
        }
        let stdout = stdout
            .and_then(|handle| handle.join().ok())
            .unwrap_or_default();
        if status.success() {
            Ok(Said { stdout })
        } else {
            Err(Failure::Exit(tail.join("\n")))
        }
    }
}

/// Kills a stalled git and every helper it started (its process group, of which it is the
/// leader), then reaps git. Once they are dead nothing holds the stderr pipe or writes into
/// the checkout, so the staging directory can be removed.
fn stop(child: &mut Child) {
    let _ = rustix::process::kill_process_group(Pid::from_child(child), Signal::KILL);
    let _ = child.wait();
}

/// Whether a line is one of git's progress counters: words, a colon, a percentage and a
/// count (`Receiving objects:  45% (55/122)`, `remote: Compressing objects: 100% (3/3),
/// done.`), and not an error that happens to hold a `%` or a `:`
/// (`fatal: unable to access 'https://h/a%20b/'`).
fn is_progress(line: &str) -> bool {
    let line = line.strip_prefix("remote: ").unwrap_or(line);
    let Some((what, rest)) = line.split_once(':') else {
        return false;
    };
    let Some((percent, rest)) = rest.split_once("% (") else {
        return false;
    };
    let Some((count, _)) = rest.split_once(')') else {
        return false;
    };
    let digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let words = what.trim();
    !words.is_empty()
        && words.chars().all(|c| c.is_ascii_alphabetic() || c == ' ')
        && percent.starts_with(' ')
        && digits(percent.trim_start())
        && count
            .split_once('/')
            .is_some_and(|(done, all)| digits(done) && digits(all))
}

/// The lines of `stream`, split at `\n` and at `\r` (git redraws its progress line with `\r`,
/// and each redraw is news).
fn progress_lines(mut stream: impl Read) -> impl Iterator<Item = String> {
    let mut buf = [0u8; 4096];
    let mut pending: Vec<u8> = Vec::new();
    let mut ready: std::collections::VecDeque<String> = Default::default();
    let mut done = false;
    std::iter::from_fn(move || loop {
        if let Some(line) = ready.pop_front() {
            return Some(line);
        }
        if done {
            return None;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => {
                done = true;
                if !pending.is_empty() {
                    ready.push_back(String::from_utf8_lossy(&pending).into_owned());
                    pending.clear();
                }
            }
            Ok(n) => {
                for &b in &buf[..n] {
                    if b == b'\n' || b == b'\r' {
                        if !pending.is_empty() {
                            ready.push_back(String::from_utf8_lossy(&pending).into_owned());
                            pending.clear();
                        }
                    } else {
                        pending.push(b);
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_redraws_are_lines() {
        let text =
            b"Receiving objects:  10% (1/10)\rReceiving objects: 100% (10/10), done.\nfatal: x\n";
        let lines: Vec<String> = progress_lines(&text[..]).collect();
        assert_eq!(
            lines,
            [
                "Receiving objects:  10% (1/10)",
                "Receiving objects: 100% (10/10), done.",
                "fatal: x"
            ]
        );
        assert!(is_progress(&lines[0]));
        assert!(is_progress(&lines[1]));
        assert!(!is_progress(&lines[2]));
    }

    #[test]
    fn only_counters_are_progress() {
        assert!(is_progress(
            "remote: Compressing objects: 100% (3/3), done."
        ));
        assert!(is_progress("Updating files:  57% (67/117)"));
        assert!(!is_progress(
            "fatal: unable to access 'https://h/a%20b/': Could not resolve host: h"
        ));
        assert!(!is_progress("error: 100% sure: no"));
        assert!(!is_progress("Receiving objects: done"));
    }
}
