#!/usr/bin/env python3
"""assay eval against the official BigCodeBench evaluator, side by side, in one run.

Installs the official evaluator (bigcodebench==0.2.5, --no-deps, as its Docker image does) into
its own virtual environment with the same pinned requirement set assay uses, then evaluates the
same samples on the same dataset file with the same parallelism: first the official harness
(`--execution local`, BIGCODEBENCH_OVERRIDE_PATH), then `assay eval` under each time policy
asked for (default: assay's own, then the official `--timeout 240`). Prints the wall times,
the ratios, how close assay came to its floor, and how many verdicts the two gave alike. The
floor is what no scheduler can beat without ending samples sooner: the samples' CPU time
divided by the jobs, or the longest sample that did not time out, whichever is longer.

    python3 bench/speed.py                       # the 1,140 reference solutions, v0.1.4
    python3 bench/speed.py --samples FILE --subset hard --version v0.1.2
    python3 bench/speed.py --tasks 20            # a quick look at the first 20 tasks

Both sides evaluate with their ground truth already known (the official one with --no_gt,
which leaves its 240 s limit unchanged; assay with its reference-run cache filled first, by
an untimed `assay check`): ground truth is a one-off cost per dataset and machine.
"""

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from cold_cache import cache_root

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED = REPO.parent / "shared"
OFFICIAL_VERSION = "0.2.5"


def run(command, **kwargs):
    print("$", " ".join(str(c) for c in command), file=sys.stderr)
    return subprocess.run(command, check=True, **kwargs)


def uv():
    found = shutil.which("uv")
    if found:
        return found
    cached = sorted((cache_root() / "tools").glob("uv-*/bin/uv"))
    if cached:
        return str(cached[-1])
    sys.exit("uv not found: run `assay env setup` once (it installs uv) or put uv on PATH")


def official_venv(work, python):
    venv = work / f"official-bigcodebench-{OFFICIAL_VERSION}"
    marker = venv / "assay-bench-ready"
    if marker.exists():
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    run([uv(), "venv", "--python", python, str(venv)])
    requirements = REPO / "crates" / "assay-pyenv" / "profiles" / "bigcodebench.txt"
    run([uv(), "pip", "install", "--python", str(venv / "bin" / "python"), "-r", str(requirements)])
    run([uv(), "pip", "install", "--python", str(venv / "bin" / "python"), "--no-deps",
         f"bigcodebench=={OFFICIAL_VERSION}"])
    marker.touch()
    return venv


def dataset_file(work, version, subset, tasks):
    """The dataset as one uncompressed file both sides read (the official override takes
    the file as the whole subset, so it holds exactly the tasks evaluated)."""
    source = SHARED / "data" / "bigcodebench" / f"BigCodeBench-{version}.jsonl.gz"
    hard = set(json.loads((SHARED / "data" / "bigcodebench" / "hard_task_ids.json").read_text()))
    rows = [json.loads(line) for line in gzip.open(source, "rt") if line.strip()]
    if subset == "full" and not tasks:
        return source, rows  # the file itself: assay's cache knows it as the embedded version
    if subset == "hard":
        rows = [r for r in rows if r["task_id"] in hard or r["task_id"].split("/")[1] in hard]
    if tasks:
        rows = rows[:tasks]
    path = work / f"BigCodeBench-{version}-{subset}-{len(rows)}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, rows


def reference_samples(path, rows):
    with open(path, "w") as f:
        for r in rows:
            solution = r["complete_prompt"] + "\n" + r["canonical_solution"]
            f.write(json.dumps({"task_id": r["task_id"], "solution": solution}) + "\n")


def timed(command, env=None, cwd=None):
    started = time.monotonic()
    run(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    return time.monotonic() - started


def verdicts_of_official(path):
    doc = json.loads(path.read_text())
    return {task: [e["status"] for e in entries] for task, entries in doc["eval"].items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", help="samples file (default: the reference solutions)")
    parser.add_argument("--subset", choices=["full", "hard"], default="full")
    parser.add_argument("--split", choices=["complete", "instruct"], default="complete")
    parser.add_argument("--version", default="v0.1.4")
    parser.add_argument("--tasks", type=int, default=0, help="only the first N tasks")
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--assay", default=str(REPO / "target" / "release" / "assay"))
    parser.add_argument("--python", default=shutil.which("python3.11") or sys.executable)
    parser.add_argument("--work", default=str(cache_root() / "bench"))
    parser.add_argument("--policies", default="default,240",
                        help="assay's time policies, in order: `default` or a fixed --timeout "
                             "in seconds (default: default,240)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    venv = official_venv(work, args.python)
    data, rows = dataset_file(work, args.version, args.subset, args.tasks)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_dir = work / f"run-{stamp}"
    run_dir.mkdir()
    # The official harness names its model after the file, up to "--bigcodebench-".
    name = f"bench--bigcodebench-{args.subset}-{args.split}--samples.jsonl"
    samples = run_dir / name
    if args.samples:
        wanted = {r["task_id"] for r in rows}
        lines = [l for l in Path(args.samples).read_text().splitlines()
                 if l.strip() and json.loads(l)["task_id"] in wanted]
        samples.write_text("\n".join(lines) + "\n")
    else:
        reference_samples(samples, rows)
    count = sum(1 for l in samples.read_text().splitlines() if l.strip())
    benchmark = "bigcodebench-hard" if args.subset == "hard" else "bigcodebench"

    # Untimed: fill assay's reference-run cache for these tasks.
    run([args.assay, "check", benchmark, "--dataset", str(data),
         "--jobs", str(args.jobs), "--json"], stdout=subprocess.DEVNULL)

    official_dir = run_dir / "official"
    official_dir.mkdir()
    shutil.copy(samples, official_dir / name)
    env = dict(os.environ, BIGCODEBENCH_OVERRIDE_PATH=str(data),
               XDG_CACHE_HOME=str(work / "official-cache"))
    official_seconds = timed(
        [str(venv / "bin" / "python"), "-m", "bigcodebench.evaluate",
         "--split", args.split, "--subset", args.subset, "--samples", str(official_dir / name),
         "--execution", "local", "--parallel", str(args.jobs), "--no_gt"],
        env=env, cwd=official_dir)

    official = verdicts_of_official(official_dir / name.replace(".jsonl", "_eval_results.json"))
    figures = {
        "samples": count, "jobs": args.jobs, "subset": args.subset, "version": args.version,
        "official_seconds": round(official_seconds, 1), "run": str(run_dir), "assay": {},
    }
    print(f"{count} samples, {args.jobs} jobs, {args.subset} {args.version}")
    print(f"  official evaluator {official_seconds:8.1f} s")
    for policy in args.policies.split(","):
        timeout = [] if policy == "default" else ["--timeout", policy]
        assay_out = run_dir / f"assay-{policy}"
        assay_seconds = timed(
            [args.assay, "eval", benchmark, "--samples", str(samples), "--split", args.split,
             "--dataset", str(data), "--jobs", str(args.jobs), "--out", str(assay_out),
             "--json", *timeout])
        figures["assay"][policy] = measure(assay_out, assay_seconds, official_seconds,
                                           official, args.jobs)
        label = "assay's default policy" if policy == "default" else f"--timeout {policy}"
        show(label, figures["assay"][policy], count)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


def measure(assay_out, assay_seconds, official_seconds, official, jobs):
    """One assay run's figures against the official run."""
    records = [json.loads(l) for l in (assay_out / "results.jsonl").read_text().splitlines() if l]
    cpu_floor = sum(r["cpu_seconds"] or 0 for r in records) / jobs
    longest = max((r["wall_seconds"] for r in records if r["status"] != "timeout"), default=0)
    floor = max(cpu_floor, longest)
    ours = {}
    for r in sorted(records, key=lambda r: r["index"]):
        ours.setdefault(r["task_id"], []).append(r["official"]["status"] if r["official"] else "infra")
    same = sum(a == b for t in official for a, b in zip(official[t], ours.get(t, [])))
    infra = sum(s == "infra" for v in ours.values() for s in v)
    hung = sorted((r["wall_seconds"], r["task_id"]) for r in records if r["status"] == "timeout")
    return {
        "assay_seconds": round(assay_seconds, 1),
        "ratio": round(official_seconds / assay_seconds, 2),
        "cpu_floor_seconds": round(cpu_floor, 1),
        "longest_not_hung_seconds": round(longest, 1),
        "floor_seconds": round(floor, 1),
        "over_floor": round(assay_seconds / floor, 2) if floor else None,
        "timeouts": [[task, round(wall, 1)] for wall, task in hung],
        "same_verdicts": same, "assay_infra": infra,
    }


def show(label, f, count):
    print(f"  assay eval, {label}: {f['assay_seconds']:.1f} s ({f['ratio']:.2f}x faster); "
          f"{f['over_floor']}x of its floor {f['floor_seconds']} s (CPU / jobs "
          f"{f['cpu_floor_seconds']} s, longest sample not timed out "
          f"{f['longest_not_hung_seconds']} s); timeouts {f['timeouts']}; same verdicts "
          f"{f['same_verdicts']} of {count} (assay infra: {f['assay_infra']})")


if __name__ == "__main__":
    main()
