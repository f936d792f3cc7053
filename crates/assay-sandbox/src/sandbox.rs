//! One confined job process, as the supervisor holds it: its pipes, its pidfd, the notice of its
//! end, its cgroup and its workspace.

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustix::fs::OFlags;
use rustix::pipe::{pipe_with, PipeFlags};
use rustix::process::{pidfd_send_signal, Signal};
use tokio::net::unix::pipe;
use tokio::sync::oneshot;

use crate::cgroup::JobCgroup;
use crate::frames::{write_frame, FrameReader};
use crate::meter::CpuMeter;
use crate::protocol::expect::Expect;
use crate::protocol::job::{Control, Event};
use crate::protocol::{self, Refused};
use crate::worker::{pid_of, ExitNotice, Worker};
use assay_records::Layers;

const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// Results a job may send: one frame per test plus a summary, tracebacks capped at 64 KiB.
const MAX_FRAME: usize = 32 << 20;
const MAX_RESULTS: usize = 256 << 20;

/// A job's private directory, freed when the last holder lets go: a tmpfs inside the worker's
/// mount namespace, or a host directory when there are no mount namespaces.
pub(crate) struct Workspace {
    pub id: u64,
    worker: Arc<Worker>,
    /// Set in degraded mode: the host directory itself.
    host_dir: Option<PathBuf>,
}

impl Workspace {
    pub fn new(id: u64, worker: Arc<Worker>, host_dir: Option<PathBuf>) -> Self {
        Workspace {
            id,
            worker,
            host_dir,
        }
    }

    /// The workspace root as the supervisor can reach it.
    pub fn host_path(&self) -> PathBuf {
        match &self.host_dir {
            Some(dir) => dir.clone(),
            None => self.worker.root().join("ws").join(self.id.to_string()),
        }
    }

    /// The worker whose mount namespace holds it.
    pub fn worker(&self) -> &Arc<Worker> {
        &self.worker
    }

    /// Whether the workspace still exists (a worker's workspaces die with it).
    pub fn alive(&self) -> bool {
        self.host_dir.is_some() || self.worker.is_alive()
    }

    /// The workspace root as the job sees it.
    pub fn job_path(&self) -> PathBuf {
        match &self.host_dir {
            Some(dir) => dir.clone(),
            None => PathBuf::from("/tmp"),
        }
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let handle = tokio::runtime::Handle::try_current();
        match (self.host_dir.take(), handle) {
            (Some(dir), Ok(handle)) => {
                handle.spawn_blocking(move || std::fs::remove_dir_all(dir));
            }
            (Some(dir), Err(_)) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            (None, Ok(handle)) => {
                let worker = self.worker.clone();
                let id = self.id;
                handle.spawn(async move { worker.release(id).await });
            }
            // No runtime left: the worker is going away, and its workspaces with it.
            (None, Err(_)) => {}
        }
    }
}

pub(crate) struct Sandbox {
    pub workspace: Arc<Workspace>,
    pub worker: Arc<Worker>,
    pidfd: Arc<OwnedFd>,
    pub host_pid: i32,
    ctl: Option<pipe::Sender>,
    pub out: pipe::Receiver,
    pub err: pipe::Receiver,
    pub results: Results,
    pub exit: ExitWatch,
    pub layers: Layers,
    pub cgroup: Option<JobCgroup>,
}

/// A job process's results pipe, read as events: each frame parsed and checked against the
/// protocol where it arrives.
pub(crate) struct Results {
    frames: FrameReader<pipe::Receiver>,
    /// Where the job is in the protocol: what may arrive next.
    expect: Expect,
}

impl Results {
    /// The next event, or `None` at the end of the stream. A frame that breaks the stream,
    /// does not parse, or may not come now is an error naming what arrived. Cancel-safe.
    pub async fn next(&mut self) -> Result<Option<Event>, String> {
        let Some(body) = self.frames.next().await.map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        let event: Event = protocol::parse(&body).map_err(|e| e.to_string())?;
        self.expect
            .admit(&event)
            .map_err(|why| Refused::new(why, &body).to_string())?;
        Ok(Some(event))
    }

    /// Whether the job's untrusted code has started (its `started` frame came).
    pub fn code_started(&self) -> bool {
        self.expect.code_started()
    }

    /// Starts the stream's size budget again (a session's is per cell).
    pub fn reset_budget(&mut self) {
        self.frames.reset_budget();
    }
}

/// A way to signal a job process that outlives borrows of its [`Sandbox`].
#[derive(Clone)]
pub(crate) struct Signaller(Arc<OwnedFd>);

impl Signaller {
    pub fn send(&self, signal: Signal) -> bool {
        pidfd_send_signal(&*self.0, signal).is_ok()
    }
}

fn nonblocking(fd: &OwnedFd) -> std::io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(fd)?;
    rustix::fs::fcntl_setfl(fd, flags | OFlags::NONBLOCK)?;
    Ok(())
}

impl Sandbox {
    /// A meter of the CPU time the job's process tree uses: its cgroup's, or its live
    /// processes' from `/proc` without one.
    pub fn cpu_meter(&self) -> CpuMeter {
        self.cgroup
            .as_ref()
            .and_then(|c| c.cpu_meter())
            .unwrap_or(CpuMeter::Tree(self.host_pid))
    }

    /// Forks a job process in `workspace`, waits for it to report its confinement, and puts
    /// it in `cgroup` when given.
    pub async fn spawn(
        id: u64,
        worker: Arc<Worker>,
        workspace: Arc<Workspace>,
        cgroup: Option<JobCgroup>,
    ) -> Result<Sandbox, String> {
        let io = |what: &str, e: std::io::Error| format!("{what}: {e}");
        let (ctl_r, ctl_w) = pipe_with(PipeFlags::CLOEXEC).map_err(|e| io("pipe", e.into()))?;
        let (out_r, out_w) = pipe_with(PipeFlags::CLOEXEC).map_err(|e| io("pipe", e.into()))?;
        let (err_r, err_w) = pipe_with(PipeFlags::CLOEXEC).map_err(|e| io("pipe", e.into()))?;
        let (res_r, res_w) = pipe_with(PipeFlags::CLOEXEC).map_err(|e| io("pipe", e.into()))?;
        for fd in [&ctl_w, &out_r, &err_r, &res_r] {
            nonblocking(fd).map_err(|e| io("fcntl", e))?;
        }
        let (pidfd, exit) = worker
            .spawn(
                id,
                workspace.id,
                workspace.host_dir.clone(),
                [ctl_r, out_w, err_w, res_w],
            )
            .await?;
        let host_pid = pid_of(&pidfd).map_err(|e| io("reading the job's pid", e))?;
        let pidfd = Arc::new(pidfd);
        let kill_on_error = |reason: String| {
            let _ = pidfd_send_signal(&*pidfd, Signal::KILL);
            reason
        };
        if let Some(cgroup) = &cgroup {
            cgroup
                .attach(host_pid)
                .map_err(|e| kill_on_error(io("joining the job's cgroup", e)))?;
        }
        let wrap = |e| kill_on_error(io("pipe", e));
        let ctl = pipe::Sender::from_owned_fd(ctl_w).map_err(wrap)?;
        let out = pipe::Receiver::from_owned_fd(out_r).map_err(wrap)?;
        let err = pipe::Receiver::from_owned_fd(err_r).map_err(wrap)?;
        let res = pipe::Receiver::from_owned_fd(res_r).map_err(wrap)?;
        let mut sandbox = Sandbox {
            workspace,
            worker,
            pidfd,
            host_pid,
            ctl: Some(ctl),
            out,
            err,
            results: Results {
                frames: FrameReader::new(res, MAX_FRAME, MAX_RESULTS),
                expect: Expect::new(),
            },
            exit: ExitWatch {
                rx: Some(exit),
                ended: None,
            },
            layers: Layers::default(),
            cgroup,
        };
        let first = tokio::time::timeout(READY_TIMEOUT, sandbox.results.next()).await;
        sandbox.layers = match first {
            Ok(Ok(Some(Event::Ready { layers }))) => layers,
            Ok(Ok(Some(Event::InternalError { error, .. }))) => {
                return Err(format!(
                    "the job process failed before reporting ready:\n{error}"
                ))
            }
            Ok(Ok(Some(Event::SetupFailed { error }))) => {
                return Err(format!(
                    "the job process could not confine itself:\n{error}"
                ))
            }
            // `expect` admits nothing else first; kept an error rather than a panic.
            Ok(Ok(Some(other))) => {
                return Err(format!("a job process began with `{}`", other.tag()))
            }
            Ok(Ok(None)) => return Err("a job process ended before reporting ready".into()),
            Ok(Err(e)) => return Err(format!("job process start-up: {e}")),
            Err(_) => {
                return Err(format!(
                    "a job process did not report ready within {} s",
                    READY_TIMEOUT.as_secs()
                ))
            }
        };
        Ok(sandbox)
    }

    /// Whether this process can still take a job (its worker lives and it has not exited).
    pub fn is_usable(&mut self) -> bool {
        self.worker.is_alive() && self.exit.pending()
    }

    /// Sends the job process a frame on its control pipe.
    pub async fn send(&mut self, control: &Control) -> std::io::Result<()> {
        let ctl = self
            .ctl
            .as_mut()
            .ok_or_else(|| std::io::Error::other("the control pipe is closed"))?;
        write_frame(ctl, control).await?;
        self.results.expect.sent(control);
        Ok(())
    }

    pub fn signaller(&self) -> Signaller {
        Signaller(self.pidfd.clone())
    }

    /// Kills the job process and its whole tree: as PID 1 of its own PID namespace it takes
    /// every descendant with it; without one, its process group and its cgroup go too.
    pub fn kill(&mut self) {
        let _ = pidfd_send_signal(&*self.pidfd, Signal::KILL);
        if !self.layers.pid_ns {
            // Its group id is its pid, which may be reused once it has been reaped.
            if self.exit.pending() {
                if let Some(pgid) = rustix::process::Pid::from_raw(self.host_pid) {
                    let _ = rustix::process::kill_process_group(pgid, Signal::KILL);
                }
            }
            if let Some(cgroup) = &self.cgroup {
                cgroup.kill_all();
            }
        }
    }

    /// The notice of the process's end, waiting at most `timeout`.
    pub async fn ended(&mut self, timeout: Duration) -> Option<ExitNotice> {
        tokio::time::timeout(timeout, self.exit.wait()).await.ok()
    }
}

/// The notice of a job process's end, as the worker will send it.
pub(crate) struct ExitWatch {
    rx: Option<oneshot::Receiver<ExitNotice>>,
    ended: Option<ExitNotice>,
}

impl ExitWatch {
    /// Still running, as far as we know.
    fn pending(&mut self) -> bool {
        match self.rx.as_mut().map(|rx| rx.try_recv()) {
            Some(Err(oneshot::error::TryRecvError::Empty)) => true,
            Some(Ok(notice)) => {
                self.rx = None;
                self.ended = Some(notice);
                false
            }
            _ => false,
        }
    }

    /// The notice, if it has already arrived.
    pub fn current(&mut self) -> Option<ExitNotice> {
        self.pending();
        self.ended.clone()
    }

    /// Waits for the notice; later calls return it again. Cancel-safe.
    pub async fn wait(&mut self) -> ExitNotice {
        if let Some(notice) = &self.ended {
            return notice.clone();
        }
        let notice = match self.rx.as_mut() {
            Some(rx) => rx
                .await
                .unwrap_or_else(|_| ExitNotice::WorkerDied("the worker has died".into())),
            None => ExitNotice::WorkerDied("the worker has died".into()),
        };
        self.rx = None;
        self.ended = Some(notice.clone());
        notice
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.kill();
    }
}
