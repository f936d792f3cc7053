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

/// Runs `cmd` to completion or until `timeout` (then kills it), streaming both output streams
/// line by line to `on_line` and collecting them.
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
    let readers = [
        pump(
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            true,
            tx.clone(),
        ),
        pump(
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            false,
            tx,
        ),
    ];
    let deadline = Instant::now() + timeout;
    let (mut stdout, mut stderr) = (String::new(), String::new());
    let status = loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok((is_stdout, line)) => {
                on_line(&line);
                let buf = if is_stdout { &mut stdout } else { &mut stderr };
                buf.push_str(&line);
                buf.push('\n');
            }
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
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no result after {} s; stopped it", timeout.as_secs()),
            ));
        }
    };
    for reader in readers.into_iter().flatten() {
        let _ = reader.join();
    }
    for (is_stdout, line) in rx.try_iter() {
        on_line(&line);
        let buf = if is_stdout { &mut stdout } else { &mut stderr };
        buf.push_str(&line);
        buf.push('\n');
    }
    Ok(Finished {
        success: status.success(),
        status,
        stdout,
        stderr,
    })
}

fn pump(
    stream: Option<Box<dyn Read + Send>>,
    is_stdout: bool,
    tx: mpsc::Sender<(bool, String)>,
) -> Option<std::thread::JoinHandle<()>> {
    let stream = stream?;
    Some(std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(|l| l.ok()) {
            if tx.send((is_stdout, line)).is_err() {
                break;
            }
        }
    }))
}
