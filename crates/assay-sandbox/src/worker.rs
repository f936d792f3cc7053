//! One worker: a zygote process that pre-imports the libraries once and forks a confined job
//! process per request (the messages: `protocol::zygote`).

use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use assay_pyenv::child_env::{self, Inherit};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

use crate::protocol::zygote::{Init, Ready, Reply, Request};
use crate::protocol::{self, Rusage};
use crate::seqpacket::SeqPacket;

const SPAWN_REPLY_TIMEOUT: Duration = Duration::from_secs(60);
const STDERR_TAIL_LINES: usize = 40;

/// How the zygote reaped a job process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ExitInfo {
    /// The raw wait status.
    pub status: i32,
    pub rusage: Rusage,
}

impl ExitInfo {
    pub fn signal(&self) -> Option<i32> {
        let sig = self.status & 0x7f;
        (sig != 0 && sig != 0x7f).then_some(sig)
    }

    pub fn code(&self) -> Option<i32> {
        (self.status & 0x7f == 0).then_some((self.status >> 8) & 0xff)
    }

    pub fn cpu(&self) -> Duration {
        self.rusage.cpu()
    }

    pub fn describe(&self) -> String {
        match (self.signal(), self.code()) {
            (Some(sig), _) => format!("killed by signal {} ({sig})", signal_name(sig)),
            (None, Some(code)) => format!("exited with code {code}"),
            _ => format!("wait status {:#x}", self.status),
        }
    }
}

pub(crate) fn signal_name(sig: i32) -> &'static str {
    match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        31 => "SIGSYS",
        _ => "signal",
    }
}

/// What becomes of a job process: reaped by the zygote, or lost with it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ExitNotice {
    Exited(ExitInfo),
    WorkerDied(String),
}

/// How to start a zygote: the interpreter, the runtime on `sys.path`, the init message.
#[derive(Debug, Clone)]
pub(crate) struct WorkerParams {
    pub python: PathBuf,
    pub runtime_dir: PathBuf,
    pub env: Vec<(String, String)>,
    pub init: Init,
    pub start_timeout: Duration,
}

#[derive(Default)]
struct Pending {
    spawned: HashMap<u64, oneshot::Sender<Result<OwnedFd, String>>>,
    exited: HashMap<u64, oneshot::Sender<ExitNotice>>,
}

/// State shared with the task that reads the zygote's messages.
struct Shared {
    pending: Mutex<Pending>,
    alive: AtomicBool,
    /// Set when the worker is let go on purpose (its engine dropped): its end is no news.
    released: AtomicBool,
    stderr_tail: Mutex<VecDeque<String>>,
}

impl Shared {
    fn death_reason(&self, what: &str) -> String {
        let tail = self.stderr_tail.lock().expect("poisoned");
        if tail.is_empty() {
            what.to_string()
        } else {
            let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
            format!("{what}; its last output:\n{}", lines.join("\n"))
        }
    }

    fn fail_all(&self, reason: &str) {
        self.alive.store(false, Ordering::SeqCst);
        let mut pending = self.pending.lock().expect("poisoned");
        for (_, tx) in pending.spawned.drain() {
            let _ = tx.send(Err(reason.to_string()));
        }
        for (_, tx) in pending.exited.drain() {
            let _ = tx.send(ExitNotice::WorkerDied(reason.to_string()));
        }
    }
}

pub(crate) struct Worker {
    sock: Arc<SeqPacket>,
    shared: Arc<Shared>,
    _shim: Child,
    pub ready: Ready,
    /// The zygote's pid in our PID namespace.
    pub host_pid: i32,
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.shared.released.store(true, Ordering::SeqCst);
    }
}

impl Worker {
    pub async fn start(params: &WorkerParams) -> Result<Arc<Worker>, String> {
        let (sock, theirs) = SeqPacket::pair().map_err(|e| format!("socketpair: {e}"))?;
        let boot = format!(
            "import sys; sys.path.insert(0, {}); import assay_worker.zygote as z; z.main()",
            serde_json::to_string(&params.runtime_dir.to_string_lossy()).expect("string")
        );
        let mut cmd = Command::from(child_env::command(&params.python, Inherit::Nothing));
        // Isolated as `-I` would (no user site, no script directory on the path), but reading
        // `PYTHON*` variables: the environment is an allow-list, and `PYTHONHASHSEED` must
        // reach the worker, whose hash secret every job inherits.
        cmd.args(["-s", "-P", "-B", "-c", &boot])
            .envs(params.env.iter().map(|(k, v)| (k, v)))
            .current_dir("/")
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut shim = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", params.python.display()))?;
        drop(cmd);
        let shared = Arc::new(Shared {
            pending: Mutex::new(Pending::default()),
            alive: AtomicBool::new(true),
            released: AtomicBool::new(false),
            stderr_tail: Mutex::new(VecDeque::new()),
        });
        for stream in [
            shim.stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn AsyncRead + Send + Unpin>),
            shim.stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn AsyncRead + Send + Unpin>),
        ]
        .into_iter()
        .flatten()
        {
            tokio::spawn(keep_tail(stream, shared.clone()));
        }
        let sock = Arc::new(sock);
        sock.send(&encode(&Request::Init(params.init.clone()))?, &[])
            .await
            .map_err(|e| format!("sending the worker its configuration: {e}"))?;
        let first = tokio::time::timeout(params.start_timeout, sock.recv())
            .await
            .map_err(|_| {
                format!(
                    "the worker did not become ready within {} s",
                    params.start_timeout.as_secs()
                )
            })?
            .map_err(|e| format!("reading from the worker: {e}"))?;
        let Some(first) = first else {
            // Give the output readers a moment to collect the reason.
            tokio::time::sleep(Duration::from_millis(100)).await;
            return Err(shared.death_reason("the worker exited during start-up"));
        };
        let ready = match protocol::parse::<Reply>(&first.data) {
            Ok(Reply::Ready(ready)) => ready,
            Ok(Reply::Failed { error }) => {
                return Err(format!("the worker could not start:\n{error}"))
            }
            Ok(other) => {
                return Err(format!(
                    "the worker answered its configuration with {other:?}"
                ))
            }
            Err(refused) => return Err(format!("the worker's first message: {refused}")),
        };
        let pidfd = first
            .fds
            .into_iter()
            .next()
            .ok_or("the worker's ready message carried no pidfd")?;
        let host_pid = pid_of(&pidfd).map_err(|e| format!("reading the worker's pid: {e}"))?;
        tokio::spawn(read_messages(sock.clone(), shared.clone()));
        Ok(Arc::new(Worker {
            sock,
            shared,
            _shim: shim,
            ready,
            host_pid,
        }))
    }

    pub fn is_alive(&self) -> bool {
        self.shared.alive.load(Ordering::SeqCst)
    }

    /// The zygote's view of the filesystem, from outside (workspaces are under `ws/`).
    pub fn root(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root", self.host_pid))
    }

    /// Asks for a job process in workspace `workspace` (at `workspace_path` on the host, in
    /// degraded mode). `fds`: control (read end), stdout, stderr, results (write ends).
    /// Returns its pidfd and the notice of its end.
    pub async fn spawn(
        &self,
        id: u64,
        workspace: u64,
        workspace_path: Option<PathBuf>,
        fds: [OwnedFd; 4],
    ) -> Result<(OwnedFd, oneshot::Receiver<ExitNotice>), String> {
        let (spawned_tx, spawned_rx) = oneshot::channel();
        let (exited_tx, exited_rx) = oneshot::channel();
        {
            let mut pending = self.shared.pending.lock().expect("poisoned");
            if !self.is_alive() {
                return Err(self.shared.death_reason("the worker has died"));
            }
            pending.spawned.insert(id, spawned_tx);
            pending.exited.insert(id, exited_tx);
        }
        let message = encode(&Request::Spawn {
            id,
            workspace,
            workspace_path,
        })?;
        let borrowed: Vec<_> = fds.iter().map(|fd| fd.as_fd()).collect();
        let sent = self.sock.send(&message, &borrowed).await;
        drop(borrowed);
        drop(fds);
        if let Err(e) = sent {
            self.forget(id);
            return Err(format!("asking the worker for a job process: {e}"));
        }
        match tokio::time::timeout(SPAWN_REPLY_TIMEOUT, spawned_rx).await {
            Ok(Ok(Ok(pidfd))) => Ok((pidfd, exited_rx)),
            Ok(Ok(Err(reason))) => {
                self.forget(id);
                Err(reason)
            }
            Ok(Err(_)) => Err(self.shared.death_reason("the worker has died")),
            Err(_) => {
                self.forget(id);
                Err(format!(
                    "the worker did not fork a job process within {} s",
                    SPAWN_REPLY_TIMEOUT.as_secs()
                ))
            }
        }
    }

    fn forget(&self, id: u64) {
        let mut pending = self.shared.pending.lock().expect("poisoned");
        pending.spawned.remove(&id);
        pending.exited.remove(&id);
    }

    /// Frees a workspace (namespaced mode keeps each in a tmpfs inside the zygote's mounts).
    pub async fn release(&self, workspace: u64) {
        if self.is_alive() {
            if let Ok(message) = encode(&Request::Release { workspace }) {
                let _ = self.sock.send(&message, &[]).await;
            }
        }
    }
}

/// Dispatches the zygote's messages until its socket closes.
async fn read_messages(sock: Arc<SeqPacket>, shared: Arc<Shared>) {
    let reason = loop {
        let received = match sock.recv().await {
            Ok(Some(received)) => received,
            Ok(None) => break "the worker exited".to_string(),
            Err(e) => break format!("reading from the worker failed: {e}"),
        };
        let reply = match protocol::parse::<Reply>(&received.data) {
            Ok(reply) => reply,
            Err(refused) => break format!("the worker broke the protocol: {refused}"),
        };
        let mut pending = shared.pending.lock().expect("poisoned");
        match reply {
            Reply::Spawned { id } => {
                let Some(pidfd) = received.fds.into_iter().next() else {
                    break format!("the worker's `spawned` for job {id} carried no pidfd");
                };
                // Unknown: a request given up on (timed out) already forgot it.
                if let Some(tx) = pending.spawned.remove(&id) {
                    let _ = tx.send(Ok(pidfd));
                }
            }
            Reply::SpawnFailed { id, error } => {
                if let Some(tx) = pending.spawned.remove(&id) {
                    let _ = tx.send(Err(format!("the worker could not fork: {error}")));
                }
                pending.exited.remove(&id);
            }
            Reply::Exited { id, status, rusage } => {
                if let Some(tx) = pending.exited.remove(&id) {
                    let _ = tx.send(ExitNotice::Exited(ExitInfo { status, rusage }));
                }
            }
            Reply::Ready(_) | Reply::Failed { .. } => {
                break format!("the worker answered `init` again: {reply:?}");
            }
        }
    };
    // Give the output readers a moment to collect the zygote's last words.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let reason = shared.death_reason(&reason);
    if shared.released.load(Ordering::SeqCst) {
        tracing::debug!("{reason} (released)");
    } else {
        tracing::warn!("{reason}");
    }
    shared.fail_all(&reason);
}

async fn keep_tail(stream: Box<dyn AsyncRead + Send + Unpin>, shared: Arc<Shared>) {
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(target: "assay_sandbox::worker", "{line}");
        let mut tail = shared.stderr_tail.lock().expect("poisoned");
        if tail.len() == STDERR_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

/// A message for the zygote's socket.
fn encode(request: &Request) -> Result<Vec<u8>, String> {
    serde_json::to_vec(request).map_err(|e| format!("encoding {request:?}: {e}"))
}

/// The pid, in our PID namespace, of the process a pidfd refers to.
pub(crate) fn pid_of(pidfd: &OwnedFd) -> std::io::Result<i32> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", pidfd.as_raw_fd()))?;
    info.lines()
        .find_map(|line| line.strip_prefix("Pid:"))
        .and_then(|v| v.trim().parse().ok())
        .filter(|pid: &i32| *pid > 0)
        .ok_or_else(|| std::io::Error::other("no live Pid in the pidfd's fdinfo"))
}
