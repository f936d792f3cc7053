#!/usr/bin/env python3
"""The official runs verified over HTTP: `assay serve` gives the verdicts `assay eval` gives.

Each official run's recorded raw answers (`raw_solution`) are sent to a real `assay serve
--version v0.1.2` through `POST /v1/bigcodebench/verify_batch` as raw `answer`s, so the
service sanitizes them itself. Printed, per official-run file:

- how many of the service's sanitized solutions equal the official `solution` field;
- the service's verdicts against the official ones (as bench/parity.py counts them);
- the service's verdicts against `assay eval`'s of the same file, sample by sample (status,
  official status, the tests the official details name, the digest of the program run; not
  the tracebacks' text, which holds what differs from run to run: object addresses, mock ids,
  temporary paths, times): all should be identical.

    python3 bench/serve_parity.py [--assay target/release/assay] [--out serve-parity] [--jobs 2]

`assay eval` runs first into OUT/<file> (resumable: a finished run is not recomputed; point
--out at a bench/parity.py output folder to reuse its runs).
"""

import argparse
import http.client
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import parity

# The longest a whole file may take through the service (148 answers, the slowest at 240 s).
FILE_TIMEOUT = 3600
START_TIMEOUT = 900


def start_server(assay, jobs):
    """`assay serve` on a free port; (process, port) once it listens."""
    process = subprocess.Popen(
        [assay, "serve", "--port", "0", "--version", parity.VERSION, "--jobs", str(jobs)],
        stdout=subprocess.PIPE, text=True)
    line = []
    reader = threading.Thread(target=lambda: line.append(process.stdout.readline()), daemon=True)
    reader.start()
    reader.join(START_TIMEOUT)
    prefix = "assay serve: listening on http://127.0.0.1:"
    if not line or not line[0].startswith(prefix):
        process.kill()
        sys.exit(f"assay serve did not start: {line!r}")
    return process, int(line[0][len(prefix):].strip().rstrip("/"))


def verify_all(port, rows):
    """Every row's raw answer through verify_batch; id (the row's index) -> result."""
    body = json.dumps({"requests": [
        {"id": i, "task_id": row["task_id"], "answer": row["raw_solution"]} for i, row in enumerate(rows)
    ]})
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=FILE_TIMEOUT)
    connection.request("POST", "/v1/bigcodebench/verify_batch", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    if response.status != 200:
        sys.exit(f"verify_batch answered {response.status}: {response.read()[:500]!r}")
    results = {}
    for line in response:
        if line.strip():
            result = json.loads(line)
            if "error" in result:
                sys.exit(f"row {result['id']}: {result['error']}")
            results[result["id"]] = result
    connection.close()
    return results


def verdict(result):
    """What must be the same between the service and assay eval: the statuses, the program
    run, and which tests the official details name. (The details' text is not compared: it
    holds what differs from run to run, object addresses, mock ids, temporary paths, times.)"""
    official = result.get("official") or {}
    return (result.get("status"), official.get("status"), sorted(official.get("details") or {}),
            result.get("program_digest"))


def served_verdicts(rows, results):
    """(task_id, position within task) -> (status, official status or None, reason)."""
    positions, verdicts = {}, {}
    for i, row in enumerate(rows):
        position = positions.get(row["task_id"], 0)
        positions[row["task_id"]] = position + 1
        result = results[i]
        verdicts[(row["task_id"], position)] = (result["status"], result["official_status"], result["reason"])
    return verdicts


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assay", default=str(parity.HERE.parent / "target" / "release" / "assay"))
    parser.add_argument("--out", default="serve-parity", help="where assay eval's run directories go")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    files = sorted(parity.OFFICIAL.glob(f"*{parity.SUFFIX}.jsonl"))
    if not files:
        sys.exit(f"no official runs in {parity.OFFICIAL}")
    for sample_file in files:
        name = sample_file.name[: -len(f"{parity.SUFFIX}.jsonl")]
        command = [args.assay, "eval", "bigcodebench-hard", "--samples", str(sample_file), "--version",
                   parity.VERSION, "--out", str(Path(args.out) / name), "--jobs", str(args.jobs), "--json"]
        if subprocess.run(command, stdout=subprocess.DEVNULL).returncode != 0:
            sys.exit(f"assay eval failed on {sample_file.name}")
    process, port = start_server(args.assay, args.jobs)
    reports = []
    try:
        for sample_file in files:
            name = sample_file.name[: -len(f"{parity.SUFFIX}.jsonl")]
            rows = [json.loads(line) for line in sample_file.read_text().splitlines() if line.strip()]
            started = time.monotonic()
            results = verify_all(port, rows)
            seconds = time.monotonic() - started
            same_solution = sum(results[i]["solution"] == row["solution"] for i, row in enumerate(rows))
            print(f"{name}: {same_solution}/{len(rows)} sanitized solutions equal the official ones "
                  f"({seconds:.0f} s through the service)")
            official = parity.official_verdicts(sample_file.with_name(sample_file.stem + "_eval_results.json"))
            report = parity.compare(name, official, served_verdicts(rows, results))
            evaluated = [json.loads(line) for line in (Path(args.out) / name / "results.jsonl").read_text().splitlines()]
            by_index = {r["index"]: r for r in evaluated}
            differ = []
            for i in range(len(rows)):
                served, record = results[i], by_index.get(i)
                if record is None or verdict(served) != verdict(record):
                    differ.append(rows[i]["task_id"])
            print(f"  against assay eval: {len(rows) - len(differ)}/{len(rows)} identical"
                  + (f"; differ: {', '.join(differ)}" if differ else ""))
            report.update({"seconds": round(seconds, 1), "same_solution": same_solution,
                           "identical_to_eval": len(rows) - len(differ), "differ_from_eval": differ})
            reports.append(report)
    finally:
        process.terminate()
        process.wait(timeout=60)
    identical = sum(r["identical_to_eval"] for r in reports)
    samples = sum(r["samples"] for r in reports)
    agree = sum(r["agree"] for r in reports)
    judged = sum(r["judged"] for r in reports)
    print(f"all files: {identical}/{samples} identical to assay eval; {agree}/{judged} agree with the official "
          f"verdicts ({agree / judged:.2%})")
    if args.json:
        Path(args.json).write_text(json.dumps(reports, indent=2) + "\n")


if __name__ == "__main__":
    main()
