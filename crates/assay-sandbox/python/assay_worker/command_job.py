"""A command job: run a program (a coding agent's CLI) in the workspace, as the job's child.

The job process stays what it is everywhere else, PID 1 of the job's PID namespace, so that when
it exits the kernel ends every process the program left behind.

With a relay, the program's one way out is ``127.0.0.1:<port>`` inside the job's own network
namespace, where nothing else listens: each connection made there is accepted here and its
descriptor handed to the supervisor (``SCM_RIGHTS``) over a Unix socket the supervisor connected
to before the program started. The supervisor serves it (the model gateway, which holds the
real key and counts every request); no byte of it passes through this process, and the program
cannot reach the supervisor any other way: the Unix socket is gone from the file system before
the program starts.
"""

import base64
import os
import socket
import subprocess
import threading

from .unittest_job import rusage

SUPERVISOR_WAIT = 10.0


def _hand_over(listener, channel):
    """Passes each connection accepted on ``listener`` to the supervisor, until either closes."""
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        try:
            socket.send_fds(channel, [b"c"], [client.fileno()])
        except OSError:
            return
        finally:
            client.close()


def _supervisor(path):
    """The supervisor's connection to the Unix socket at ``path``, which is then removed."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server.bind(path)
    server.listen(1)
    server.settimeout(SUPERVISOR_WAIT)
    try:
        channel, _ = server.accept()
    finally:
        server.close()
        os.unlink(path)
    channel.settimeout(None)
    return channel


def _listen(port):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    return listener


def _write_home_files(files):
    """The program's own configuration, under its home (``HOME``), which is not its working
    directory: nothing there is read back as its output."""
    home = os.environ["HOME"]
    for item in files:
        parts = item["path"].split("/")
        if item["path"].startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"home file path {item['path']!r} must be relative and plain")
        path = os.path.join(home, item["path"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(item["data"]))


def run(spec, emit):
    _write_home_files(spec["home_files"])
    relay = spec["relay"]
    if relay is not None:
        channel = _supervisor(relay["socket"])
        # Bound before the program starts: its first request never finds the port closed.
        listener = _listen(relay["port"])
        threading.Thread(target=_hand_over, args=(listener, channel), daemon=True).start()
    # stdin stays /dev/null (agents that read a prompt from a pipe wait forever otherwise);
    # stdout and stderr are the job's own, captured by the supervisor.
    try:
        child = subprocess.Popen(spec["argv"], stdin=subprocess.DEVNULL, close_fds=True)
    except OSError as e:
        os.write(2, f"assay: cannot run {spec['argv'][0]!r}: {e}\n".encode())
        emit({"ev": "command_done", "exit_code": 127, "signal": None, "rusage": rusage()})
        return
    code = child.wait()
    emit({"ev": "command_done", "exit_code": code if code >= 0 else None,
          "signal": -code if code < 0 else None, "rusage": rusage()})
