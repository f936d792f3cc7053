//! A command job: a program (a coding agent's CLI) run confined in the workspace, with at most
//! one way out, a loopback port relayed to a Unix socket its caller serves.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::Start;
use super::{encode_files, infra, InputFile};
use crate::collect::{is_plain_name, is_plain_relative};
use crate::config::Limits;
use crate::drive::{ending, Aftermath, End, Ending, Read};
use crate::engine::Engine;
use crate::outcome::ScriptOutcome;
use crate::protocol::job::{Control, Event, RelaySpec};
use crate::sandbox::Workspace;
use crate::seqpacket::SeqPacket;
use crate::timing::Timing;
use assay_records::Status;

/// The relay socket's name in the workspace root, outside the working directory. The job
/// process removes it once the supervisor connected, before the program starts.
const SOCKET_NAME: &str = ".assay-relay.sock";
/// How long the job process may take to bind the relay's socket once its job started.
const RELAY_CONNECT: Duration = Duration::from_secs(10);
/// Connections accepted but not yet taken by the caller.
const RELAY_BACKLOG: usize = 64;

/// A program run in its own working directory, like a shell running `argv` there.
#[derive(Debug, Clone)]
pub struct CommandJob {
    /// The program (looked up on the job's `PATH`) and its arguments.
    pub argv: Vec<String>,
    /// Files placed in the working directory first.
    pub files: Vec<InputFile>,
    /// Empty directories made in the working directory first (relative, plain).
    pub dirs: Vec<String>,
    /// Files placed under the job's home (`HOME`) first, relative and plain: the program's
    /// configuration, kept out of the working directory and its collected files.
    pub home_files: Vec<InputFile>,
    /// The working directory's name inside the workspace. Default `work`.
    pub workdir: String,
    /// `None`: the engine's default limits. `wall` bounds the whole run.
    pub limits: Option<Limits>,
    /// Extra environment variables (`PATH` among them, to find the program).
    pub env: BTreeMap<String, String>,
    /// Connections to this port on the job's loopback are handed to the caller.
    pub relay: Option<u16>,
    /// Read back the files left in the working directory. Default `true`.
    pub collect_files: bool,
}

impl CommandJob {
    /// `argv` in a working directory `work`, with the engine's limits and no relay.
    pub fn new(argv: Vec<String>) -> Self {
        CommandJob {
            argv,
            files: Vec::new(),
            dirs: Vec::new(),
            home_files: Vec::new(),
            workdir: "work".into(),
            limits: None,
            env: BTreeMap::new(),
            relay: None,
            collect_files: true,
        }
    }
}

/// The connections the program made to its relayed port, as they come.
pub struct Connections(mpsc::Receiver<TcpStream>);

impl Connections {
    /// The next connection, or `None` once the program can make no more (its job ended).
    pub async fn accept(&mut self) -> Option<TcpStream> {
        self.0.recv().await
    }
}

/// Receives the program's connections from the job process at `socket` (a host path into
/// its workspace, bound once its job started), until the job ends.
async fn relay(socket: PathBuf, connections: mpsc::Sender<TcpStream>) {
    let waited = Instant::now();
    let channel = loop {
        match SeqPacket::connect(&socket) {
            Ok(channel) => break channel,
            Err(_) if waited.elapsed() < RELAY_CONNECT => {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Err(e) => {
                tracing::warn!("connecting to the relay at {}: {e}", socket.display());
                return;
            }
        }
    };
    while let Ok(Some(received)) = channel.recv().await {
        for fd in received.fds {
            let stream = std::net::TcpStream::from(fd);
            let stream = stream
                .set_nonblocking(true)
                .and_then(|()| TcpStream::from_std(stream));
            match stream {
                Ok(stream) => {
                    if connections.send(stream).await.is_err() {
                        return;
                    }
                }
                Err(e) => tracing::warn!("a relayed connection: {e}"),
            }
        }
    }
}

impl Engine {
    /// Runs `job.argv` confined and returns how it ended, its output and the files it left.
    /// With `job.relay`, the connections the program makes to that port go to `serve`'s
    /// [`Connections`], which it gets before the program starts. `stop` ends the program early (its whole tree), with the reason it gives:
    /// status `error` with that reason, files collected as after any end.
    pub async fn run_command(
        &self,
        job: CommandJob,
        serve: impl FnOnce(Connections),
        stop: impl Future<Output = String>,
    ) -> ScriptOutcome {
        if job.argv.is_empty() {
            return infra(
                "invalid job: no program to run".into(),
                ScriptOutcome::ended,
            );
        }
        if !is_plain_name(&job.workdir) {
            let reason = format!(
                "invalid job: workdir {:?} must be one plain name",
                job.workdir
            );
            return infra(reason, ScriptOutcome::ended);
        }
        let files = job.files.iter().chain(&job.home_files);
        let paths = files.map(|f| &f.path).chain(&job.dirs);
        if let Some(bad) = paths.into_iter().find(|p| !is_plain_relative(p)) {
            let reason = format!("invalid job: input path {bad:?} must be relative and plain");
            return infra(reason, ScriptOutcome::ended);
        }
        let inner = &self.inner;
        let limits = job
            .limits
            .clone()
            .unwrap_or_else(|| inner.config.limits.clone());
        let files = encode_files(&job.files);
        let home_files = encode_files(&job.home_files);
        let (sender, receiver) = mpsc::channel(RELAY_BACKLOG);
        if job.relay.is_some() {
            serve(Connections(receiver));
        }
        // Where the job process that takes the job binds the relay's socket (a second one's
        // if the first died waiting).
        let socket: Mutex<Option<PathBuf>> = Mutex::new(None);
        let control = |base, workspace: &Workspace| {
            let relay = job.relay.map(|port| {
                *socket.lock().expect("poisoned") = Some(workspace.host_path().join(SOCKET_NAME));
                RelaySpec {
                    port,
                    socket: workspace.job_path().join(SOCKET_NAME).display().to_string(),
                }
            });
            Ok(Control::Command {
                base,
                argv: job.argv.clone(),
                files: files.clone(),
                dirs: job.dirs.clone(),
                home_files: home_files.clone(),
                relay,
            })
        };
        let served = |frame: &Event, _: &_| {
            if matches!(frame, Event::Started {}) {
                if let Some(socket) = socket.lock().expect("poisoned").take() {
                    tokio::spawn(relay(socket, sender.clone()));
                }
            }
            Read::from(matches!(
                frame,
                Event::CommandDone { .. } | Event::InternalError { .. }
            ))
        };
        let ran = inner
            .run_job(
                Some(&job.workdir),
                &job.env,
                &limits,
                &mut Timing::fixed(limits.wall),
                &Start::default(),
                control,
                served,
                stop,
            )
            .await;
        let ran = match ran {
            Ok(ran) => ran,
            Err(e) => return infra(e, ScriptOutcome::ended),
        };
        let outcome = command_verdict(&ran.end, ran.started, &ran.aftermath, &limits);
        ran.complete(outcome, job.collect_files, job.workdir, "command")
            .await
    }
}

fn command_verdict<'a>(
    end: &'a End,
    started: bool,
    aftermath: &Aftermath,
    limits: &Limits,
) -> ScriptOutcome {
    let report = |frame: &'a Event| match frame {
        Event::CommandDone {
            exit_code, signal, ..
        } => Some((*exit_code, *signal)),
        _ => None,
    };
    let (exit_code, signal) = match ending(end, aftermath, limits, started, report) {
        Ending::Reported(done) => done,
        Ending::Stopped(status, reason) => return ScriptOutcome::ended(status, reason),
        Ending::HarnessFailed(reason) => return ScriptOutcome::ended(Status::Infra, reason),
        Ending::Unreported(cause) => {
            let reason = format!("the command did not finish: {cause}");
            return ScriptOutcome::ended(Status::Error, reason);
        }
    };
    let (status, reason) = match (exit_code, signal) {
        (Some(0), _) => (Status::Pass, "exited with code 0".to_string()),
        (Some(code), _) => (Status::Error, format!("exited with code {code}")),
        (None, Some(signal)) => (Status::Error, format!("killed by signal {signal}")),
        (None, None) => (Status::Error, "ended without an exit status".to_string()),
    };
    let mut outcome = ScriptOutcome::ended(status, reason);
    outcome.exit_code = exit_code;
    outcome
}
