"""A command's wall time and the peak resident memory of its own process.

assay's Python workers are its children: when they are reaped the kernel folds their memory
into assay's rusage, so for a command that starts workers the peak is read from the process's
/proc status (VmHWM) while it runs. A command too quick to be read that way, and that starts
no workers, has its peak from its rusage when it is reaped.
"""

import os
import pathlib
import subprocess
import sys
import threading
import time


def _watch(pid: int, stop: threading.Event, seen: list) -> None:
    """Keeps the largest VmHWM (kB) of `pid` until it exits or `stop` is set."""
    status = pathlib.Path(f"/proc/{pid}/status")
    while not stop.is_set():
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    seen[0] = max(seen[0], int(line.split()[1]))
        except OSError:
            return
        time.sleep(0.1)


def timed(command: list, cwd: pathlib.Path, workers: bool = True) -> tuple:
    """Runs `command` in `cwd` (exiting with its error if it fails): its wall in seconds and
    its own peak RSS in MiB. `workers`: whether it starts Python workers (see above)."""
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    stop, seen = threading.Event(), [0]
    watcher = threading.Thread(target=_watch, args=(process.pid, stop, seen), daemon=True)
    watcher.start()
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    stop.set()
    watcher.join()
    if process.returncode != 0:
        sys.exit(f"{' '.join(map(str, command))} failed ({process.returncode}):\n{stderr[-3000:]}")
    return wall, (seen[0] if workers else usage.ru_maxrss) / 1024
