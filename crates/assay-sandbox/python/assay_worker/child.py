"""A job process: confine, report readiness, wait for the job, run it, exit.

The frames both ways, and when each may come: docs/worker-protocol.md.

File descriptors, fixed for every job:
  0  /dev/null          1  stdout pipe          2  stderr pipe
  3  control pipe (supervisor -> job, frames)   4  results pipe (job -> supervisor, frames)
3 and 4 are close-on-exec, so programs the job starts never inherit them.
"""

import base64
import fcntl
import os
import resource
import tempfile
import time
import traceback

from . import command_job, conditions, confine, script_job, session, unittest_job, wire
from .wire import CTL, RES

JOB_KINDS = {"unittest": unittest_job.run, "script": script_job.run, "session": session.run,
             "command": command_job.run}


def _arrange_fds(ctl, out, err, res):
    # Park the received descriptors above the fixed slots first, so no dup2 clobbers another.
    parked = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64) for fd in (ctl, out, err, res)]
    for fd in (ctl, out, err, res):
        os.close(fd)
    ctl, out, err, res = parked
    null = os.open("/dev/null", os.O_RDONLY)
    for source, target in ((null, 0), (out, 1), (err, 2), (ctl, CTL), (res, RES)):
        os.dup2(source, target, inheritable=target < 3)
    # Everything else the zygote held (its socket above all) must not reach the job.
    os.closerange(RES + 1, 1 << 20)


def _apply_limits(limits):
    def cap(kind, value):
        resource.setrlimit(kind, (value, value))

    if limits["cpu_seconds"]:
        used = resource.getrusage(resource.RUSAGE_SELF)
        spent = used.ru_utime + used.ru_stime
        cap(resource.RLIMIT_CPU, int(spent + limits["cpu_seconds"]) + 1)
    for key, kind in (("file_size_bytes", resource.RLIMIT_FSIZE),
                      ("open_files", resource.RLIMIT_NOFILE),
                      ("processes", resource.RLIMIT_NPROC),
                      ("data_bytes", resource.RLIMIT_DATA),
                      ("stack_bytes", resource.RLIMIT_STACK)):
        if limits[key]:
            cap(kind, int(limits[key]))
    cap(resource.RLIMIT_CORE, 0)


def _safe_relative(path):
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"input file path {path!r} must be relative and plain")
    return path


def _prepare(spec):
    os.environ.clear()
    os.environ.update(spec["env"])
    time.tzset()
    # The zygote's temporary directory (cached by tempfile at a preload's first use) is not
    # the job's: let the job's TMPDIR decide again.
    tempfile.tempdir = None
    for directory in spec["make_dirs"]:
        os.makedirs(directory, exist_ok=True)
    os.makedirs(spec["cwd"], exist_ok=True)
    os.chdir(spec["cwd"])
    for directory in spec.get("dirs", []):  # a script has none
        os.makedirs(_safe_relative(directory), exist_ok=True)
    for item in spec["files"]:
        path = _safe_relative(item["path"])
        if os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(item["data"]))
    conditions.apply(spec["conditions"])
    _apply_limits(spec["limits"])


def _emit(obj):
    wire.write_frame(RES, obj)


def main(fds, cfg, mode, workspace):
    """Runs in the freshly forked job process; never returns."""
    try:
        _arrange_fds(*fds)
        os.setsid()
        if mode == "namespaced":
            layers = confine.namespaced(cfg, workspace)
        else:
            layers = confine.degraded(cfg, workspace)
    except BaseException:  # noqa: BLE001 - reported to the supervisor, then exit
        try:
            _emit({"ev": "setup_failed", "error": traceback.format_exc()})
        finally:
            os._exit(70)
    stage = "prepare"  # until untrusted code runs, a failure here is the harness's fault
    try:
        unittest_job.rehearse()
        _emit({"ev": "ready", "layers": layers})
        spec = wire.read_frame(CTL)
        if spec is None:
            os._exit(0)
        run = JOB_KINDS.get(spec["op"])
        if run is None:
            raise ValueError(f"`{spec['op']}` is not a job")
        _prepare(spec)
        # From here on the results pipe carries whatever the code writes too: the supervisor
        # blames nothing after this frame on the harness.
        _emit({"ev": "started"})
        stage = "run"
        run(spec, _emit)
    except BaseException:  # noqa: BLE001 - the supervisor gets the harness-side error
        try:
            _emit({"ev": "internal_error", "stage": stage, "error": traceback.format_exc()})
        except BaseException:  # noqa: BLE001 - results pipe gone: nothing left to tell
            pass
    finally:
        os._exit(0)
