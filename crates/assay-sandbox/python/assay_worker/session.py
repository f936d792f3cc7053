"""A persistent interpreter session: a REPL over the control pipe, what a notebook kernel is to
an agent, minus the Jupyter machinery.

Requests (frames on fd 3)::

    {"op": "exec", "id": N, "code": "...", "cpu_seconds": S?}
    {"op": "close"}

Each exec answers one frame on fd 4::

    {"ev": "exec_done", "id": N, "status": "ok" | "error",
     "result": repr of the last expression or null,
     "error": {"ename", "evalue", "traceback"} or null,
     "figures": [base64 PNG, ...], "figure_error": str or null, "seconds": float}

State (variables, imports) lives in one namespace for the session's lifetime. Output goes to the
real stdout/stderr, which the supervisor reads up to each answer. Like a notebook's inline
backend, every matplotlib figure still open after a cell is rendered to PNG and closed.

Interrupts: the supervisor sends SIGINT. It raises KeyboardInterrupt only while a cell runs;
between cells SIGINT is blocked and stale ones are discarded, so an interrupt can never land in
the middle of writing an answer. A cell's CPU budget works the same way: SIGXCPU at the soft
limit raises inside the cell; the session's hard limit kills it.
"""

import ast
import base64
import builtins
import io
import resource
import signal
import sys
import time
import traceback

from . import wire
from .wire import CTL
from .unittest_job import cap, flush_streams

RESULT_CAP = 64 << 10
MAX_FIGURES = 16
FIGURE_BYTES_CAP = 16 << 20


class CpuBudgetExceeded(BaseException):
    """Raised in a cell that used up its CPU seconds."""


class _State:
    in_cell = False


def _raise_in_cell(exc_type, state):
    def handler(signum, frame):
        if state.in_cell:
            raise exc_type()

    return handler


def _set_cpu_budget(seconds):
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if seconds:
        used = resource.getrusage(resource.RUSAGE_SELF)
        soft = int(used.ru_utime + used.ru_stime + seconds) + 1
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
    else:
        soft = hard
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return [], None
    images, total, error = [], 0, None
    try:
        for number in plt.get_fignums()[:MAX_FIGURES]:
            buf = io.BytesIO()
            plt.figure(number).savefig(buf, format="png", bbox_inches="tight")
            total += buf.tell()
            if total > FIGURE_BYTES_CAP:
                error = f"figures exceed {FIGURE_BYTES_CAP} bytes; the rest were dropped"
                break
            images.append(base64.b64encode(buf.getvalue()).decode("ascii"))
    except Exception as e:  # noqa: BLE001 - a broken figure must not break the session
        error = f"{type(e).__name__}: {e}"
    finally:
        plt.close("all")
    return images, error


def execute(code, namespace, state, cell_name):
    """Runs one cell; returns (status, result repr, error)."""
    result = error = None
    status = "ok"
    try:
        tree = ast.parse(code, filename=cell_name)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        state.in_cell = True
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        exec(compile(tree, cell_name, "exec"), namespace)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), cell_name, "eval"), namespace)
            if value is not None:
                namespace["_"] = value
                result = cap(_safe(lambda: repr(value), "<unrepresentable>"), RESULT_CAP)
    except BaseException as e:  # noqa: BLE001 - a cell's failure is the answer, not ours
        # No more interrupts: describing the error is ours.
        state.in_cell = False
        status = "error"
        error = _describe_cell_error(e)
    finally:
        # Cleared first: an interrupt arriving as the mask is set must find nothing to raise.
        state.in_cell = False
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    return status, result, error


def _safe(describe, fallback):
    """``describe()``, or ``fallback`` when the code's object breaks while being described."""
    try:
        return describe()
    except BaseException as e:  # noqa: BLE001 - user objects may raise anything
        return f"{fallback} ({type(e).__name__} while describing it)"


def _describe_cell_error(e):
    frames = e.__traceback__
    # Drop this module's own frame: the user's traceback starts in their cell.
    if frames is not None and frames.tb_frame.f_code is execute.__code__:
        frames = frames.tb_next
    return {
        "ename": type(e).__name__,
        "evalue": cap(_safe(lambda: str(e), "<unprintable>"), RESULT_CAP),
        "traceback": cap(_safe(
            lambda: "".join(traceback.format_exception(type(e), e, frames)),
            f"{type(e).__name__}: <unprintable>")),
    }


def run(spec, emit):
    state = _State()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, _raise_in_cell(KeyboardInterrupt, state))
    signal.signal(signal.SIGXCPU, _raise_in_cell(CpuBudgetExceeded, state))
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    cells = 0
    while True:
        request = wire.read_frame(CTL)
        if request is None or request.get("op") == "close":
            return
        if request.get("op") != "exec":
            raise ValueError(f"unknown session op {request.get('op')!r}")
        cells += 1
        while signal.sigtimedwait({signal.SIGINT}, 0) is not None:
            pass  # an interrupt aimed at an earlier cell
        _set_cpu_budget(request.get("cpu_seconds"))
        started = time.perf_counter()
        status, result, error = execute(request["code"], namespace, state, f"<cell-{cells}>")
        seconds = time.perf_counter() - started
        try:
            flush_streams(sys.stdout, sys.stderr)
            figures, figure_error = _figures()
        except BaseException as e:  # noqa: BLE001 - the code's objects broke; the session lives
            figures, figure_error = [], _safe(lambda: f"{type(e).__name__}: {e}", "figures")
        emit({"ev": "exec_done", "id": request["id"], "status": status, "result": result,
              "error": error, "figures": figures, "figure_error": figure_error,
              "seconds": seconds})
