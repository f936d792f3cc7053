#!/usr/bin/env python3
"""How assay eval scales with --jobs: samples per second at each --jobs asked for, on two
workloads, with the references already measured (their cost is once per dataset and machine).

- trivial: N answers to BigCodeBench/97 (its reference solution, six quick tests on `math` and
  `itertools`), each made distinct by a comment so that none is a copy of another: the fixed
  cost of a job (fork, confinement, cgroup, the supervisor), which is what a many-core machine
  multiplies;
- hard: an official run's 148 Hard answers (default checkpoint-400 Complete, v0.1.2,
  calibrated), the real mix of quick, computing and waiting tasks.

And the ceiling one worker puts on job starts: each job process is forked from one zygote, a
single-threaded process holding the preloaded libraries, so however many cores there are, jobs
start no faster than it forks. The bench times `os.fork()` (the child exits at once, the parent
reaps it) in the bigcodebench environment after importing what its profile preloads, as the
zygote does, and prints the forks per second one such process manages.

Each run's wall is the `assay eval` command's, also against the jobs' own CPU time spread
over min(--jobs, cores): how close the scheduling came to the work itself. Also printed: assay's own peak resident memory
(VmHWM of its process, read while it runs; the Python workers are apart), the speedup over the
smallest --jobs, and the load average before each run (other work on the machine distorts
every figure). On a machine with fewer cores than a --jobs asked for, that run measures
oversubscription, not scaling: the core count is printed with the table.

    python3 bench/scaling.py [--assay target/release/assay] [--jobs 1,2,4] [--trivial 400]
        [--workloads trivial,hard,fork] [--workers 1,2] [--json out.json]

Run it on a big machine with, say, --jobs 1,2,4,8,16,32,64 --trivial 5000.
"""

import argparse
import gzip
import json
import os
import pathlib
import shutil
import subprocess
import sys

from cold_cache import cache_root
from peak_memory import timed

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "bigcodebench"
HARD = DATA / "official-runs" / \
    "checkpoint-400--main--bigcodebench-hard-complete--vllm-0-1-sanitized_calibrated.jsonl"
TRIVIAL_TASK = "BigCodeBench/97"


def reference_solution(task_id: str) -> str:
    path = ROOT / "crates/assay-tasks/data/BigCodeBench-v0.1.4.jsonl.gz"
    with gzip.open(path, "rt") as f:
        for line in f:
            task = json.loads(line)
            if task["task_id"] == task_id:
                return task["code_prompt"] + task["canonical_solution"]
    sys.exit(f"{task_id} is not in {path}")


# What the bigcodebench profile preloads (crates/assay-pyenv/src/profile.rs).
PRELOAD = ["numpy", "pandas", "matplotlib", "matplotlib.pyplot", "scipy", "scipy.stats", "sklearn",
           "seaborn"]

FORKS = """
import gc, importlib, os, sys, time
for module in sys.argv[2:]:
    importlib.import_module(module)
gc.collect()
gc.freeze()
n = int(sys.argv[1])
started = time.perf_counter()
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
took = time.perf_counter() - started
rss = [l for l in open("/proc/self/status") if l.startswith("VmRSS")][0].split()[1]
print(f"{n / took:.1f} {took / n * 1000:.2f} {int(rss) / 1024:.0f}")
"""


def fork_ceiling(forks: int) -> dict:
    """Forks per second of a process holding the bigcodebench profile's preloaded libraries."""
    envs = cache_root() / "envs"
    pythons = sorted(envs.glob("bigcodebench-*/bin/python"))
    if not pythons:
        sys.exit(f"no bigcodebench environment under {envs}: run `assay env setup` first")
    done = subprocess.run([str(pythons[-1]), "-c", FORKS, str(forks), *PRELOAD],
                          capture_output=True, text=True, check=True)
    per_second, ms, rss = done.stdout.split()
    return {"workload": "fork", "forks_per_second": float(per_second), "ms_per_fork": float(ms),
            "zygote_rss_mib": float(rss)}


def workload(name: str, args, scratch: pathlib.Path) -> tuple:
    """The samples file and the eval arguments of a workload."""
    if name == "trivial":
        solution = reference_solution(TRIVIAL_TASK)
        path = scratch / "trivial--bigcodebench-complete--x.jsonl"
        with open(path, "w") as f:
            for i in range(args.trivial):
                f.write(json.dumps({"task_id": TRIVIAL_TASK, "solution": f"# {i}\n{solution}"}) + "\n")
        return path, "bigcodebench", ["--version", "v0.1.4", "--tasks", TRIVIAL_TASK]
    if name == "hard":
        path = scratch / HARD.name
        shutil.copy(HARD, path)
        return path, "bigcodebench-hard", ["--version", "v0.1.2"]
    sys.exit(f"unknown workload {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assay", default=str(ROOT / "target/release/assay"))
    parser.add_argument("--jobs", default="1,2,4")
    parser.add_argument("--trivial", type=int, default=400, help="answers in the trivial workload")
    parser.add_argument("--workloads", default="trivial,hard,fork")
    parser.add_argument("--forks", type=int, default=500, help="forks timed for the ceiling")
    parser.add_argument("--workers", default="", help="comma-separated --workers to try at each "
                        "--jobs (default: assay's own choice, one per 8 --jobs)")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()
    jobs = [int(j) for j in args.jobs.split(",")]
    scratch = ROOT / "target" / "bench-scaling"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    rows = []
    print(f"{os.cpu_count()} cores here; assay {args.assay}", flush=True)
    for name in args.workloads.split(","):
        if name == "fork":
            row = fork_ceiling(args.forks)
            rows.append(row)
            print(f"fork     one zygote ({row['zygote_rss_mib']:.0f} MiB resident): "
                  f"{row['forks_per_second']:.0f} forks/s ({row['ms_per_fork']:.2f} ms each): "
                  f"the most job starts per second one worker allows", flush=True)
            continue
        samples, benchmark, extra = workload(name, args, scratch)
        count = sum(1 for _ in open(samples))
        base = ["eval", benchmark, "--samples", str(samples)] + extra
        # The references once, untimed.
        timed([args.assay, "check", benchmark] + extra + ["--out", str(scratch / f"{name}-check")],
              scratch)
        first = None
        workers = [w for w in args.workers.split(",") if w] or [None]
        for j in jobs:
            for w in workers:
                load = os.getloadavg()[0]
                out = scratch / f"{name}-jobs{j}-workers{w}"
                command = [args.assay] + base + ["--jobs", str(j), "--out", str(out)]
                command += ["--workers", w] if w else []
                wall, rss = timed(command, scratch)
                per_second = count / wall
                # The jobs' own CPU time: what the wall is judged against (some tasks, like
                # 587's random RSA keys, take twice as long from one run to the next).
                cpu = sum(json.loads(line).get("cpu_seconds") or 0.0
                          for line in open(out / "results.jsonl"))
                floor = cpu / min(j, os.cpu_count())
                first = first or per_second
                row = {
                    "workload": name, "jobs": j, "workers": w, "samples": count,
                    "wall_seconds": round(wall, 1), "per_second": round(per_second, 2),
                    "speedup": round(per_second / first, 2), "peak_rss_mib": round(rss, 1),
                    "cpu_seconds": round(cpu, 1), "wall_over_cpu_floor": round(wall / floor, 2),
                    "load_before": round(load, 2),
                }
                rows.append(row)
                print(f"{name:8} --jobs {j:3} --workers {w or 'default':7}: {count} samples in "
                      f"{wall:7.1f} s = {per_second:7.2f}/s (x{row['speedup']:.2f}); jobs' CPU "
                      f"{cpu:.1f} s, wall {row['wall_over_cpu_floor']:.2f}x CPU/min(jobs, cores); "
                      f"assay's peak RSS {rss:.0f} MiB; load before {load:.2f}", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
