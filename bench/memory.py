#!/usr/bin/env python3
"""assay's own memory as the samples grow: `assay eval` of an official run's answers repeated n
times each (a pass@k study, RL rollouts), at each n asked for, with the references measured
first. Prints the wall and the peak resident memory of the assay process itself (VmHWM; the
Python workers are apart), against n = the first n asked for: the target is a peak at the
largest n within 1.5x of the first, and a wall within 1.1x of linear. Then `assay report` of
the largest run, also by its peak.

    python3 bench/memory.py [--assay target/release/assay] [--n 1,5,20] [--jobs 2]
        [--samples FILE] [--json out.json]

The default answers are checkpoint-400's 148 Hard Complete ones (v0.1.2, calibrated) from
../shared/data/bigcodebench/official-runs. Scratch goes under target/bench-memory/.
"""

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
HARD = ROOT.parent / "shared" / "data" / "bigcodebench" / "official-runs" / \
    "checkpoint-400--main--bigcodebench-hard-complete--vllm-0-1-sanitized_calibrated.jsonl"


def watch_peak(pid: int, stop: threading.Event, seen: list) -> None:
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
    """Runs `command`: its wall in seconds and its peak RSS in MiB. With `workers` (it starts
    Python workers, whose memory the kernel would add to its own on reaping) the peak is read
    from its /proc status while it runs; else from its rusage when it is reaped, which catches
    a command too quick to be read while it runs."""
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    stop, seen = threading.Event(), [0]
    watcher = threading.Thread(target=watch_peak, args=(process.pid, stop, seen), daemon=True)
    watcher.start()
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    stop.set()
    watcher.join()
    if process.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({process.returncode}):\n{stderr[-3000:]}")
    return wall, (seen[0] if workers else usage.ru_maxrss) / 1024


def repeated(source: pathlib.Path, n: int, into: pathlib.Path) -> pathlib.Path:
    """`source`'s answers, each n times in a row, named as the official harness names files."""
    path = into / f"n{n}--bigcodebench-hard-complete--x.jsonl"
    with open(source) as f, open(path, "w") as out:
        for line in f:
            if line.strip():
                out.write((line.rstrip("\n") + "\n") * n)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assay", default=str(ROOT / "target/release/assay"))
    parser.add_argument("--n", default="1,5,20")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--samples", default=str(HARD))
    parser.add_argument("--version", default="v0.1.2")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()
    scratch = ROOT / "target" / "bench-memory"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    common = ["--version", args.version, "--jobs", str(args.jobs)]
    timed([args.assay, "check", "bigcodebench-hard", *common, "--out", str(scratch / "check")],
          scratch)
    rows, first = [], None
    for n in [int(x) for x in args.n.split(",")]:
        samples = repeated(pathlib.Path(args.samples), n, scratch)
        out = scratch / f"run-n{n}"
        wall, rss = timed([args.assay, "eval", "bigcodebench-hard", "--samples", str(samples),
                           *common, "--out", str(out)], scratch)
        first = first or (n, wall, rss)
        linear = wall / (first[1] * n / first[0])
        row = {"n": n, "samples": sum(1 for _ in open(samples)), "wall_seconds": round(wall, 1),
               "wall_over_linear": round(linear, 2), "peak_rss_mib": round(rss, 1),
               "peak_over_first": round(rss / first[2], 2)}
        rows.append(row)
        print(f"eval   n={n:3}: {row['samples']:6} samples in {wall:7.1f} s ({linear:.2f}x linear); "
              f"assay's peak RSS {rss:6.1f} MiB ({row['peak_over_first']:.2f}x n={first[0]})",
              flush=True)
    last = scratch / f"run-n{rows[-1]['n']}"
    wall, rss = timed([args.assay, "report", str(last), "--html", str(scratch / "report.html")],
                      scratch, workers=False)
    rows.append({"report_of_n": rows[-1]["n"], "wall_seconds": round(wall, 1),
                 "peak_rss_mib": round(rss, 1)})
    print(f"report n={rows[-2]['n']:3}: {wall:.1f} s; assay's peak RSS {rss:.1f} MiB", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
