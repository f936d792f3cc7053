#!/usr/bin/env python3
"""Writes crates/assay-eval/data/reference_seconds.json: how long each slow BigCodeBench task's
reference solution took on the machine that runs this, from its reference-run caches.

assay starts the slowest work first so that it does not end a run alone; on a first run
nothing is measured yet, and this table, built into the binary, gives the order instead (only
the order: no limit or verdict depends on it). Tasks whose reference takes under a second are
left out (their order matters little). The slowest time over every cached dataset version and
environment is kept.

    python3 bench/reference_seconds.py [--cache ~/.cache/assay] [--min 1.0]
"""

import argparse
import glob
import json
import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "crates/assay-eval/data/reference_seconds.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", default=os.path.expanduser("~/.cache/assay"))
    parser.add_argument("--min", type=float, default=1.0)
    args = parser.parse_args()
    slowest: dict[str, float] = {}
    for results in glob.glob(f"{args.cache}/ground-truth/*/results.jsonl"):
        manifest = json.loads((pathlib.Path(results).parent / "manifest.json").read_text())
        if manifest.get("identity", {}).get("network"):
            continue
        for line in open(results):
            record = json.loads(line)
            if record["status"] == "infra":
                continue
            task = record["task_id"]
            slowest[task] = max(slowest.get(task, 0.0), record["wall_seconds"])
    kept = {
        task: round(seconds, 1)
        for task, seconds in sorted(slowest.items(), key=lambda kv: int(kv[0].split("/")[1]))
        if seconds >= args.min
    }
    OUT.write_text(json.dumps(kept, indent=1) + "\n")
    print(f"{OUT.relative_to(ROOT)}: {len(kept)} of {len(slowest)} tasks measured took {args.min} s or more")


if __name__ == "__main__":
    main()
