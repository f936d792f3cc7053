"""assay: faithful, fast and safe evaluation of code LLMs and agents (BigCodeBench, PyBench).

The wheel carries assay's Rust binary as a script (`assay` on PATH once installed); this package
finds it, so that `python -m assay_code` runs it too and other Python code can locate it, and
holds `Client`, a standard-library client for the binary's HTTP service `assay serve`
(assay_code.client says how to use it).
"""

import os
import sysconfig
from pathlib import Path

__all__ = [
    "AssayError",
    "CellResult",
    "Client",
    "Figure",
    "RunResult",
    "Session",
    "StartError",
    "TestResult",
    "UnittestResult",
    "VerifyResult",
    "find_assay_bin",
]

_NAME = "assay"


def _candidates():
    """Where an installer puts the wheel's scripts, most likely first."""
    yield Path(sysconfig.get_path("scripts"))
    user_scheme = f"{os.name}_user"
    if user_scheme in sysconfig.get_scheme_names():
        yield Path(sysconfig.get_path("scripts", scheme=user_scheme))
    # absolute(), not resolve(): a package linked in from elsewhere (uv's symlink mode) still
    # counts from where it is installed.
    package = Path(__file__).absolute().parent
    # `pip install --prefix P`: P/lib/pythonX.Y/site-packages/assay_code -> P/bin.
    if len(package.parents) > 3:
        yield package.parents[3] / "bin"
    # `pip install --target T`: T/assay_code -> T/bin.
    yield package.parent / "bin"


def find_assay_bin() -> str:
    """The path of the installed `assay` binary.

    Raises FileNotFoundError naming every place looked at when there is none (the package was
    copied without its wheel's scripts).
    """
    looked = []
    for directory in _candidates():
        path = directory / _NAME
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        looked.append(str(path))
    raise FileNotFoundError(
        "the assay binary is not installed beside this package; looked at: " + ", ".join(looked)
    )


# Last: the client finds the binary through find_assay_bin, defined above.
from assay_code.client import (  # noqa: E402
    AssayError,
    CellResult,
    Client,
    Figure,
    RunResult,
    Session,
    StartError,
    TestResult,
    UnittestResult,
    VerifyResult,
)
