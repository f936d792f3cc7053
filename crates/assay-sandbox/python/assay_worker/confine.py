"""Confinement of one job process, applied right after the zygote forks it and before any
untrusted code runs. Everything here happens while the process is still trusted."""

import os

from . import linux as L

DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
PROC_SYSTEM_FILES = ("cpuinfo", "meminfo", "stat", "loadavg", "uptime", "version", "sys",
                     "filesystems", "mounts")


def _finish(cfg, read_paths, write_paths, layers):
    """The layers both modes share: no new privileges, Landlock, seccomp."""
    L.prctl(L.PR_SET_NO_NEW_PRIVS, 1)
    layers["no_new_privs"] = True
    layers["landlock_abi"] = L.landlock_restrict(read_paths, write_paths, DEVICES)
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
    network = bool(cfg.get("network"))
    L.unshare(L.CLONE_NEWNS | L.CLONE_NEWIPC | L.CLONE_NEWUTS
              | (0 if network else L.CLONE_NEWNET))
    L.mount("proc", "/proc", "proc", L.MS_NOSUID | L.MS_NODEV | L.MS_NOEXEC)
    L.mount(workspace, "/tmp", None, L.MS_BIND)
    # Hide every other job's workspace.
    L.mount("tmpfs", "/ws", "tmpfs", L.MS_RDONLY | L.MS_NOSUID | L.MS_NODEV, "size=4k,mode=555")
    L.mount("tmpfs", "/dev/shm", "tmpfs", L.MS_NOSUID | L.MS_NODEV,
            f"size={cfg['shm_mib']}m,mode=1777")
    if not network:
        L.loopback_up()
    _oom_first()
    uid, gid = cfg["job_uid"], cfg["job_gid"]
    L.unshare(L.CLONE_NEWUSER)
    L.write_id_maps(uid, 0, gid, 0)
    L.drop_capabilities()
    layers = {"user_ns": True, "mount_ns": True, "pid_ns": True, "net_ns": not network,
              "network": network, "ipc_ns": True, "private_tmp": True, "unprivileged": True}
    return _finish(cfg, ["/"], ["/tmp", "/dev/shm"], layers)


def degraded(cfg, workspace):
    """No user namespaces on this kernel: a new session, the unprivileged uid when we are root
    and the interpreter is readable by it, and whatever Landlock and seccomp give."""
    _oom_first()
    drop = cfg.get("drop_to") if cfg.get("degraded_drop") else None
    if drop:
        os.setgroups([])
        os.setresgid(drop[1], drop[1], drop[1])
        os.setresuid(drop[0], drop[0], drop[0])
    layers = {"user_ns": False, "mount_ns": False, "pid_ns": False, "net_ns": False,
              "network": True, "ipc_ns": False, "private_tmp": False,
              "unprivileged": os.geteuid() != 0}
    # Without a PID namespace, /proc would show every process of the same uid, and their
    # environments (an API key in the user's shell): only system-wide files and the job's own
    # directory are readable.
    read = list(cfg["view"]["readonly"]) + ["/sys", "/dev", f"/proc/{os.getpid()}"]
    read += [f"/proc/{name}" for name in PROC_SYSTEM_FILES]
    return _finish(cfg, read, [workspace, "/dev/shm"], layers)
