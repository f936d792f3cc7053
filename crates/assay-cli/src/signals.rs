//! What a command does when it is interrupted while it runs a model server of its own.
//!
//! Without one, an interrupt ends assay at once, as it always did: every run resumes from its
//! journals. With a model server (`--serve`) that would leave the server behind, in a process
//! group of its own that the terminal's Ctrl-C does not reach. So such a command listens for
//! SIGINT, SIGTERM and SIGHUP, and on one drops the run, which stops the server's whole group,
//! then exits as a shell reports a signal (128 + its number).

use std::future::Future;

use anyhow::Result;
use tokio::signal::unix::{signal, SignalKind};

/// Runs `command`; when `serving`, an interrupt ends it early, the server stopped on the way,
/// with the exit code for that signal.
pub async fn or_interrupted(
    serving: bool,
    command: impl Future<Output = Result<i32>>,
) -> Result<i32> {
    if !serving {
        return command.await;
    }
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut command = Box::pin(command);
    let (name, number) = tokio::select! {
        result = &mut command => return result,
        _ = int.recv() => ("SIGINT", 2),
        _ = term.recv() => ("SIGTERM", 15),
        _ = hup.recv() => ("SIGHUP", 1),
    };
    // A server finishing the answers it is writing may take its time (bounded) to stop.
    eprintln!("assay: {name}: stopping the model server");
    drop(command);
    eprintln!("assay: stopped; the same command resumes where this run stopped");
    Ok(128 + number)
}
