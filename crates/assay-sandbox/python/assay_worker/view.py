"""The filesystem the sandbox sees: a fresh tmpfs root holding read-only binds of the system
directories, the interpreter and the environment, at their original paths (a venv records
absolute paths), a minimal /dev, and nothing else. The harness's files (run directory, tests,
ground truth, the assay binary) are simply absent, or masked when they sit inside a bound tree.
"""

import os
import stat

from . import linux as L

_DEVICES = ("null", "zero", "full", "random", "urandom")


def _lock_flags(fd):
    """Mount flags a remount must keep: in a user namespace the kernel refuses to clear flags
    that a more privileged namespace set."""
    st = os.fstatvfs(fd)
    table = (
        (os.ST_NOSUID, L.MS_NOSUID),
        (os.ST_NODEV, L.MS_NODEV),
        (os.ST_NOEXEC, L.MS_NOEXEC),
        (os.ST_NOATIME, L.MS_NOATIME),
        (os.ST_NODIRATIME, L.MS_NODIRATIME),
        (os.ST_RELATIME, L.MS_RELATIME),
    )
    return sum(ms for st_flag, ms in table if st.f_flag & st_flag)


def _bind(source_fd, target):
    source = f"/proc/self/fd/{source_fd}"
    try:
        L.mount(source, target, None, L.MS_BIND)
    except OSError:
        # In a user namespace a mount with locked submounts (e.g. /sys) may only be bound
        # together with them.
        L.mount(source, target, None, L.MS_BIND | L.MS_REC)


def _readonly(target, lock_flags):
    flags = L.MS_BIND | L.MS_REMOUNT | L.MS_RDONLY | L.MS_NOSUID | lock_flags
    L.mount(None, target, None, flags)


def _covered(path, bound):
    return any(path == b or path.startswith(b.rstrip("/") + "/") for b in bound)


def mask(paths, root="", null=None):
    """Covers each of ``paths`` (under ``root``) that exists: a directory with an empty
    read-only tmpfs, a file with /dev/null."""
    for path in paths:
        target = root + path
        if not os.path.lexists(target):
            continue
        if os.path.isdir(target):
            L.mount("tmpfs", target, "tmpfs", L.MS_RDONLY | L.MS_NOSUID | L.MS_NODEV,
                    "size=4k,mode=555")
        elif null is None:
            L.mount("/dev/null", target, None, L.MS_BIND)
        else:
            _bind(null, target)


def build(readonly, masks, mountpoints):
    """Replaces this mount namespace's root with the view and makes it read-only.

    ``readonly``: absolute host paths to expose read-only (missing ones are skipped; symlinks
    such as /bin -> usr/bin are recreated as symlinks). ``masks``: paths inside those trees to
    hide. ``mountpoints``: empty directories to create for later mounts (/tmp, /ws).
    """
    L.mount(None, "/", None, L.MS_REC | L.MS_PRIVATE)
    # Open and inspect every source before covering anything: the binds are made from these
    # descriptors, so a source under /tmp stays reachable after /tmp becomes the new root.
    sources = {}  # path -> (descriptor, is a directory, mount flags to keep)
    links = {}
    for path in sorted(set(readonly) | {"/proc", "/sys"}, key=len):
        if os.path.islink(path):
            links[path] = os.readlink(path)
        elif os.path.exists(path) and not _covered(path, sources):
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            sources[path] = (fd, stat.S_ISDIR(os.stat(fd).st_mode), _lock_flags(fd))
    devices = {d: os.open(f"/dev/{d}", os.O_PATH | os.O_CLOEXEC) for d in _DEVICES
               if os.path.exists(f"/dev/{d}")}
    null = devices["null"]
    try:
        new_root = "/tmp"
        L.mount("tmpfs", new_root, "tmpfs", L.MS_NOSUID | L.MS_NODEV, "mode=755,size=4m")
        for path, (fd, is_dir, lock_flags) in sources.items():
            target = new_root + path
            if is_dir:
                os.makedirs(target, mode=0o755, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
                open(target, "w").close()
            _bind(fd, target)
            if path != "/proc":
                _readonly(target, lock_flags)
        for path, dest in links.items():
            if not _covered(path, sources):
                os.makedirs(os.path.dirname(new_root + path), mode=0o755, exist_ok=True)
                os.symlink(dest, new_root + path)
        mask([m for m in masks if _covered(m, sources)], new_root, null)
        dev = new_root + "/dev"
        os.makedirs(dev, mode=0o755, exist_ok=True)
        L.mount("tmpfs", dev, "tmpfs", L.MS_NOSUID | L.MS_NOEXEC, "mode=755,size=64k")
        for name, fd in devices.items():
            open(f"{dev}/{name}", "w").close()
            _bind(fd, f"{dev}/{name}")
        os.symlink("/proc/self/fd", f"{dev}/fd")
        for number, name in enumerate(("stdin", "stdout", "stderr")):
            os.symlink(f"/proc/self/fd/{number}", f"{dev}/{name}")
        os.mkdir(f"{dev}/shm", 0o1777)
        # Read-only once filled: where assay runs unprivileged, jobs map to the uid that owns
        # this tmpfs, and one could otherwise chmod it for every later job. The devices stay
        # usable (a device node ignores its mount's read-only flag).
        L.mount(None, dev, None, L.MS_REMOUNT | L.MS_BIND | L.MS_RDONLY | L.MS_NOSUID
                | L.MS_NOEXEC)
        for point in mountpoints:
            os.makedirs(new_root + point, mode=0o755, exist_ok=True)
        os.chdir(new_root)
        os.mkdir(".old")
        L.pivot_root(".", ".old")
        os.chdir("/")
        L.umount("/.old")
        os.rmdir("/.old")
        L.mount(None, "/", None, L.MS_REMOUNT | L.MS_RDONLY | L.MS_NOSUID | L.MS_NODEV)
    finally:
        for fd in [fd for fd, _, _ in sources.values()] + list(devices.values()):
            os.close(fd)


def own_root(scratch):
    """Moves this job into a root directory of its own that nobody may write, the view's mounts
    bound inside it (all but ``scratch``, which becomes the new root).

    The worker's root is one read-only tmpfs for all its jobs, so a job creating ``/target``
    got ``EROFS``, where the official image, which runs code as a non-root user, gives
    ``EACCES`` (``PermissionError``): code that catches one and not the other behaves
    differently. This root is writable as a mount but mode 0555, and the job has no
    capability, so creating anything in it is refused with ``EACCES``. The job owns it (it is
    its own tmpfs), so code could chmod it and write there: only into its own root, which
    dies with it. The system directories stay read-only binds (``EROFS`` below them).
    """
    L.mount("tmpfs", scratch, "tmpfs", L.MS_NOSUID | L.MS_NODEV | L.MS_NOEXEC,
            "size=64k,nr_inodes=64,mode=755")
    skip = scratch.strip("/")
    for name in os.listdir("/"):
        source, target = "/" + name, f"{scratch}/{name}"
        if name == skip:
            continue
        if os.path.islink(source):
            os.symlink(os.readlink(source), target)
        elif os.path.isdir(source):
            os.mkdir(target, 0o555)
            L.mount(source, target, None, L.MS_BIND | L.MS_REC)
        else:
            open(target, "w").close()
            L.mount(source, target, None, L.MS_BIND)
    os.mkdir(f"{scratch}/.old")
    os.chdir(scratch)
    L.pivot_root(".", ".old")
    os.chdir("/")
    L.umount("/.old")
    os.rmdir("/.old")
    os.chmod("/", 0o555)

