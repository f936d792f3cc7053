"""Framing for the job pipes and the zygote socket.

Job pipes carry frames: a 4-byte little-endian length, then that many bytes of UTF-8 JSON. The
zygote socket is SOCK_SEQPACKET, so each datagram is one JSON message, with file descriptors
attached as SCM_RIGHTS.
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


def encode(obj):
    # Lone surrogates (from undecodable bytes) are not valid UTF-8; replace them rather than fail.
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "replace")


def write_all(fd, data):
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_frame(fd, obj):
    data = encode(obj)
    write_all(fd, HEADER.pack(len(data)) + data)


def _read_exact(fd, n):
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
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
    return json.loads(body)


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
    return json.loads(data), fds
