#!/usr/bin/env python3
"""Parity with the official BigCodeBench harness, measured.

Evaluates each official run's samples with `assay eval` (resumable: a finished run is not
recomputed) and compares assay's verdict of every sample with the official one. Prints, per
file: samples, agreement over the samples assay could judge, the samples assay reports as
`infra` (the environment lacks NLTK data or the internet; counted apart), and every
disagreement. docs/parity.md explains each disagreement.

    python3 bench/parity.py [--assay target/release/assay] [--out parity-runs] [-- EVAL ARGS]

Arguments after `--` go to `assay eval` (for example `--timeout 240`, `--jobs 2`).
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OFFICIAL = HERE.parent.parent / "shared" / "data" / "bigcodebench" / "official-runs"
SUFFIX = "--vllm-0-1-sanitized_calibrated"
# The official runs were made with dataset v0.1.2.
VERSION = "v0.1.2"


def official_verdicts(path):
    """(task_id, position within task) -> official status."""
    doc = json.loads(path.read_text())
    verdicts = {}
    for task_id, entries in doc["eval"].items():
        for position, entry in enumerate(entries):
            verdicts[(task_id, position)] = entry["status"]
    return verdicts


def assay_verdicts(run_dir):
    """(task_id, position within task) -> (assay status, official-shaped status or None, reason)."""
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines() if line.strip()]
    records.sort(key=lambda r: r["index"])
    positions = {}
    verdicts = {}
    for record in records:
        position = positions.get(record["task_id"], 0)
        positions[record["task_id"]] = position + 1
        official = record["official"]["status"] if record["official"] else None
        verdicts[(record["task_id"], position)] = (record["status"], official, record["reason"])
    return verdicts


def compare(name, official, assay):
    agree, infra, disagree, missing = 0, [], [], []
    for key, want in sorted(official.items(), key=lambda kv: (int(kv[0][0].split("/")[1]), kv[0][1])):
        got = assay.get(key)
        if got is None:
            missing.append(key[0])
        elif got[1] is None:
            infra.append((key[0], want, got[2]))
        elif got[1] == want:
            agree += 1
        else:
            disagree.append((key[0], want, got[1], got[2]))
    judged = agree + len(disagree)
    rate = agree / judged if judged else 0.0
    print(f"{name}: {agree}/{judged} agree ({rate:.2%}); infra {len(infra)}; samples {len(official)}")
    for task, want, got, reason in disagree:
        print(f"  differs  {task}: official {want}, assay {got} ({reason.splitlines()[0][:120]})")
    for task, want, reason in infra:
        print(f"  infra    {task}: official {want}; {reason.splitlines()[0][:120]}")
    for task in missing:
        print(f"  missing  {task}: no assay verdict")
    return {"file": name, "samples": len(official), "agree": agree, "judged": judged,
            "agreement": rate, "infra": [t for t, _, _ in infra],
            "disagreements": [{"task_id": t, "official": w, "assay": g, "reason": r} for t, w, g, r in disagree]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assay", default=str(HERE.parent / "target" / "release" / "assay"))
    parser.add_argument("--out", default="parity-runs", help="where the run directories go")
    parser.add_argument("--official", default=str(OFFICIAL), help="the official-runs folder")
    parser.add_argument("--compare-only", action="store_true", help="compare existing runs, evaluate nothing")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("eval_args", nargs="*", help="after --: passed to assay eval")
    args = parser.parse_args()
    samples = sorted(Path(args.official).glob(f"*{SUFFIX}.jsonl"))
    if not samples:
        sys.exit(f"no official runs found in {args.official}")
    reports = []
    for sample_file in samples:
        name = sample_file.name[: -len(f"{SUFFIX}.jsonl")]
        run_dir = Path(args.out) / name
        seconds = None
        if not args.compare_only:
            started = time.monotonic()
            command = [args.assay, "eval", "bigcodebench-hard", "--samples", str(sample_file),
                       "--version", VERSION, "--out", str(run_dir), "--json", *args.eval_args]
            done = subprocess.run(command, stdout=subprocess.DEVNULL)
            if done.returncode != 0:
                sys.exit(f"assay eval failed on {sample_file.name} (exit {done.returncode})")
            seconds = time.monotonic() - started
        if not (run_dir / "results.jsonl").exists():
            print(f"{name}: no assay run in {run_dir}")
            continue
        official = official_verdicts(sample_file.with_name(sample_file.stem + "_eval_results.json"))
        report = compare(name, official, assay_verdicts(run_dir))
        if seconds is not None:
            print(f"  evaluated in {seconds:.0f} s (a finished run is not recomputed)")
            report["seconds"] = round(seconds, 1)
        reports.append(report)
    if not reports:
        sys.exit("nothing to compare")
    judged = sum(r["judged"] for r in reports)
    agree = sum(r["agree"] for r in reports)
    print(f"all files: {agree}/{judged} agree ({agree / judged:.2%}); "
          f"infra {sum(len(r['infra']) for r in reports)}")
    if args.json:
        Path(args.json).write_text(json.dumps(reports, indent=2) + "\n")


if __name__ == "__main__":
    main()
