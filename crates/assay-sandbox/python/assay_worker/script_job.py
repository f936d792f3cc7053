"""A script job: run code as ``__main__`` in the workspace, like ``python main.py ARGS``.

Output goes to the real stdout and stderr; an uncaught exception prints its traceback to stderr
and gives exit code 1; ``sys.exit`` works as in a script. Before reporting, the job waits for
non-daemon threads and runs ``atexit`` handlers, as interpreter shutdown would. The files the
script leaves in the workspace are collected by the supervisor, not reported from here.
"""

import atexit
import builtins
import os
import sys
import tempfile
import threading
import traceback

from .unittest_job import describe, flush_streams, rusage


def _exit_code(exc):
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _feed_stdin(text):
    """Makes ``text`` the process's standard input (fd 0, so programs the script starts read it
    too). A file in the job's own /tmp, unlinked, rather than a pipe: a pipe holds only 64 KiB
    before its writer blocks."""
    with tempfile.TemporaryFile() as held:
        held.write(text.encode("utf-8", "surrogateescape"))
        held.seek(0)
        os.dup2(held.fileno(), 0)


def run(spec, emit):
    if spec.get("stdin") is not None:
        _feed_stdin(spec["stdin"])
    filename = "main.py"
    sys.argv = [filename, *spec["argv"]]
    namespace = {"__name__": "__main__", "__file__": filename, "__builtins__": builtins}
    error, exit_code = None, 0
    try:
        exec(compile(spec["code"], filename, "exec"), namespace)
        for thread in threading.enumerate():
            if thread is not threading.main_thread() and not thread.daemon:
                thread.join()
        atexit._run_exitfuncs()
    except SystemExit as e:
        exit_code = _exit_code(e)
    except BaseException as e:  # noqa: BLE001 - reported like an uncaught exception
        traceback.print_exception(type(e), e, e.__traceback__.tb_next)
        error, exit_code = describe(e, own_frames=1), 1
    flush_streams(sys.stdout, sys.stderr)
    emit({"ev": "script_done", "exit_code": exit_code, "error": error, "rusage": rusage()})
