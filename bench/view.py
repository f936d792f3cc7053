#!/usr/bin/env python3
"""`assay view` on full-size runs: how long each answer the page waits for takes.

Builds RUNS run directories of the full BigCodeBench shape (1,140 tasks x 5 samples) from a
real run directory's records (TEMPLATE: any BigCodeBench run or eval directory), each sample
carrying a traceback and a few KiB of output as real failing samples do, then serves them all
with `assay view` and times, over HTTP as the page asks:

- the runs list, first (every run read and its interval bootstrapped) and again;
- the first page of a run's table, a status filter, an error-text search, a deep page;
- one sample's detail, and the diff of two runs.

    python3 bench/view.py TEMPLATE [--assay target/release/assay] [--runs 4] [--out view-bench]
"""

import argparse
import json
import random
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

TASKS = 1140
SAMPLES = 5
STATUSES = ["pass", "pass", "fail", "fail", "error", "timeout"]


def records(template):
    path = template / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def build(template, out, seed):
    """A run directory of TASKS x SAMPLES samples made from the template's records."""
    rng = random.Random(seed)
    source = records(template)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    manifest = json.loads((template / "manifest.json").read_text())
    manifest["identity"]["benchmark"] = "bigcodebench"
    (out / "manifest.json").write_text(json.dumps(manifest))
    traceback = "Traceback (most recent call last):\n" + '  File "__test__.py", line 12, in test\n' * 30
    with open(out / "results.jsonl", "w") as results, open(out / "samples.jsonl", "w") as samples:
        for index in range(TASKS * SAMPLES):
            task = f"BigCodeBench/{index // SAMPLES}"
            record = dict(rng.choice(source))
            status = rng.choice(STATUSES)
            record.update(index=index, task_id=task, status=status)
            record["reason"] = "all tests passed" if status == "pass" else f"AssertionError: {rng.random()}"
            record["tests"] = [
                {"name": f"test_case_{n}", "result": "pass" if status == "pass" else "fail",
                 "detail": "" if status == "pass" else traceback + f"AssertionError: {n} != {rng.randint(0, 9)}",
                 "seconds": 0.01}
                for n in range(5)
            ]
            record["stdout"] = {"text": "x" * 4096, "total_bytes": 4096, "truncated": False}
            results.write(json.dumps(record) + "\n")
            samples.write(json.dumps({"task_id": task, "solution": "def task_func():\n    pass\n" * 60}) + "\n")
    (out / "summary.json").write_text(json.dumps({"wall_seconds": 1.0}))
    return out


def timed(url):
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as response:
        body = response.read()
    return (time.perf_counter() - start) * 1000, len(body)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("template", type=Path)
    parser.add_argument("--assay", default="target/release/assay")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--out", type=Path, default=Path("view-bench"))
    args = parser.parse_args()

    dirs = [build(args.template, args.out / f"run{n}", n) for n in range(args.runs)]
    size = sum(f.stat().st_size for d in dirs for f in d.iterdir()) / 2**20
    print(f"{len(dirs)} runs of {TASKS * SAMPLES} samples, {size:.0f} MiB on disk")
    server = subprocess.Popen([args.assay, "view", "--port", "0", *map(str, dirs)],
                              stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().split("at ")[1].split()[0].rstrip("/")
        for name, path in [
            ("runs list, first", "/api/runs"),
            ("runs list, again", "/api/runs"),
            ("table, first page", "/api/runs/0/samples?limit=100"),
            ("table, status=fail", "/api/runs/0/samples?status=fail&limit=100"),
            ("table, error text", "/api/runs/0/samples?q=assertionerror%3A%203%20!%3D%207&limit=100"),
            ("table, page 50", "/api/runs/0/samples?offset=5000&limit=100"),
            ("sample detail", "/api/runs/0/samples/4321"),
            ("diff of two runs", "/api/diff?base=0&run=1"),
        ]:
            ms, size = timed(url + path)
            print(f"{name:<22} {ms:8.1f} ms  {size / 1024:8.1f} KiB")
    finally:
        server.kill()


if __name__ == "__main__":
    main()
