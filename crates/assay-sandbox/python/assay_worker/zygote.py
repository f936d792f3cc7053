"""The zygote: sets up the shared part of the sandbox once, imports the heavy libraries once,
then forks one confined process per job on the supervisor's request.

Started by the supervisor as ``python -s -P -B -c ...`` with the control socket
(SOCK_SEQPACKET) as stdin and a scrubbed environment. Its messages (JSON, one per datagram, file
descriptors attached), both ways: docs/worker-protocol.md.

The zygote never runs untrusted code, and exits when the supervisor's end of the socket closes.
"""

import gc
import importlib
import os
import selectors
import signal
import socket
import sys
import time
import traceback

from . import child, view, warm, wire
from . import linux as L

WS_ROOT = "/ws"
ZYGOTE_HOME = "/ws/.zygote"


def _probe_namespaces(drop_to):
    """Whether this kernel lets the (possibly dropped) sandbox uid create the namespaces the
    namespaced mode needs. Tried in a throwaway child so a refusal changes nothing here."""
    pid = os.fork()
    if pid == 0:
        try:
            if drop_to:
                os.setgroups([])
                os.setresgid(drop_to[1], drop_to[1], drop_to[1])
                os.setresuid(drop_to[0], drop_to[0], drop_to[0])
            L.unshare(L.CLONE_NEWUSER | L.CLONE_NEWNS | L.CLONE_NEWPID | L.CLONE_NEWNET
                      | L.CLONE_NEWIPC | L.CLONE_NEWUTS)
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _become_shim_parent():
    """Forks; the parent stays behind as the shim the supervisor spawned and mirrors the
    child's exit status. Returns only in the child, which is PID 1 of the new PID namespace."""
    pid = os.fork()
    if pid:
        os.closerange(0, 1 << 16)
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    # If the shim is killed, so is the zygote (and with it, as PID 1, every job). Should the
    # shim die before this line, the zygote still exits when the supervisor's socket closes.
    L.prctl(L.PR_SET_PDEATHSIG, signal.SIGKILL)


def _namespaced_bootstrap(cfg):
    drop_to = cfg["drop_to"]
    v = cfg["view"]
    points = [WS_ROOT, "/tmp"]
    root = os.geteuid() == 0
    if root:
        # Root: build the view while we can still read everything, then become the sandbox
        # uid; the view's mounts end up locked under the unprivileged user namespace.
        if not drop_to:
            raise RuntimeError("running as root needs an unprivileged uid to drop to")
        L.unshare(L.CLONE_NEWNS)
        view.build(v["readonly"], v["masks"], points)
        os.setgroups([])
        os.setresgid(drop_to[1], drop_to[1], drop_to[1])
        os.setresuid(drop_to[0], drop_to[0], drop_to[0])
        # Changing uid made us non-dumpable, which makes /proc/self root-owned; the id maps
        # below need it to be ours.
        L.prctl(L.PR_SET_DUMPABLE, 1)
    uid, gid = os.geteuid(), os.getegid()
    # With the network allowed, jobs share the host's network namespace: so must we.
    net = 0 if cfg["network"] else L.CLONE_NEWNET
    L.unshare(L.CLONE_NEWUSER | L.CLONE_NEWNS | L.CLONE_NEWPID | net | L.CLONE_NEWIPC
              | L.CLONE_NEWUTS)
    L.write_id_maps(0, uid, 0, gid)
    if not root:
        view.build(v["readonly"], v["masks"], points)
    _become_shim_parent()
    L.mount("proc", "/proc", "proc", L.MS_NOSUID | L.MS_NODEV | L.MS_NOEXEC)
    L.mount("tmpfs", WS_ROOT, "tmpfs", L.MS_NOSUID | L.MS_NODEV, "mode=755")


class Zygote:
    def __init__(self, sock, cfg):
        self.sock = sock
        self.cfg = cfg
        self.mode = None
        self.children = {}  # pid -> (job id, pidfd)
        self.selector = selectors.DefaultSelector()
        self.own_pidns = None

    def bootstrap(self):
        drop_to = self.cfg["drop_to"]
        if self.cfg["namespaces"] and _probe_namespaces(drop_to):
            _namespaced_bootstrap(self.cfg)
            self.mode = "namespaced"
            self.own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
            os.makedirs(ZYGOTE_HOME, exist_ok=True)
            home = ZYGOTE_HOME
        else:
            if self.cfg["strict"]:
                raise RuntimeError("user namespaces are unavailable and strict isolation was "
                                   "requested")
            self.mode = "degraded"
            home = self.cfg["degraded_home"]
            # Jobs may run as our own uid and see every process: none of them may read our
            # memory or /proc entries (nor, through us, anything the supervisor passed on).
            # Jobs inherit this across fork (see confine.degraded).
            L.prctl(L.PR_SET_DUMPABLE, 0)
        # Libraries that cache things (matplotlib's font list) write under these, and some
        # want a temporary directory at import (scipy.stats, sklearn).
        for name in ("HOME", "MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "TMPDIR"):
            os.environ[name] = home

    def preload(self):
        report = {}
        for name in self.cfg["preload"]:
            started = time.perf_counter()
            try:
                importlib.import_module(name)
                report[name] = {"ok": True, "seconds": time.perf_counter() - started}
            except ModuleNotFoundError as e:
                # Not installed in this environment: skipped. A missing dependency of an
                # installed module is a failure.
                missing = e.name is not None and name.split(".")[0] == e.name.split(".")[0]
                report[name] = {"ok": False, "missing": missing,
                                "error": f"{type(e).__name__}: {e}"}
            except BaseException as e:  # noqa: BLE001 - reported; the module is skipped
                report[name] = {"ok": False, "missing": False,
                                "error": f"{type(e).__name__}: {e}"}
        warmed = warm.run()
        # Forking a process with threads can deadlock the child in a lock another thread held;
        # with every thread-count variable at 1 no library should have started one.
        threads = len(os.listdir("/proc/self/task"))
        if threads != 1:
            raise RuntimeError(f"the worker has {threads} threads after preloading; "
                               "forking it would be unsafe")
        # Keep fork cheap and copy-on-write pages shared: everything allocated so far is
        # immortal for the collector, which will never touch (and so never copy) it.
        gc.collect()
        gc.freeze()
        return {"modules": report, "warm_up": warmed}

    def serve(self):
        self.selector.register(self.sock, selectors.EVENT_READ)
        while True:
            for key, _ in self.selector.select():
                if key.fileobj is self.sock:
                    message, fds = wire.recv_message(self.sock)
                    if message is None:
                        self._shutdown()
                        return
                    try:
                        self._handle(message, fds)
                    except Exception:  # noqa: BLE001 - one bad request must not end the worker
                        print(f"assay worker: {message['op']!r} failed:\n"
                              f"{traceback.format_exc()}", file=sys.stderr, flush=True)
                else:
                    self._reap(key.data)

    def _handle(self, message, fds):
        op = message["op"]
        if op == "spawn":
            self._spawn(message, fds)
        elif op == "release":
            for fd in fds:
                os.close(fd)
            self._release(message["workspace"])
        else:
            for fd in fds:
                os.close(fd)
            raise ValueError(f"unknown op {op!r}")

    def _workspace_dir(self, message):
        if self.mode == "namespaced":
            path = f"{WS_ROOT}/{int(message['workspace'])}"
            if not os.path.isdir(path):
                os.mkdir(path, 0o755)
                size = int(self.cfg["workspace_mib"])
                try:
                    L.mount("tmpfs", path, "tmpfs", L.MS_NOSUID | L.MS_NODEV,
                            f"size={size}m,mode=755")
                except OSError:
                    os.rmdir(path)  # never leave an unlimited directory for a later job
                    raise
            return path
        return message["workspace_path"]

    def _release(self, workspace):
        if self.mode != "namespaced":
            return
        path = f"{WS_ROOT}/{int(workspace)}"
        if os.path.ismount(path):
            L.umount(path)
        if os.path.isdir(path):
            os.rmdir(path)

    def _spawn(self, message, fds):
        job_id = message["id"]
        try:
            if len(fds) != 4:
                raise ValueError(f"spawn needs 4 descriptors, got {len(fds)}")
            workspace = self._workspace_dir(message)
            if self.mode == "namespaced":
                L.unshare(L.CLONE_NEWPID)
            pid = os.fork()
            if pid == 0:
                child.main(fds, self.cfg, self.mode, workspace)  # never returns
            if self.mode == "namespaced":
                # The next fork must again start from our own namespace.
                L.setns(self.own_pidns, L.CLONE_NEWPID)
        except BaseException as e:  # noqa: BLE001 - reported, the zygote keeps serving
            for fd in fds:
                os.close(fd)
            wire.send_message(self.sock, {"op": "spawn_failed", "id": job_id,
                                          "error": f"{type(e).__name__}: {e}"})
            return
        for fd in fds:
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        self.children[pid] = (job_id, pidfd)
        self.selector.register(pidfd, selectors.EVENT_READ, pid)
        wire.send_message(self.sock, {"op": "spawned", "id": job_id}, [pidfd])

    def _reap(self, pid):
        job_id, pidfd = self.children.pop(pid)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        _, status, usage = os.wait4(pid, 0)
        rusage = {"utime": usage.ru_utime, "stime": usage.ru_stime,
                  "maxrss_kib": usage.ru_maxrss}
        wire.send_message(self.sock, {"op": "exited", "id": job_id, "status": status,
                                      "rusage": rusage})

    def _shutdown(self):
        for pid in list(self.children):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def main():
    sock = socket.socket(fileno=os.dup(0))
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    message, fds = wire.recv_message(sock)
    for fd in fds:
        os.close(fd)
    if not message or message["op"] != "init":
        sys.exit("assay worker: expected an init message")
    zygote = Zygote(sock, message)
    try:
        zygote.bootstrap()
        preload = zygote.preload()
    except BaseException:  # noqa: BLE001 - the supervisor needs the reason
        wire.send_message(sock, {"op": "failed", "error": traceback.format_exc()})
        sys.exit(1)
    own = os.pidfd_open(os.getpid())
    wire.send_message(sock, {"op": "ready", "mode": zygote.mode, "preload": preload,
                             "python": sys.version.split()[0]}, [own])
    os.close(own)
    zygote.serve()
