"""A unittest job with BigCodeBench's official semantics.

What the official evaluator does in its child process, and so what this does:
  * ``code + "\\n" + test`` is compiled as ``__test__.py`` and executed in one fresh module named
    ``__test__`` whose globals start with ``__builtins__, __file__, __package__, __doc__, sys, os,
    environ``; the module is then registered in ``sys.modules``;
  * the test class (``TestCases``) is loaded with ``unittest.TestLoader`` (methods in name
    order) and run into a ``TestResult``;
  * ``faulthandler`` is disabled, ``exit``/``quit`` are removed from builtins, pyplot figures are
    closed, TZ is UTC;
  * stdout, stderr and stdin are one write-only text stream (reading it raises ``OSError``), and
    ``subprocess.Popen``/``run`` default to piping the child's output.

Differences, both deliberate: the swallowed text is forwarded to the job's stdout pipe (capped
by the supervisor) instead of accumulating in memory, and the time limit is enforced from
outside the process instead of by SIGALRM.

Differences that only decide verdicts the code earned by gaming its tests: the answer and the
test source are compiled apart (the same line numbers and ``__future__`` features), the test
bodies with a witness, so that a pass means every test ran its own body to its end
(``integrity.py``); one event is streamed per test as it finishes, so an early ``os._exit``
leaves tests without verdicts; and results travel on their own descriptor, never on stdout.
"""

import builtins
import faulthandler
import io
import os
import subprocess
import sys
import time
import types
import unittest
from resource import RUSAGE_CHILDREN, RUSAGE_SELF
from resource import getrusage as _getrusage
from unittest import case as _case
from unittest import loader as _loader
from unittest import result as _result
from unittest import suite as _suite

from . import integrity as _integrity
from . import official_guards

DETAIL_CAP = 64 << 10
_RANK = {"pass": 0, "skip": 0, "xfail": 0, "xpass": 0, "fail": 1, "error": 2}
# Test-class attributes that decide what a test does (watched once the class exists).
_TEST_HOOKS = ("setUp", "tearDown", "setUpClass", "tearDownClass", "run", "__call__", "debug")


def cap(text, limit=DETAIL_CAP):
    if not isinstance(text, str):  # a skip reason may be any object
        try:
            text = str(text)
        except Exception:  # noqa: BLE001 - a reason that cannot print itself
            text = "<unprintable>"
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    return f"{text[:head]}\n... [{len(text) - limit} characters cut] ...\n{text[head - limit:]}"


def describe(exc, own_frames=0):
    """An exception as a dict; ``own_frames`` leading traceback frames (the runner's) dropped."""
    import traceback

    frames = exc.__traceback__
    for _ in range(own_frames):
        if frames is not None:
            frames = frames.tb_next
    return {
        "type": type(exc).__name__,
        "message": cap(str(exc)),
        "traceback": cap("".join(traceback.format_exception(type(exc), exc, frames))),
    }


def rusage():
    """CPU time and peak memory of this process and its reaped children, for the supervisor's
    accounting when it has no cgroup. (``getrusage`` is bound at import, before any job's code
    could replace it; what it gives is coerced, and zeros stand in if it fails.)"""
    try:
        own, children = _getrusage(RUSAGE_SELF), _getrusage(RUSAGE_CHILDREN)
        return {"utime": float(own.ru_utime + children.ru_utime),
                "stime": float(own.ru_stime + children.ru_stime),
                "maxrss_kib": int(max(own.ru_maxrss, children.ru_maxrss))}
    except Exception:  # noqa: BLE001 - only the accounting's fallback is lost
        return {"utime": 0.0, "stime": 0.0, "maxrss_kib": 0}


def flush_streams(*streams):
    """Flushes the given streams and the interpreter's original stdout and stderr, so what the
    code printed is in the pipes before its verdict is; a stream the code broke is skipped."""
    for stream in (*streams, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - the code may have replaced the stream with anything
            pass


def test_key(test):
    """The official results' key for a test: the last dotted part of its id."""
    return test.id().split(".")[-1]


class SwallowedIO(io.StringIO):
    """The official harness's write-only stream: reading raises, writing is kept away from the
    test. Text goes to ``fd`` (the job's stdout pipe) rather than into memory."""

    def __init__(self, fd):
        super().__init__()
        self._fd = fd

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError(f"string argument expected, got '{type(s).__name__}'")
        try:
            data = s.encode("utf-8", "replace")
            while data:
                data = data[os.write(self._fd, data):]
        except OSError:
            pass  # the code closed its own stdout; its output is simply lost
        return len(s)

    def read(self, *args, **kwargs):
        raise OSError

    def readline(self, *args, **kwargs):
        raise OSError

    def readlines(self, *args, **kwargs):
        raise OSError

    def readable(self, *args, **kwargs):
        return False


def _patch_subprocess():
    """subprocess.Popen/run default to PIPE for stdout and stderr, as in the official harness.
    Returns the undo function."""
    original_popen, original_run = subprocess.Popen, subprocess.run

    def _with_pipes(kwargs):
        if kwargs.get("capture_output"):
            kwargs.pop("stdout", None)
            kwargs.pop("stderr", None)
        else:
            kwargs.setdefault("stdout", subprocess.PIPE)
            kwargs.setdefault("stderr", subprocess.PIPE)
        return kwargs

    def popen(*args, **kwargs):
        return original_popen(*args, **_with_pipes(kwargs))

    def run(*args, **kwargs):
        return original_run(*args, **_with_pipes(kwargs))

    subprocess.Popen, subprocess.run = popen, run

    def undo():
        subprocess.Popen, subprocess.run = original_popen, original_run

    return undo


class Recorder(_result.TestResult):
    """A TestResult (so tracebacks are formatted exactly as the official harness's) that also
    streams one event per test and keeps its own copy of every issue."""

    def __init__(self, emit, witness):
        super().__init__()
        self._emit = emit
        self._witness = witness
        self._current = None
        self.issues_failures = []
        self.issues_errors = []

    def _note(self, outcome, detail=None):
        if self._current is None:
            # Class or module fixtures (setUpClass...) report outside any test.
            self._emit({"ev": "fixture", "outcome": outcome, "detail": cap(detail or "")})
            return
        if _RANK[outcome] >= _RANK.get(self._current["outcome"], -1):
            self._current["outcome"] = outcome
            self._current["detail"] = detail

    def startTest(self, test):
        super().startTest(test)
        # The supervisor starts the test's own clock, if it has a budget, on this frame.
        name = test_key(test)
        self._emit({"ev": "test_start", "name": name})
        self._current = {"outcome": None, "detail": None, "started": time.perf_counter()}
        self._witness.start(test, name)

    def stopTest(self, test):
        super().stopTest(test)
        current, self._current = self._current, None
        ended = self._witness.ended
        self._witness.stop()
        self._emit({
            "ev": "test",
            "name": test_key(test),
            "outcome": current["outcome"] or "error",
            "detail": cap(current["detail"] or ("" if current["outcome"] else "no outcome")),
            "seconds": time.perf_counter() - current["started"],
            "ended": ended,
        })

    def addSuccess(self, test):
        super().addSuccess(test)
        self._note("pass")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        trace = self.failures[-1][1]
        self.issues_failures.append([test_key(test), cap(trace)])
        self._note("fail", trace)

    def addError(self, test, err):
        super().addError(test, err)
        trace = self.errors[-1][1]
        self.issues_errors.append([test_key(test), cap(trace)])
        self._note("error", trace)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._note("skip", reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._note("xfail")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._note("xpass")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is None:
            return
        if issubclass(err[0], test.failureException):
            trace = self.failures[-1][1]
            self.issues_failures.append([test_key(subtest), cap(trace)])
            self._note("fail", trace)
        else:
            trace = self.errors[-1][1]
            self.issues_errors.append([test_key(subtest), cap(trace)])
            self._note("error", trace)


def _official_guard():
    os.environ.update({"TZ": "UTC", "OMP_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "3",
                       "TF_ENABLE_ONEDNN_OPTS": "0"})
    time.tzset()
    faulthandler.disable()
    builtins.exit = None
    builtins.quit = None
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        return
    plt.close("all")


_REHEARSAL = {
    "test_class": "TestCases",
    "guards": False,
    "code": "def task_func(x):\n    return x\n",
    "test": "import unittest\nclass TestCases(unittest.TestCase):\n"
            "    def test_it(self):\n        self.assertEqual(task_func(1), 1)\n",
}
_REHEARSAL_MODULE = "__assay_rehearsal__"


def rehearse():
    """Runs a tiny job through this runner and throws the result away.

    A job process is a copy-on-write fork: each page it first writes costs a fault and a copy,
    and running the runner's own machinery (unittest, the JSON encoder) writes to hundreds of
    pages. Done while the process waits for its job, that copying is off the job's clock.
    What it changes, a unittest job changes again identically; what a session must not
    inherit (``exit``, ``quit``) is put back.
    """
    import json

    saved = builtins.exit, builtins.quit
    run(_REHEARSAL, lambda event: json.dumps(event), _REHEARSAL_MODULE, watch=False)
    sys.modules.pop(_REHEARSAL_MODULE, None)
    builtins.exit, builtins.quit = saved


def run(spec, emit, module_name="__test__", watch=True):
    """Runs ``spec``'s code and tests in a fresh module named ``module_name``; ``watch``
    installs the audit hook (not while rehearsing: it would outlive the rehearsal)."""
    # Everything below is captured before the code can touch it.
    snapshot = _integrity.Snapshot(Recorder)
    loader_class, suite_run = _loader.TestLoader, _suite.TestSuite.run
    _official_guard()
    if spec["guards"]:
        official_guards.install(spec["code"] + spec["test"])
    name = module_name
    filename = f"{name}.py"
    module = types.ModuleType(name)
    module.__dict__.update({
        "__builtins__": builtins, "__file__": filename, "__package__": None, "__doc__": None,
        "sys": sys, "os": os, "environ": os.environ,
    })
    stream = SwallowedIO(1)
    saved_streams = sys.stdout, sys.stderr, sys.stdin
    sys.stdout = sys.stderr = sys.stdin = stream
    undo_subprocess = _patch_subprocess()
    witness = None
    try:
        try:
            compiled = _integrity.Compiled(spec["code"], spec["test"], filename)
            witness = _integrity.Witness(compiled, snapshot, emit)
            if watch:
                # For the rest of the job process's life: an audit hook cannot be removed.
                sys.addaudithook(witness.hook())
            exec(compiled.code, module.__dict__)
            # The answer's module ran; the test source's own module code comes next, with the
            # witness its bodies call.
            witness.check()
            witness.install(module.__dict__)
            exec(compiled.test, module.__dict__)
            sys.modules[name] = module
            test_class = getattr(module, spec["test_class"])
            suite = loader_class().loadTestsFromTestCase(test_class)
        except BaseException as e:  # noqa: BLE001 - the official harness catches everything
            flush_streams()
            findings = []
            if witness is not None:  # none when the answer does not compile
                witness.check()
                findings = witness.findings
            emit({"ev": "module_error", "error": describe(e, own_frames=1),
                  "integrity": findings, "rusage": rusage()})
            return
        snapshot.watch(test_class, [n for n in vars(test_class)
                                    if n.startswith("test") or n in _TEST_HOOKS])
        names = [test_key(t) for t in suite]
        witness.altered_methods(test_class, names)
        emit({"ev": "loaded", "tests": names})
        recorder = Recorder(emit, witness)
        # Its methods live on the class (watched); one set on the instance is a patch.
        snapshot.watch(recorder)
        aborted = None
        try:
            suite_run(suite, recorder)
        except BaseException as e:  # noqa: BLE001 - e.g. KeyboardInterrupt escapes unittest
            aborted = describe(e, own_frames=1)
        flush_streams()
        witness.check()
        emit({
            "ev": "tests_done",
            "tests_run": recorder.testsRun,
            "failures": recorder.issues_failures,
            "errors": recorder.issues_errors,
            "aborted": aborted,
            "integrity": witness.findings,
            "rusage": rusage(),
        })
    finally:
        undo_subprocess()
        sys.stdout, sys.stderr, sys.stdin = saved_streams
