//! The supervisor side of one running job: read results and output until a final frame, the
//! end of the results stream, the process's death or the deadline; then make sure the whole
//! tree is gone and collect what the kernel knows about it.

use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::time::Instant;

use crate::capture::Capture;
use crate::cgroup::CgroupStats;
use crate::config::Limits;
use crate::meter::CpuMeter;
use crate::outcome::Usage;
use crate::protocol::job::{Event, Stage};
use crate::protocol::Rusage;
use crate::sandbox::Sandbox;
use crate::slots::METER_TICK;
use crate::timing::{arrival, Cut, Overrun, TestClock, Timing};
use crate::worker::ExitNotice;
use assay_records::Captured;

/// How long to wait for the rest of the output once the job process is dead.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the worker may take to report a killed process as reaped.
const REAP_TIMEOUT: Duration = Duration::from_secs(10);
const READ_CHUNK: usize = 64 << 10;
/// How long results may still arrive after the process is known to be dead.
const EXIT_GRACE: Duration = Duration::from_secs(1);

/// Why the results loop stopped.
#[derive(Debug)]
pub(crate) enum End {
    /// The frame the caller was waiting for.
    Final(Event),
    /// The results stream ended (the process and everything holding the pipe are gone).
    Closed,
    /// The process ended while something else still held the results pipe.
    Exited,
    /// The deadline passed.
    Deadline,
    /// The part of the job running (a test) used up its own budget before the job's
    /// deadline.
    Budget(Overrun),
    /// The results stream broke the protocol: too large, cut short, a frame that does not
    /// parse or may not come at that point (what arrived, and why it was refused).
    Garbled(String),
    /// The caller ended the job, for the reason given (an agent's gateway budget spent).
    Stopped(String),
}

impl End {
    /// The variant's name, for logs (a final frame can be long).
    pub fn label(&self) -> &'static str {
        match self {
            End::Final(_) => "final frame",
            End::Closed => "results closed",
            End::Exited => "exited",
            End::Deadline => "deadline",
            End::Budget(Overrun::Cpu { .. }) => "CPU budget",
            End::Budget(Overrun::Waiting { .. }) => "waiting budget",
            End::Budget(Overrun::Hung { .. }) => "hung",
            End::Garbled(_) => "garbled",
            End::Stopped(_) => "stopped",
        }
    }
}

/// One captured output stream of a job.
pub(crate) struct Stream {
    capture: Capture,
    open: bool,
    buf: Vec<u8>,
}

impl Stream {
    fn new(cap: usize) -> Self {
        Stream {
            capture: Capture::new(cap),
            open: true,
            buf: vec![0; READ_CHUNK],
        }
    }

    /// Reads once from `pipe` (waiting for data); end of file or an error closes the stream.
    /// Cancel-safe.
    async fn pump(&mut self, pipe: &mut pipe::Receiver) {
        match pipe.read(&mut self.buf).await {
            Ok(0) | Err(_) => self.open = false,
            Ok(n) => self.capture.push(&self.buf[..n]),
        }
    }

    /// Reads whatever `pipe` already holds, without waiting. A direct non-blocking `read`:
    /// tokio's `try_read` trusts the reactor's readiness, which may not have caught up with
    /// bytes written just before the frame that made us look.
    fn drain_now(&mut self, pipe: &pipe::Receiver) {
        while self.open {
            match rustix::io::read(pipe, &mut self.buf[..]) {
                Ok(0) => self.open = false,
                Ok(n) => self.capture.push(&self.buf[..n]),
                Err(rustix::io::Errno::AGAIN) => break,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => self.open = false,
            }
        }
    }

    /// What was captured so far.
    pub fn take(&mut self) -> Captured {
        self.capture.take()
    }
}

/// The job's stdout and stderr as read so far.
pub(crate) struct Streams {
    pub out: Stream,
    pub err: Stream,
}

impl Streams {
    pub fn new(cap: usize) -> Self {
        Streams {
            out: Stream::new(cap),
            err: Stream::new(cap),
        }
    }

    /// Reads whatever is already in the pipes, without waiting (a session cell's output is
    /// all in the pipe by the time its answer arrives).
    pub fn drain_now(&mut self, sandbox: &Sandbox) {
        self.out.drain_now(&sandbox.out);
        self.err.drain_now(&sandbox.err);
    }
}

/// What a frame means to the job reading it.
pub(crate) enum Read {
    /// Go on reading.
    On,
    /// The frame the job was waiting for: stop.
    Done,
    /// A test starts now: its name, and the job's CPU time then as read (if the meter could).
    /// Its budget, if it has one, holds from here.
    Start(String, Option<Duration>),
    /// The test ended: back to the job's own deadline alone.
    Reset,
}

impl From<bool> for Read {
    fn from(done: bool) -> Read {
        if done {
            Read::Done
        } else {
            Read::On
        }
    }
}

impl From<Cut> for End {
    fn from(cut: Cut) -> End {
        match cut {
            Cut::Deadline => End::Deadline,
            Cut::Budget(overrun) => End::Budget(overrun),
        }
    }
}

/// Reads results and output until `on_frame` says a frame is the one awaited, or the job
/// ends, or its time (`timing`, counted from `started`) runs out: the deadline passes, or a
/// test `on_frame` started runs out of its budget. Limits that arrive meanwhile apply at once
/// (see `timing`). `on_frame` also gets the job's CPU meter, to read when a frame needs it.
pub(crate) async fn run_until<R: Into<Read>>(
    sandbox: &mut Sandbox,
    streams: &mut Streams,
    started: Instant,
    timing: &mut Timing,
    mut on_frame: impl FnMut(&Event, &CpuMeter) -> R,
) -> End {
    let meter = sandbox.cpu_meter();
    // Once the process is gone, frames it wrote may still wait in the pipe: keep reading for
    // a moment before calling it an exit.
    let mut exit_grace: Option<Instant> = None;
    let mut clock: Option<TestClock> = None;
    let mut tick = tokio::time::interval(METER_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let later = timing.later();
    let mut arriving = std::pin::pin!(async move {
        match later {
            Some(later) => arrival(later).await,
            None => std::future::pending().await,
        }
    });
    let end = loop {
        let deadline = started + timing.wall;
        // Biased, deadline first: a job flooding its output must not starve its own deadline.
        tokio::select! {
            biased;
            _ = tokio::time::sleep_until(deadline) => break End::Deadline,
            limits = &mut arriving, if timing.pending() => {
                if let Some(cut) = timing.arrived(limits, started.elapsed(), &mut clock) {
                    break cut.into();
                }
            }
            // Not once the process is gone: a test that crashed or was killed for memory did
            // not run out of time.
            _ = tick.tick(), if clock.is_some() && exit_grace.is_none() => {
                if let Some(overrun) = clock.as_mut().and_then(|c| c.tick(&meter)) {
                    break End::Budget(overrun);
                }
            }
            _ = tokio::time::sleep_until(exit_grace.unwrap_or(deadline)), if exit_grace.is_some() => {
                break End::Exited
            }
            frame = sandbox.results.next() => match frame {
                Ok(Some(frame)) => match on_frame(&frame, &meter).into() {
                    Read::On => {}
                    Read::Done => break End::Final(frame),
                    Read::Start(test, cpu) => {
                        if let Some(done) = clock.take() {
                            timing.stopped(done, started.elapsed());
                        }
                        clock = timing.clock(test, started.elapsed(), cpu, &sandbox.layers);
                        tick.reset();
                    }
                    Read::Reset => {
                        if let Some(done) = clock.take() {
                            timing.stopped(done, started.elapsed());
                        }
                    }
                },
                Ok(None) => break End::Closed,
                Err(e) => break End::Garbled(e),
            },
            _ = sandbox.exit.wait(), if exit_grace.is_none() => {
                exit_grace = Some(Instant::now() + EXIT_GRACE);
            }
            _ = streams.out.pump(&mut sandbox.out), if streams.out.open => {}
            _ = streams.err.pump(&mut sandbox.err), if streams.err.open => {}
        }
    };
    // The test running at the end counts too, should its budget still come.
    if let Some(done) = clock {
        timing.stopped(done, started.elapsed());
    }
    end
}

/// What is known once a job process is gone.
pub(crate) struct Aftermath {
    /// `None`: the worker never confirmed the process's end.
    pub notice: Option<ExitNotice>,
    pub cgroup: Option<CgroupStats>,
    /// What the job process said it used (its final frame's `rusage`): the fallback when
    /// neither a cgroup nor the reaping says more.
    pub reported: Option<Rusage>,
}

/// After a job's final frame: kill it, keep what output is already in the pipes, read the
/// cgroup, and leave the rest to a background task. Tearing down a job's namespaces costs the
/// kernel ~10 ms, which no verdict needs to wait for.
pub(crate) fn settle(mut sandbox: Sandbox, streams: &mut Streams, last: &Event) -> Aftermath {
    sandbox.kill();
    streams.drain_now(&sandbox);
    let aftermath = Aftermath {
        notice: sandbox.exit.current(),
        cgroup: sandbox.cgroup.as_ref().map(|c| c.stats()),
        reported: last.rusage(),
    };
    tokio::spawn(async move {
        // Holding the sandbox until the worker reaps the process keeps its cgroup and
        // workspace until they can really go.
        let _ = sandbox.ended(REAP_TIMEOUT).await;
    });
    aftermath
}

/// Kills the job's process tree, reads the rest of its output, and waits for the reaping.
pub(crate) async fn finish(sandbox: &mut Sandbox, streams: &mut Streams) -> Aftermath {
    sandbox.kill();
    let drain = async {
        while streams.out.open || streams.err.open {
            tokio::select! {
                _ = streams.out.pump(&mut sandbox.out), if streams.out.open => {}
                _ = streams.err.pump(&mut sandbox.err), if streams.err.open => {}
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, drain).await;
    let notice = sandbox.ended(REAP_TIMEOUT).await;
    Aftermath {
        notice,
        cgroup: sandbox.cgroup.as_ref().map(|c| c.stats()),
        reported: None,
    }
}

impl Aftermath {
    pub fn exit(&self) -> Option<&crate::worker::ExitInfo> {
        match &self.notice {
            Some(ExitNotice::Exited(info)) => Some(info),
            _ => None,
        }
    }

    pub fn worker_died(&self) -> Option<&str> {
        match &self.notice {
            Some(ExitNotice::WorkerDied(reason)) => Some(reason),
            _ => None,
        }
    }

    pub fn usage(&self, wall: Duration) -> Usage {
        let cgroup = self.cgroup.unwrap_or_default();
        let rusage = self.exit().map(|e| e.rusage).or(self.reported);
        Usage {
            wall,
            cpu: cgroup.cpu.or_else(|| rusage.map(|r| r.cpu())),
            memory_peak_bytes: cgroup
                .memory_peak
                .or_else(|| rusage.map(|r| r.maxrss_kib * 1024)),
            processes_peak: cgroup.processes_peak,
        }
    }

    /// A reason when the kernel, not the code, ended the job: out of memory, or out of CPU
    /// time. `killed_by_us`: whether the supervisor had already killed it.
    pub fn limit_hit(
        &self,
        limits: &Limits,
        killed_by_us: bool,
    ) -> Option<(crate::Status, String)> {
        if let Some(cgroup) = self.cgroup.filter(|c| c.oom_kills > 0) {
            // The counter also counts kills by the machine-wide OOM killer, which picks job
            // processes first: a job far below its own limit was a victim, not the cause.
            let peak = cgroup.memory_peak.unwrap_or(u64::MAX);
            if peak < limits.memory_bytes / 10 * 9 {
                return Some((
                    crate::Status::Infra,
                    format!(
                        "the machine ran out of memory; the kernel killed the job while it \
                         used {} of its {} MiB",
                        peak >> 20,
                        limits.memory_bytes >> 20
                    ),
                ));
            }
            return Some((
                crate::Status::Oom,
                format!(
                    "the memory limit of {} MiB was reached; the kernel killed the job",
                    limits.memory_bytes >> 20
                ),
            ));
        }
        let exit = self.exit()?;
        let cpu_limit = limits.cpu();
        let cpu_exhausted = match exit.signal() {
            Some(24) => true,
            Some(9) if !killed_by_us => {
                let used = self
                    .cgroup
                    .and_then(|c| c.cpu)
                    .unwrap_or_else(|| exit.cpu());
                used + Duration::from_millis(500) >= cpu_limit
            }
            _ => false,
        };
        cpu_exhausted.then(|| {
            (
                crate::Status::Timeout,
                format!(
                    "the CPU-time limit of {} s was reached",
                    cpu_limit.as_secs_f64()
                ),
            )
        })
    }
}

/// How a job's end reads, before its kind looks at the report: the one reading unittest jobs,
/// scripts and session cells share.
pub(crate) enum Ending<R> {
    /// The awaited report arrived, and no limit overrides it.
    Reported(R),
    /// The clock or a limit stopped the code while it ran (a machine out of memory makes
    /// that `infra`).
    Stopped(crate::Status, String),
    /// The worker died, or the job could not be prepared before the code started: the
    /// harness failed, not the code (`infra`).
    HarnessFailed(String),
    /// The process ended without its report (what the code did is unknown): why.
    Unreported(String),
}

/// Reads `end`: `report` takes a final frame that is the awaited report (a harness failure
/// frame is not); `started` says whether the untrusted code had started: until it did, only
/// the harness wrote on the results pipe, so a job that could not be prepared, or whose
/// results broke the protocol, is the harness's failure (`infra`); after, the code could have
/// written anything there (see `protocol::expect`).
pub(crate) fn ending<'a, R>(
    end: &'a End,
    aftermath: &Aftermath,
    limits: &Limits,
    started: bool,
    report: impl Fn(&'a Event) -> Option<R>,
) -> Ending<R> {
    match end {
        End::Deadline => {
            let reason = format!(
                "the wall-clock limit of {} s was reached",
                limits.wall.as_secs_f64()
            );
            return Ending::Stopped(crate::Status::Timeout, reason);
        }
        End::Budget(overrun) => {
            return Ending::Stopped(crate::Status::Timeout, overrun.reason());
        }
        End::Stopped(reason) => return Ending::Stopped(crate::Status::Error, reason.clone()),
        _ => {}
    }
    let report = match end {
        End::Final(frame) => report(frame),
        _ => None,
    };
    if report.is_none() {
        if let Some(reason) = aftermath.worker_died() {
            return Ending::HarnessFailed(format!("the worker died during the job: {reason}"));
        }
    }
    if let Some((status, reason)) = aftermath.limit_hit(limits, false) {
        if report.is_none() || status == crate::Status::Oom {
            return Ending::Stopped(status, reason);
        }
    }
    if let Some(report) = report {
        return Ending::Reported(report);
    }
    Ending::Unreported(match end {
        End::Final(Event::InternalError { stage, error }) => {
            if *stage == Stage::Prepare && !started {
                return Ending::HarnessFailed(format!("the job could not be prepared: {error}"));
            }
            format!("the harness inside the sandbox failed: {error}")
        }
        End::Final(other) => format!("it ended on `{}` without its report", other.tag()),
        End::Garbled(e) if !started => {
            return Ending::HarnessFailed(format!(
                "the job process broke the worker protocol before the code started: {e}"
            ));
        }
        End::Garbled(e) => format!("its results were garbled ({e})"),
        _ => match aftermath.exit() {
            Some(exit) => format!("the process {}", exit.describe()),
            None => "the process ended without the worker confirming how".into(),
        },
    })
}
