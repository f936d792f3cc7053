#!/usr/bin/env python3
"""assay's own memory as the samples grow: `assay eval` of an official run's answers repeated n
times each (a pass@k study, RL rollouts), at each n asked for, with the references measured
first. Prints the wall and the peak resident memory of the assay process itself (VmHWM; the
Python workers are apart), against n = the first n asked for: the target is a peak at the
largest n within 1.5x of the first, and a wall within 1.1x of linear. Then, at the first and
the largest n, `assay report` of the run and `assay merge` of the same answers judged as two
shards, by their peaks.

    python3 bench/memory.py [--assay target/release/assay] [--n 1,5,20] [--jobs 2]
        [--samples FILE] [--json out.json]

The default answers are checkpoint-400's 148 Hard Complete ones (v0.1.2, calibrated) from
../shared/data/bigcodebench/official-runs. Scratch goes under target/bench-memory/.
"""

import argparse
import json
import pathlib
import shutil

from peak_memory import timed

ROOT = pathlib.Path(__file__).resolve().parent.parent
HARD = ROOT.parent / "shared" / "data" / "bigcodebench" / "official-runs" / \
    "checkpoint-400--main--bigcodebench-hard-complete--vllm-0-1-sanitized_calibrated.jsonl"


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
    ends = sorted({rows[0]["n"], rows[-1]["n"]})
    for step in ("report", "merge"):
        peaks = {}
        for n in ends:
            run = scratch / f"run-n{n}"
            if step == "report":
                command = [args.assay, "report", str(run), "--html", str(scratch / f"report-n{n}.html")]
            else:
                samples = scratch / f"n{n}--bigcodebench-hard-complete--x.jsonl"
                shards = [scratch / f"shard-n{n}-{i}" for i in range(2)]
                for i, shard in enumerate(shards):
                    timed([args.assay, "eval", "bigcodebench-hard", "--samples", str(samples),
                           *common, "--shard", f"{i}/2", "--out", str(shard)], scratch)
                command = [args.assay, "merge", *map(str, shards), "--out",
                           str(scratch / f"merged-n{n}")]
            wall, rss = timed(command, scratch, workers=False)
            peaks[n] = rss
            over = rss / peaks[ends[0]]
            rows.append({step: n, "wall_seconds": round(wall, 1), "peak_rss_mib": round(rss, 1),
                         "peak_over_first": round(over, 2)})
            print(f"{step:6} n={n:3}: {wall:7.1f} s; assay's peak RSS {rss:6.1f} MiB "
                  f"({over:.2f}x n={ends[0]})", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
