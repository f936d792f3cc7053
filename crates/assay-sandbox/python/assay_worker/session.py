"""A persistent interpreter session: notebook cells over the control pipe, what a Jupyter kernel
is to an agent, minus the Jupyter machinery.

Cells run in an IPython shell, so they behave as in a notebook: ``!cmd`` and ``%magics`` work,
the last expression's value comes back as IPython displays it (``text/plain``), matplotlib draws
inline (``plt.show()`` prints nothing; every figure still open after a cell is rendered and
closed), and ``display()`` output is kept off the text, as a notebook shows it beside the cell.

Requests (frames on fd 3): ``exec`` (a cell) and ``close``; each exec answers one ``exec_done``
frame on fd 4. Their fields: docs/worker-protocol.md.

Output: stdout and stderr share one pipe (fd 1), unbuffered, so what a cell and the programs it
starts print arrives in the order it was written, as a notebook interleaves its streams.

Interrupts: the supervisor sends SIGINT. It raises KeyboardInterrupt only while a cell runs;
between cells SIGINT is blocked and stale ones are discarded, so an interrupt can never land in
the middle of writing an answer. A cell's CPU budget works the same way: SIGXCPU at the soft
limit raises inside the cell; the session's hard limit kills it.

Packages cannot be installed: the environment is read-only and has no network, so
``!pip install`` (and conda, apt) is not run, and the cell's output says why.
"""

import base64
import io
import os
import re
import resource
import signal
import sys
import warnings

from . import wire
from .wire import CTL
from .unittest_job import cap

RESULT_CAP = 64 << 10
MAX_FIGURES = 16
FIGURE_BYTES_CAP = 16 << 20

INSTALL_COMMAND = re.compile(
    r"(^|[\s;&|(])(pip3?|conda|mamba|micromamba|apt|apt-get|yum|dnf)\s+(-\S+\s+)*install\b"
    r"|-m\s+pip\s+(-\S+\s+)*install\b")
READ_ONLY_NOTICE = ("ERROR: nothing was installed: this session's Python environment is "
                    "read-only and offline (assay's pinned environment); use the packages "
                    "already installed.\n")


class CpuBudgetExceeded(BaseException):
    """Raised in a cell that used up its CPU seconds."""


class _State:
    """What the cell now running has produced besides its output."""

    def __init__(self):
        self.in_cell = False
        self.reset()

    def reset(self):
        self.result = None
        self.error = None
        self.figures = []
        self.figure_bytes = 0
        self.figure_error = None

    def add_figure(self, png):
        if isinstance(png, bytes):
            png = base64.b64encode(png).decode("ascii")
        if not isinstance(png, str):  # display({"image/png": ...}, raw=True) takes anything
            self.figure_error = "an image that was not PNG data was dropped"
            return
        if len(self.figures) >= MAX_FIGURES:
            self.figure_error = f"more than {MAX_FIGURES} figures; the rest were dropped"
            return
        self.figure_bytes += len(png) * 3 // 4
        if self.figure_bytes > FIGURE_BYTES_CAP:
            self.figure_error = f"figures exceed {FIGURE_BYTES_CAP} bytes; the rest were dropped"
            return
        self.figures.append(png)


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


def merge_streams():
    """Points stderr at stdout's pipe and makes both unbuffered, so that the order things were
    written in survives."""
    os.dup2(1, 2)
    for name in ("stdout", "stderr"):
        raw = open(1 if name == "stdout" else 2, "wb", buffering=0, closefd=False)
        stream = io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace",
                                  line_buffering=False, write_through=True)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _safe(describe, fallback):
    """``describe()``, or ``fallback`` when the code's object breaks while being described."""
    try:
        return describe()
    except BaseException as e:  # noqa: BLE001 - user objects may raise anything
        return f"{fallback} ({type(e).__name__} while describing it)"


def _error(etype, evalue, traceback_text):
    name = _safe(lambda: etype.__name__, "<unnamed>")
    return {"type": name,
            "message": cap(_safe(lambda: str(evalue), "<unprintable>"), RESULT_CAP),
            "traceback": cap(traceback_text)}


def make_shell(state):
    """An IPython shell whose value display, rich displays and tracebacks land in ``state``
    instead of on the terminal, as a notebook kernel sends them to its client."""
    try:
        import IPython  # noqa: F401 - only whether it is there
    except ImportError:
        raise RuntimeError("sessions run their cells in IPython, which this Python environment "
                           "lacks (the `pybench` and `test` profiles have it)") from None
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets import Type
    from traitlets.config import Config

    class CellValue(DisplayHook):
        """The last expression's value as a notebook's ``execute_result``: its text/plain."""

        def start_displayhook(self):
            pass

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            state.result = cap(str(format_dict.get("text/plain", "")), RESULT_CAP)

        def finish_displayhook(self):
            pass

    class RichDisplays(DisplayPublisher):
        """``display()`` output: a notebook shows it beside the cell's text; images are kept
        as the cell's figures, the rest dropped."""

        def publish(self, data, metadata=None, source=None, **kwargs):
            png = data.get("image/png")
            if png is not None:
                state.add_figure(png)

        def clear_output(self, wait=False):
            pass

    class NotebookShell(InteractiveShell):
        displayhook_class = Type(CellValue)
        display_pub_class = Type(RichDisplays)

        def _showtraceback(self, etype, evalue, stb):
            text = stb if isinstance(stb, str) else "\n".join(stb)
            state.error = _error(etype, evalue, text)

        def enable_gui(self, gui=None):
            pass  # inline figures need no event loop

        def system(self, cmd):
            if INSTALL_COMMAND.search(cmd):
                sys.stdout.write(READ_ONLY_NOTICE)
                self.user_ns["_exit_code"] = 1
                return
            self.system_raw(cmd)

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "NoColor"
    config.InteractiveShell.xmode = "Plain"
    shell = NotebookShell.instance(config=config)
    try:
        import matplotlib  # noqa: F401 - only whether it is there
    except ImportError:
        return shell
    with warnings.catch_warnings():
        # IPython 8.24+ with matplotlib < 3.9 warns about its own backend registry.
        warnings.simplefilter("ignore", DeprecationWarning)
        shell.enable_matplotlib("inline")
    return shell


def run_cell(shell, code, state):
    """Runs one cell; returns (result text, error)."""
    state.reset()
    try:
        state.in_cell = True
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        shell.run_cell(code, store_history=True)
    except BaseException as e:  # noqa: BLE001 - an interrupt outside IPython's own handling
        state.in_cell = False
        state.error = _error(type(e), e, "")
    finally:
        # Cleared first: an interrupt arriving as the mask is set must find nothing to raise.
        state.in_cell = False
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    return state.result, state.error


def run(spec, emit):
    merge_streams()
    os.environ.setdefault("IPYTHONDIR", os.path.join(os.environ.get("TMPDIR", "/tmp"), "ipython"))
    state = _State()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, _raise_in_cell(KeyboardInterrupt, state))
    signal.signal(signal.SIGXCPU, _raise_in_cell(CpuBudgetExceeded, state))
    shell = make_shell(state)
    while True:
        request = wire.read_frame(CTL)
        if request is None or request["op"] == "close":
            return
        if request["op"] != "exec":
            raise ValueError(f"`{request['op']}` is not a session's request")
        while signal.sigtimedwait({signal.SIGINT}, 0) is not None:
            pass  # an interrupt aimed at an earlier cell
        _set_cpu_budget(request["cpu_seconds"])
        result, error = run_cell(shell, request["code"], state)
        emit({"ev": "exec_done", "id": request["id"], "result": result, "error": error,
              "figures": state.figures, "figure_error": state.figure_error})
