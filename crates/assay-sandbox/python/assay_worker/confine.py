"""Confinement of one job process, applied right after the zygote forks it and before any
untrusted code runs. Everything here happens while the process is still trusted."""

import os

from . import linux as L
from . import view

DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
PROC_SYSTEM_FILES = ("cpuinfo", "meminfo", "stat", "loadavg", "uptime", "version", "sys",
                     "filesystems", "mounts")


def _finish(cfg, read_paths, write_paths, layers):
    """The layers both modes share: no new privileges, Landlock (unless the engine was told to
    do without), seccomp."""
    L.prctl(L.PR_SET_NO_NEW_PRIVS, 1)
    layers["no_new_privs"] = True
    layers["landlock_abi"] = (L.landlock_restrict(read_paths, write_paths, DEVICES)
                              if cfg["landlock"] else 0)
    for program in cfg["seccomp"]:
        L.install_seccomp(bytes.fromhex(program))
    layers["seccomp"] = bool(cfg["seccomp"])
    return layers


def _oom_first():
    # Under memory pressure the kernel should kill jobs, never the zygote or the supervisor.
    with open("/proc/self/oom_score_adj", "w") as f:
        f.write("1000")


def namespaced(cfg, workspace):
    """The job is PID 1 of a new PID namespace (the zygote forked it that way). Give it its own
    mount, network, IPC and UTS namespaces, its workspace as /tmp, then drop to an unprivileged
    uid inside a nested user namespace with no capabilities at all."""
    network = cfg["network"]
    L.unshare(L.CLONE_NEWNS | L.CLONE_NEWIPC | L.CLONE_NEWUTS
              | (0 if network else L.CLONE_NEWNET))
    L.mount("proc", "/proc", "proc", L.MS_NOSUID | L.MS_NODEV | L.MS_NOEXEC)
    L.mount(workspace, "/tmp", None, L.MS_BIND)
    L.mount("tmpfs", "/dev/shm", "tmpfs", L.MS_NOSUID | L.MS_NODEV,
            f"size={cfg['shm_mib']}m,mode=1777")
    # A root of its own, without /ws: every other job's workspace is out of sight.
    view.own_root("/ws")
    if not network:
        L.loopback_up()
    _oom_first()
    uid, gid = cfg["job_uid"], cfg["job_gid"]
    L.unshare(L.CLONE_NEWUSER)
    L.write_id_maps(uid, 0, gid, 0)
    L.drop_capabilities()
    layers = {"user_ns": True, "mount_ns": True, "pid_ns": True, "net_ns": not network,
              "network": network, "ipc_ns": True, "private_tmp": True, "private_shm": True,
              "unprivileged": True}
    return _finish(cfg, ["/"], ["/tmp", "/dev/shm"], layers)


def _private_mounts(cfg):
    """Without user namespaces only root can mount: as root, the job gets a mount namespace of
    its own with a fresh /dev/shm (the host's holds other programs' shared memory and
    semaphores) and the harness's paths masked as in the namespaced view, and an IPC namespace
    for SysV shared memory. Whether it worked."""
    if os.geteuid() != 0:
        return False
    try:
        L.unshare(L.CLONE_NEWNS | L.CLONE_NEWIPC)
        L.mount(None, "/", None, L.MS_REC | L.MS_PRIVATE)
        L.mount("tmpfs", "/dev/shm", "tmpfs", L.MS_NOSUID | L.MS_NODEV,
                f"size={cfg['shm_mib']}m,mode=1777")
        view.mask(cfg["view"]["masks"])
    except OSError:
        return False
    return True


def degraded(cfg, workspace):
    """No user namespaces on this kernel: a new session, a private /dev/shm where the job can
    still mount, the unprivileged uid when we are root and the interpreter is readable by it
    (else root without any capability), and whatever Landlock and seccomp give.

    The zygote is non-dumpable, and so is this fork: its /proc entries belong to root. It
    becomes dumpable just long enough to set its own OOM score, and is non-dumpable again
    before its code runs, so that jobs of one uid cannot reach into each other through /proc
    (another job's working directory, memory, environment)."""
    L.prctl(L.PR_SET_DUMPABLE, 1)
    _oom_first()
    private_shm = _private_mounts(cfg)
    drop = cfg["drop_to"] if cfg["degraded_drop"] else None
    if drop:
        os.setgroups([])
        os.setresgid(drop[1], drop[1], drop[1])
        os.setresuid(drop[0], drop[0], drop[0])
    elif os.geteuid() == 0:
        # Staying root: without CAP_SYS_PTRACE it cannot read the non-dumpable supervisor's
        # /proc entries (its environment), without CAP_DAC_OVERRIDE other users' files.
        L.drop_capabilities()
    L.prctl(L.PR_SET_DUMPABLE, 0)
    layers = {"user_ns": False, "mount_ns": private_shm, "pid_ns": False, "net_ns": False,
              "network": True, "ipc_ns": private_shm, "private_tmp": False,
              "private_shm": private_shm, "unprivileged": os.geteuid() != 0}
    # Without a PID namespace, /proc would show every process of the same uid, and their
    # environments (an API key in the user's shell): only system-wide files and the job's own
    # directory are readable.
    read = list(cfg["view"]["readonly"]) + ["/sys", "/dev", f"/proc/{os.getpid()}"]
    read += [f"/proc/{name}" for name in PROC_SYSTEM_FILES]
    return _finish(cfg, read, [workspace, "/dev/shm"], layers)
