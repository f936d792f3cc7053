//! Knowing that a job is hung for good: every thread of it asleep, with no timeout, on
//! something only another thread of the job could bring, while none of them runs.
//!
//! Such a job never ends by itself, so waiting out its test's budget gains nothing: the
//! verdict (`timeout`) is the one it would get at the official 240 s. BigCodeBench/1040's hung
//! samples are the case in point: the server thread sits in `select` without a timeout while
//! the test joins it, and the test's waiting budget (twice the reference's 10 s test) held runs
//! for 20 s.
//!
//! The proof, read from `/proc` by the supervisor:
//! * every live thread of the job is asleep (state `S`) in a system call that waits with no
//!   timeout: a futex wait, `select`/`poll`/`epoll` with none, `wait4`/`waitid`, `pause` and
//!   the like, or a blocking read or `accept` on a pipe or socket;
//! * nothing outside the job can end those waits: the job has a network of its own (loopback
//!   only), its own IPC namespace, `/dev/shm` and `/tmp`, and the supervisor writes nothing to a
//!   unittest job once it runs. Timers could: a job with a POSIX timer, a handler for
//!   `SIGALRM` (`signal.alarm`) or that signal blocked, a descriptor other than pipes, sockets,
//!   epoll sets, eventfds and plain files (a timerfd, a signalfd, an inotify on files the host
//!   may change), or a TCP connection with a kernel timer that could still move it (connecting,
//!   data unacknowledged) is never called hung;
//! * two readings at least [`CONFIRM`] apart find the same threads in the same calls, having
//!   switched context not once: no thread woke in between (a thread that wakes and sleeps again
//!   counts a switch), so at one instant all slept at once with no one left to wake them.
//!
//! Anything unreadable or unknown (another system call, a thread stopped or running, a
//! `/proc` file the kernel refuses) means "not known to be hung", and the test's own budgets
//! decide as before. Two wakes this cannot see: a socket given a receive timeout
//! (`SO_RCVTIMEO`), and an alarm left to its default action (a process that sets
//! `signal.alarm` without a handler dies of it). No BigCodeBench task or official sample
//! does either.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use assay_records::Layers;

use crate::meter::stat_after_command;

/// How long the job must be seen hung before it is called so.
pub(crate) const CONFIRM: Duration = Duration::from_secs(1);

/// `SIGALRM`'s bit in `/proc/<pid>/status` signal masks.
const SIGALRM_BIT: u64 = 1 << (libc::SIGALRM - 1);

/// Watches one job for the moment it is hung for good.
pub(crate) struct Watch {
    /// The first of the readings, all alike, that found the job hung: when, and what.
    since: Option<(Instant, Vec<Asleep>)>,
}

impl Watch {
    /// A watch for a job confined as `layers` says, or `None` when something outside the job
    /// could wake it (the host's network, shared IPC or `/dev/shm`).
    pub fn new(layers: &Layers) -> Option<Watch> {
        // Seccomp keeps out io_uring, whose timeouts /proc does not show.
        let closed = layers.seccomp
            && layers.pid_ns
            && layers.net_ns
            && !layers.network
            && layers.ipc_ns
            && layers.private_shm
            && layers.private_tmp;
        closed.then_some(Watch { since: None })
    }

    /// Forgets what earlier readings found (a thread of the job was seen runnable).
    pub fn forget(&mut self) {
        self.since = None;
    }

    /// Reads the job's `threads` now; says whether it has been hung for good for at least
    /// [`CONFIRM`].
    pub fn hung(&mut self, mut threads: Vec<i32>) -> bool {
        // In one order, so that two readings of the same threads compare equal.
        threads.sort_unstable();
        let Some(now) = read(&threads) else {
            self.since = None;
            return false;
        };
        match &self.since {
            Some((since, then)) if *then == now => since.elapsed() >= CONFIRM,
            _ => {
                self.since = Some((Instant::now(), now));
                false
            }
        }
    }
}

/// One thread asleep in a wait with no timeout.
#[derive(Debug, PartialEq, Eq)]
struct Asleep {
    tid: i32,
    /// The `/proc/<tid>/syscall` line: the call and its arguments.
    call: String,
    /// Voluntary and involuntary context switches so far.
    switches: u64,
}

/// Every live thread of `threads` asleep in a wait with no timeout, or `None` when one is not
/// (or cannot be read).
fn read(threads: &[i32]) -> Option<Vec<Asleep>> {
    let mut asleep = Vec::with_capacity(threads.len());
    let mut processes = BTreeSet::new();
    for &tid in threads {
        let state = stat_after_command(&format!("/proc/{tid}/stat"))?;
        match state.chars().next()? {
            'S' => {}
            // An exited thread: it will wake no one.
            'Z' | 'X' => continue,
            _ => return None,
        }
        // The call first: the kernel reads it only while the thread is off its CPU, so the
        // switches counted after it, unchanged at the next reading, prove the thread slept
        // all the while between.
        let call = std::fs::read_to_string(format!("/proc/{tid}/syscall")).ok()?;
        if !waits_forever(&call, |fd| fd_kind(tid, fd))? {
            return None;
        }
        let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .map(str::trim)
        };
        // A SIGALRM handled, or blocked to be taken by sigwait or a signalfd: an alarm may
        // be set, which /proc does not show.
        for mask in ["SigCgt", "SigBlk"] {
            if u64::from_str_radix(field(mask)?, 16).ok()? & SIGALRM_BIT != 0 {
                return None;
            }
        }
        let switches = field("voluntary_ctxt_switches")?.parse::<u64>().ok()?
            + field("nonvoluntary_ctxt_switches")?.parse::<u64>().ok()?;
        processes.insert(field("Tgid")?.parse::<i32>().ok()?);
        asleep.push(Asleep {
            tid,
            call,
            switches,
        });
    }
    // No thread at all is no job to call hung.
    let quiet = |&pid: &i32| timerless(pid) && quiet_fds(pid) && quiet_tcp(pid);
    if asleep.is_empty() || !processes.iter().all(quiet) {
        return None;
    }
    Some(asleep)
}

/// Whether process `pid` has no POSIX timer.
fn timerless(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/timers")).is_ok_and(|t| t.trim().is_empty())
}

/// Whether every descriptor of process `pid` is one only the job can make ready: a pipe, a
/// socket, an epoll set, an eventfd or pidfd, `/dev/null` and the like, or a file outside
/// `/proc`, `/sys` and `/dev`. Not a timerfd, a signalfd, an inotify watching files the
/// host may change, a pressure trigger...
fn quiet_fds(pid: i32) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().all(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|target| {
            let target = target.to_string_lossy();
            let kind = |prefix: &str| target.starts_with(prefix);
            kind("pipe:")
                || kind("socket:")
                || matches!(
                    &*target,
                    "anon_inode:[eventpoll]"
                        | "anon_inode:[eventfd]"
                        | "anon_inode:[pidfd]"
                        | "/dev/null"
                        | "/dev/zero"
                        | "/dev/random"
                        | "/dev/urandom"
                )
                || (kind("/") && !kind("/proc/") && !kind("/sys/") && !kind("/dev/"))
        })
    })
}

/// Whether no TCP connection of process `pid`'s network could still move by a timer of the
/// kernel's own: none connecting (`SYN_SENT`, `SYN_RECV`), none with data unacknowledged or a
/// retransmit or window-probe timer running (`/proc/<pid>/net/tcp`, `tcp6`).
fn quiet_tcp(pid: i32) -> bool {
    ["tcp", "tcp6"].iter().all(|table| {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) else {
            return false;
        };
        text.lines().skip(1).all(|row| {
            // sl local rem st tx_queue:rx_queue tr:when retrnsmt ...
            let cols: Vec<&str> = row.split_whitespace().collect();
            let (Some(state), Some(queues), Some(timer)) = (cols.get(3), cols.get(4), cols.get(5))
            else {
                return false;
            };
            let tx_queue = queues.split(':').next().unwrap_or("1");
            let timer = timer.split(':').next().unwrap_or("1");
            !matches!(*state, "02" | "03")
                && u64::from_str_radix(tx_queue, 16) == Ok(0)
                && !matches!(timer, "01" | "04")
        })
    })
}

/// What descriptor `fd` of thread `tid` is: `pipe:[...]`, `socket:[...]`, a path...
fn fd_kind(tid: i32, fd: u64) -> Option<String> {
    let target = std::fs::read_link(format!("/proc/{tid}/fd/{fd}")).ok()?;
    Some(target.to_string_lossy().into_owned())
}

/// Whether a `/proc/<tid>/syscall` line (`nr arg1 .. arg6 sp pc`, hex arguments) is a wait
/// that has no timeout and that only another thread of the job could end. `None` when the
/// line is not a system call's (a running thread's `running`, or `-1 sp pc`).
fn waits_forever(line: &str, fd_kind: impl Fn(u64) -> Option<String>) -> Option<bool> {
    let mut words = line.split_whitespace();
    let nr: libc::c_long = words.next()?.parse().ok()?;
    let args: Vec<u64> = words
        .take(6)
        .map(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
        .collect::<Option<_>>()?;
    if nr < 0 || args.len() < 6 {
        return None;
    }
    let no_timeout = |i: usize| args[i] == 0;
    let negative = |i: usize| (args[i] as i32) < 0;
    let on_pipe_or_socket = || {
        fd_kind(args[0])
            .is_some_and(|kind| kind.starts_with("pipe:") || kind.starts_with("socket:"))
    };
    Some(match nr {
        libc::SYS_futex => {
            // The command without its private and clock flags; only plain waits.
            let cmd = args[1] as i32 & !(libc::FUTEX_PRIVATE_FLAG | libc::FUTEX_CLOCK_REALTIME);
            (cmd == libc::FUTEX_WAIT || cmd == libc::FUTEX_WAIT_BITSET) && no_timeout(3)
        }
        libc::SYS_pselect6 => no_timeout(4),
        libc::SYS_ppoll => no_timeout(2),
        libc::SYS_epoll_pwait => negative(3),
        libc::SYS_epoll_pwait2 => no_timeout(3),
        libc::SYS_rt_sigtimedwait => no_timeout(2),
        // Blocked, so without WNOHANG: waiting for a child, which is in the job.
        libc::SYS_wait4 | libc::SYS_waitid | libc::SYS_rt_sigsuspend => true,
        libc::SYS_read
        | libc::SYS_readv
        | libc::SYS_recvfrom
        | libc::SYS_recvmsg
        | libc::SYS_accept
        | libc::SYS_accept4 => on_pipe_or_socket(),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_select => no_timeout(4),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_poll => negative(2),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_epoll_wait => negative(3),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_pause => true,
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(nr: libc::c_long, args: [u64; 6]) -> String {
        let args: Vec<String> = args.iter().map(|a| format!("{a:#x}")).collect();
        format!("{nr} {} 0x7ffd68b35bd8 0x7fb0486f1bd3\n", args.join(" "))
    }

    fn forever(nr: libc::c_long, args: [u64; 6]) -> Option<bool> {
        waits_forever(&line(nr, args), |fd| {
            Some(if fd == 5 { "socket:[123]" } else { "/tmp/file" }.into())
        })
    }

    #[test]
    fn waits_without_a_timeout_are_told_from_bounded_ones() {
        let cases: [(&str, libc::c_long, [u64; 6], bool); 12] = [
            // CPython joining a thread: FUTEX_WAIT_BITSET | PRIVATE | CLOCK_REALTIME.
            (
                "join",
                libc::SYS_futex,
                [0x7f00, 0x189, 0, 0, 0, 0xffff_ffff],
                true,
            ),
            (
                "the GIL's timed wait",
                libc::SYS_futex,
                [0x7f00, 0x189, 0, 0x7ffd, 0, 0],
                false,
            ),
            ("a wake", libc::SYS_futex, [0x7f00, 0x81, 1, 0, 0, 0], false),
            (
                "select, as glibc makes it",
                libc::SYS_pselect6,
                [6, 0x7f, 0, 0, 0, 0],
                true,
            ),
            (
                "select with a timeout",
                libc::SYS_pselect6,
                [6, 0x7f, 0, 0, 0x7ffd, 0],
                false,
            ),
            (
                "epoll, -1",
                libc::SYS_epoll_pwait,
                [4, 0x7f, 3, 0xffff_ffff, 0, 8],
                true,
            ),
            (
                "epoll, 500 ms",
                libc::SYS_epoll_pwait,
                [4, 0x7f, 3, 500, 0, 8],
                false,
            ),
            ("ppoll", libc::SYS_ppoll, [0x7f, 1, 0, 0, 8, 0], true),
            // A socket blocks until a peer in the job writes; a file never waits on one.
            (
                "a socket read",
                libc::SYS_recvfrom,
                [5, 0x7f, 1024, 0, 0, 0],
                true,
            ),
            (
                "a file read",
                libc::SYS_read,
                [7, 0x7f, 1024, 0, 0, 0],
                false,
            ),
            (
                "a sleep",
                libc::SYS_clock_nanosleep,
                [0, 0, 0x7f, 0, 0, 0],
                false,
            ),
            ("restarting", libc::SYS_restart_syscall, [0; 6], false),
        ];
        for (what, nr, args, expected) in cases {
            assert_eq!(forever(nr, args), Some(expected), "{what}");
        }
        // Not in a system call.
        assert_eq!(waits_forever("running\n", |_| None), None);
        assert_eq!(waits_forever("-1 0x7ffd 0x7fb0\n", |_| None), None);
    }

    /// Polls `pid` until `done` holds for its reading, for up to 5 s.
    fn settles(pid: u32, done: impl Fn(Option<Vec<Asleep>>) -> bool) -> bool {
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if done(read(&[pid as i32])) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[test]
    fn a_process_blocked_on_a_pipe_is_asleep_for_good_and_a_sleeping_one_is_not() {
        // Real processes, read from /proc as a job's are. (A test's own children: nothing of
        // assay's environment to keep from them.)
        #[allow(clippy::disallowed_methods)]
        let mut cat = std::process::Command::new("cat")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        #[allow(clippy::disallowed_methods)]
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let blocked = settles(cat.id(), |r| {
            r.is_some_and(|threads| {
                threads.len() == 1 && threads[0].call.starts_with(&format!("{} ", libc::SYS_read))
            })
        });
        // Asleep, and asleep in a wait that ends by itself: never hung.
        let asleep = |pid: u32| {
            stat_after_command(&format!("/proc/{pid}/stat")).is_some_and(|s| s.starts_with('S'))
        };
        let sleeping = settles(sleeper.id(), |r| r.is_none() && asleep(sleeper.id()));
        let _ = (cat.kill(), sleeper.kill(), cat.wait(), sleeper.wait());
        assert!(
            blocked,
            "cat reading its stdin was not seen blocked for good"
        );
        assert!(sleeping, "sleep was not seen asleep");
    }
}
