"""Runs a piece of the worker in a forked child, as the real job process does, so that what it
changes (sys.stdout, builtins, sys.modules, rlimits) never leaks into the test process."""

import json
import os
import traceback


def in_child(fn, *args):
    """Calls ``fn(*args, emit)`` in a forked child; returns (events, child's exit status).
    ``emit`` collects JSON-able events; an exception in fn becomes a final ``crash`` event."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        out = os.fdopen(write_end, "w")

        def emit(event):
            out.write(json.dumps(event) + "\n")
            out.flush()

        # What the code prints lands in a file, reported as a last "stdout" event.
        capture = os.open("/tmp", os.O_RDWR | os.O_TMPFILE, 0o600)
        os.dup2(capture, 1)
        os.dup2(capture, 2)
        try:
            fn(*args, emit)
        except BaseException:  # noqa: BLE001 - reported to the parent
            emit({"ev": "crash", "traceback": traceback.format_exc()})
        finally:
            os.lseek(capture, 0, os.SEEK_SET)
            emit({"ev": "stdout", "text": os.read(capture, 1 << 20).decode(errors="replace")})
            out.flush()
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as f:
        events = [json.loads(line) for line in f if line.strip()]
    _, status = os.waitpid(pid, 0)
    return events, status
