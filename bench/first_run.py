#!/usr/bin/env python3
"""The first run of a dataset: `assay run bigcodebench-hard` (the reference solutions answer)
on a cold reference-run cache, the Python environment already set up.

A first run measures every task's reference solution, whose time sets its samples' budgets,
while it judges the samples. Its wall can be no shorter than the longest single job (the
slowest task's reference, or its sample, which runs the same code) nor than all the jobs' CPU
time spread over --jobs. The target is a wall within 1.15x of the larger of the two.

The cache is made cold without touching the user's: a fresh ASSAY_CACHE_DIR under
target/bench-first-run/ sharing the real cache's environments (bench/cold_cache.py).

    python3 bench/first_run.py [--assay target/release/assay] [--jobs 2] [--runs 1]
        [--json out.json] [-- extra assay run arguments]

Prints, per run: the command's wall, the longest reference (task and seconds), the longest
sample, the jobs' CPU seconds (references and samples) over --jobs, and the ratio of the wall
to max(longest job, CPU / jobs), against the 1.15 target; and pass@1, which must stay 1.0 over
the tasks judged (the reference solutions answer).
"""

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

from cold_cache import cold_cache

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET_RATIO = 1.15


def records(path: pathlib.Path) -> list:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def one_run(args, scratch: pathlib.Path, number: int) -> dict:
    cache = cold_cache(scratch / "cache")
    out = scratch / f"run-{number}"
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, ASSAY_CACHE_DIR=str(cache))
    command = [args.assay, "run", "bigcodebench-hard", "--jobs", str(args.jobs), "--out", str(out)]
    command += args.extra
    started = time.monotonic()
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-4000:]}")
    (scratch / f"run-{number}.log").write_text(done.stdout)
    samples = records(out / "results.jsonl")
    [truth_dir] = list((cache / "ground-truth").iterdir())
    references = records(truth_dir / "results.jsonl")
    jobs = samples + references
    cpu = sum(r.get("cpu_seconds") or 0.0 for r in jobs)
    longest_ref = max(references, key=lambda r: r["wall_seconds"])
    longest_sample = max(samples, key=lambda r: r["wall_seconds"])
    bound = max(longest_ref["wall_seconds"], longest_sample["wall_seconds"], cpu / args.jobs)
    summary = json.loads((out / "summary.json").read_text())
    return {
        "wall_seconds": round(wall, 1),
        "longest_reference": [longest_ref["task_id"], round(longest_ref["wall_seconds"], 1)],
        "longest_sample": [longest_sample["task_id"], round(longest_sample["wall_seconds"], 1)],
        "cpu_seconds": round(cpu, 1),
        "cpu_per_job_slot": round(cpu / args.jobs, 1),
        "bound_seconds": round(bound, 1),
        "ratio": round(wall / bound, 3),
        "pass_at_1": summary.get("pass_at_k", {}).get("pass@1"),
        "statuses": summary.get("statuses"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assay", default=str(ROOT / "target/release/assay"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--json", help="write the figures here too")
    parser.add_argument("extra", nargs="*", help="more `assay run` arguments, after --")
    args = parser.parse_args()
    scratch = ROOT / "target" / "bench-first-run"
    scratch.mkdir(parents=True, exist_ok=True)
    results = []
    for number in range(1, args.runs + 1):
        figures = one_run(args, scratch, number)
        results.append(figures)
        verdict = "within" if figures["ratio"] <= TARGET_RATIO else "OVER"
        print(
            f"run {number}: wall {figures['wall_seconds']} s; longest reference "
            f"{figures['longest_reference'][0]} {figures['longest_reference'][1]} s, longest "
            f"sample {figures['longest_sample'][0]} {figures['longest_sample'][1]} s; CPU "
            f"{figures['cpu_seconds']} s / {args.jobs} jobs = {figures['cpu_per_job_slot']} s; "
            f"ratio {figures['ratio']} ({verdict} the {TARGET_RATIO} target); pass@1 "
            f"{figures['pass_at_1']}",
            flush=True,
        )
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
