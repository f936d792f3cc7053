"""ctypes bindings for the Linux calls the sandbox needs: namespaces, mounts, capabilities,
Landlock, seccomp. Each raises OSError (with the call's name) on failure."""

import ctypes
import fcntl
import os
import platform
import socket
import struct

_libc = ctypes.CDLL(None, use_errno=True)

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MS_RELATIME = 0x200000
MNT_DETACH = 0x2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2

_SYSCALLS = {
    "x86_64": {"pivot_root": 155},
    "aarch64": {"pivot_root": 41},
}
# Syscalls added after 4.19 share one number on every architecture.
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446


def _check(ret, what):
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return ret


def _path(p):
    return None if p is None else os.fsencode(p)


def unshare(flags):
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def setns(fd, nstype):
    _check(_libc.setns(ctypes.c_int(fd), ctypes.c_int(nstype)), "setns")


def mount(source, target, fstype, flags, data=None):
    ret = _libc.mount(_path(source), _path(target), _path(fstype), ctypes.c_ulong(flags),
                      _path(data))
    _check(ret, f"mount {source or fstype} on {target}")


def umount(target, flags=MNT_DETACH):
    _check(_libc.umount2(_path(target), ctypes.c_int(flags)), f"umount {target}")


def pivot_root(new_root, put_old):
    number = _SYSCALLS[platform.machine()]["pivot_root"]
    _check(_libc.syscall(ctypes.c_long(number), _path(new_root), _path(put_old)), "pivot_root")


def prctl(option, arg2=0, arg3=0, arg4=0, arg5=0):
    ret = _libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), ctypes.c_ulong(arg3),
                      ctypes.c_ulong(arg4), ctypes.c_ulong(arg5))
    return _check(ret, f"prctl({option})")


def write_id_maps(inside_uid, outside_uid, inside_gid, outside_gid):
    """Maps one uid and one gid into the user namespace just entered (the only mapping an
    unprivileged process may write for itself)."""
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{inside_uid} {outside_uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{inside_gid} {outside_gid} 1")


def drop_capabilities():
    """Empties the bounding, ambient, inheritable, permitted and effective sets for good."""
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for cap in range(last + 1):
        prctl(PR_CAPBSET_DROP, cap)
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = (ctypes.c_uint32 * 6)()
    _check(_libc.capset(ctypes.c_char_p(header), data), "capset")


def loopback_up():
    """Brings up ``lo`` in a fresh network namespace (tests talk to themselves over it)."""
    SIOCSIFFLAGS = 0x8914
    IFF_UP, IFF_RUNNING = 0x1, 0x40
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", IFF_UP | IFF_RUNNING))


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_seccomp(program):
    """Installs one classic-BPF seccomp program (bytes of ``struct sock_filter``s, compiled by
    the supervisor). Needs no_new_privs."""
    if len(program) % 8:
        raise ValueError("seccomp program length is not a multiple of 8")
    buf = ctypes.create_string_buffer(bytes(program), len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog))


# Landlock (uapi/linux/landlock.h).
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13
FS_TRUNCATE = 1 << 14
FS_IOCTL_DEV = 1 << 15
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV


def landlock_abi():
    """The kernel's Landlock ABI version, 0 when Landlock is unavailable."""
    ret = _libc.syscall(ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0),
                        ctypes.c_uint32(1))
    return max(ret, 0)


def _handled_fs(abi):
    handled = (1 << 13) - 1
    if abi >= 2:
        handled |= FS_REFER
    if abi >= 3:
        handled |= FS_TRUNCATE
    if abi >= 5:
        handled |= FS_IOCTL_DEV
    return handled


def landlock_restrict(read_paths, write_paths, device_paths):
    """Confines this process (and its future children) to reading ``read_paths``, writing under
    ``write_paths`` and using the device files ``device_paths``; with ABI 6+, also forbids
    signalling processes outside the domain. Returns the ABI used (0: unavailable)."""
    abi = landlock_abi()
    if abi < 1:
        return 0
    handled = _handled_fs(abi)
    scoped = SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET if abi >= 6 else 0
    if abi >= 6:
        attr = struct.pack("QQQ", handled, 0, scoped)
    else:
        attr = struct.pack("Q", handled)
    fd = _check(_libc.syscall(ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET), ctypes.c_char_p(attr),
                              ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)),
                "landlock_create_ruleset")
    try:
        read = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
        write = handled & ~(FS_MAKE_CHAR | FS_MAKE_BLOCK)
        device = FS_READ_FILE | FS_WRITE_FILE | (handled & (FS_TRUNCATE | FS_IOCTL_DEV))
        rules = [(p, read) for p in read_paths]
        rules += [(p, write) for p in write_paths]
        rules += [(p, device) for p in device_paths]
        for path, access in rules:
            try:
                target = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            try:
                if not os.path.isdir(path):
                    access &= _FILE_RIGHTS
                access &= handled
                rule = struct.pack("=Qi", access, target)
                _check(_libc.syscall(ctypes.c_long(SYS_LANDLOCK_ADD_RULE), ctypes.c_int(fd),
                                     ctypes.c_int(1), ctypes.c_char_p(rule), ctypes.c_uint32(0)),
                       f"landlock_add_rule {path}")
            finally:
                os.close(target)
        _check(_libc.syscall(ctypes.c_long(SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_int(fd),
                             ctypes.c_uint32(0)), "landlock_restrict_self")
    finally:
        os.close(fd)
    return abi
