"""Framing for the job pipes and the zygote socket, and the messages the worker is sent.

Job pipes carry frames: a 4-byte little-endian length, then that many bytes of UTF-8 JSON. The
zygote socket is SOCK_SEQPACKET, so each datagram is one JSON message, with file descriptors
attached as SCM_RIGHTS. Every message, both ways: docs/worker-protocol.md.
"""

import json
import os
import socket
import struct

# The job process's fixed descriptors for the control (in) and results (out) pipes.
CTL, RES = 3, 4
HEADER = struct.Struct("<I")
MAX_FRAME = 64 << 20
MAX_MESSAGE = 1 << 16
MAX_FDS = 8

# Every message the worker is sent, by its `op`: (the fields it must carry, those it may). One
# with another `op` or other fields is refused where it arrives, before anything acts on it, so
# that a field renamed on one side is an error, not a default. (The protocol's test reads this
# table: it must match docs/worker-protocol.md.)
_JOB = {"env", "cwd", "make_dirs", "limits", "conditions"}
RECEIVED = {
    "init": ({"namespaces", "landlock", "network", "strict", "drop_to", "degraded_drop",
              "job_uid", "job_gid", "view", "preload", "seccomp", "workspace_mib", "shm_mib",
              "degraded_home"}, set()),
    "spawn": ({"id", "workspace"}, {"workspace_path"}),
    "release": ({"workspace"}, set()),
    "unittest": (_JOB | {"code", "test", "test_class", "guards", "files", "dirs"}, set()),
    "script": (_JOB | {"code", "argv", "files", "stdin"}, set()),
    "session": (_JOB | {"files", "dirs"}, set()),
    "command": (_JOB | {"argv", "files", "dirs", "home_files", "relay"}, set()),
    "exec": ({"id", "code", "cpu_seconds"}, set()),
    "close": (set(), set()),
}


def encode(obj):
    # Lone surrogates (from undecodable bytes) are not valid UTF-8; replace them rather than fail.
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "replace")


def _as_now(function):
    """``function`` as it is now, out of reach of later patches: a test may patch ``os`` while
    the runner still writes its frames (``mock.patch("os.write")``, or pyfakefs, which also
    rebinds module-level names bound to ``os`` functions, though not a closure's)."""
    return lambda *args: function(*args)


_write, _read = _as_now(os.write), _as_now(os.read)


def write_all(fd, data):
    view = memoryview(data)
    while view:
        written = _write(fd, view)
        view = view[written:]


def write_frame(fd, obj):
    data = encode(obj)
    write_all(fd, HEADER.pack(len(data)) + data)


def _read_exact(fd, n):
    chunks = []
    while n:
        chunk = _read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fd):
    """The next frame from ``fd``, or None at end of file."""
    header = _read_exact(fd, HEADER.size)
    if header is None:
        return None
    (length,) = HEADER.unpack(header)
    if length > MAX_FRAME:
        raise ValueError(f"frame of {length} bytes exceeds the {MAX_FRAME}-byte limit")
    body = _read_exact(fd, length)
    if body is None:
        raise EOFError("end of file inside a frame")
    return received(json.loads(body))


def send_message(sock, obj, fds=()):
    data = encode(obj)
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.send(data)


def recv_message(sock):
    """The next (message, fds) pair, or (None, []) when the peer has gone."""
    data, fds, flags, _ = socket.recv_fds(sock, MAX_MESSAGE, MAX_FDS)
    if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
        for fd in fds:
            os.close(fd)
        raise ValueError("truncated control message")
    if not data:
        return None, []
    try:
        return received(json.loads(data)), fds
    except ValueError:
        for fd in fds:
            os.close(fd)
        raise


def received(message):
    """``message`` if it is one the worker may be sent, with exactly its fields."""
    if not isinstance(message, dict) or message.get("op") not in RECEIVED:
        raise ValueError(f"not a message the worker is sent: {str(message)[:300]}")
    required, optional = RECEIVED[message["op"]]
    fields = message.keys() - {"op"}
    missing, unknown = required - fields, fields - required - optional
    if missing or unknown:
        raise ValueError(f"`{message['op']}` with fields missing {sorted(missing)} and "
                         f"unknown {sorted(unknown)}")
    return message
