#!/usr/bin/env python3
"""How long `assay run` takes beside its two halves: generation alone and evaluation alone.

A loopback server answers the Hard tasks with an official run's recorded answers (as
`bench/replay.py` does), each answer after a set delay, the model's time to answer. For each
delay it times, on the same answers:

- generation alone: `assay generate bigcodebench-hard`;
- evaluation alone: `assay eval bigcodebench-hard` of what it generated (the reference
  solutions' results already cached, as after any first run);
- `assay run bigcodebench-hard`, both at once;

and prints `run / max(generation, evaluation)` (1.0: a run takes as long as its slower half)
and `run / (generation + evaluation)` (1.0: the halves one after the other).

    python3 bench/pipeline.py [--assay target/release/assay] [--file NAME] [--delays auto|S,S,..]
                              [--out pipeline-runs] [-- RUN ARGS]

`--delays auto` picks three: generation much faster than evaluation (0.05 s an answer), about
as long (the delay that makes it so at --concurrency 8), and four times longer. Arguments after
`--` go to all three commands' judging (for example `--jobs 2`, not to generate).
"""

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

import parity
import replay

CONCURRENCY = 8


def timed(command):
    started = time.monotonic()
    done = subprocess.run(command, stdout=subprocess.DEVNULL)
    if done.returncode != 0:
        sys.exit(f"failed (exit {done.returncode}): {' '.join(command)}")
    return time.monotonic() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assay", default=str(parity.HERE.parent / "target" / "release" / "assay"))
    parser.add_argument("--file", help="the official run to answer with (default: the first)")
    parser.add_argument("--delays", default="auto")
    parser.add_argument("--out", default="pipeline-runs")
    parser.add_argument("judge_args", nargs="*", help="after --: passed to eval and run")
    args = parser.parse_args()
    files = sorted(parity.OFFICIAL.glob(f"*{parity.SUFFIX}.jsonl"))
    if args.file:
        files = [f for f in files if f.name.startswith(args.file)]
    if not files:
        sys.exit(f"no official run found in {parity.OFFICIAL}")
    samples_file = files[0]
    name = samples_file.name[: -len(f"{parity.SUFFIX}.jsonl")]
    model, _, split = name.partition("--bigcodebench-hard-")
    recorded = replay.Recorded(samples_file, split, replay.tasks())
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    common = ["bigcodebench-hard", "--version", parity.VERSION, "--split", split]

    def model_args(server):
        return ["--model", f"openai:{model}", "--base-url", f"http://127.0.0.1:{server.server_port}/v1",
                "--concurrency", str(CONCURRENCY)]

    def generate(delay, where):
        server = replay.serve(recorded, delay=delay)
        seconds = timed([args.assay, "generate", *common, *model_args(server), "--out", str(where)])
        server.shutdown()
        return seconds

    def evaluate(where, into):
        return timed([args.assay, "eval", *common, "--samples", str(where / "samples.jsonl"),
                      "--out", str(into), *args.judge_args])

    # Warm the reference cache, and measure evaluation alone on the answers.
    generate(0.0, out / "warm-generate")
    evaluate(out / "warm-generate", out / "warm-eval")
    evaluation = evaluate(out / "warm-generate", out / "eval")
    print(f"{name}: {len(recorded.answers)} answers; evaluation alone {evaluation:.1f} s", flush=True)
    if args.delays == "auto":
        equal = evaluation * CONCURRENCY / len(recorded.answers)
        delays = [0.05, equal, 4 * equal]
    else:
        delays = [float(d) for d in args.delays.split(",")]
    print(f"{'delay s':>8} {'generate s':>11} {'eval s':>8} {'run s':>8} {'run/max':>8} {'run/sum':>8}", flush=True)
    for delay in delays:
        generation = generate(delay, out / f"generate-{delay:.3f}")
        server = replay.serve(recorded, delay=delay)
        run = timed([args.assay, "run", *common, *model_args(server), "--out", str(out / f"run-{delay:.3f}"),
                     *args.judge_args])
        server.shutdown()
        print(f"{delay:>8.3f} {generation:>11.1f} {evaluation:>8.1f} {run:>8.1f} "
              f"{run / max(generation, evaluation):>8.2f} {run / (generation + evaluation):>8.2f}", flush=True)


if __name__ == "__main__":
    main()
