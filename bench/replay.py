#!/usr/bin/env python3
"""The whole pipeline on the official runs: `assay run` against a model that answers what the
official runs' model answered.

A small OpenAI-compatible server on loopback answers each chat request with the recorded
`raw_solution` of the official run for the task in the prompt. `assay run bigcodebench-hard`
then asks it for every Hard task (official prompts, concurrency, retries), sanitizes the
answers, and evaluates them. Printed, per official-run file:

- the samples file assay wrote against the official one: rows identical byte for byte;
- the verdicts against the official ones (as bench/parity.py counts them).

    python3 bench/replay.py [--assay target/release/assay] [--out replay-runs] [-- RUN ARGS]

Arguments after `--` go to `assay run` (for example `--jobs 2`).

`--cold-references` gives each file's run a cache with no reference results (its own, under
--out, sharing the real cache's environments: bench/cold_cache.py), so that every sample starts
before its task's reference has been measured and takes its budgets when it ends: the verdicts
must be those of a run whose references were known first.

`--thinking MODE` answers the way a thinking model does, around the same recorded answers:
`text` (a draft program inside `<think>...</think>` before the answer), `opened` (the same with
only the closing tag: the chat template opened it), `field` (the draft in `reasoning_content`,
as vLLM's reasoning parser returns it), `cut` (`<think>` and the draft, never closed, finish
reason `length`: no answer). It prints how many sanitized solutions equal the official ones
(the thinking set apart, all should), and for `cut` how the answers were judged.
"""

import argparse
import gzip
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import parity
from cold_cache import cold_cache

DATASET = parity.OFFICIAL.parent / f"BigCodeBench-{parity.VERSION}.jsonl.gz"


def tasks():
    with gzip.open(DATASET, "rt") as f:
        return [json.loads(line) for line in f]


class Recorded:
    """The answers one official run recorded, found by the prompt they answered."""

    def __init__(self, samples_file, split, all_tasks):
        rows = [json.loads(line) for line in samples_file.read_text().splitlines()]
        by_id = {t["task_id"]: t for t in all_tasks}
        self.answers = [(by_id[r["task_id"]][f"{split}_prompt"].strip(), r["raw_solution"]) for r in rows]
        self.requests = 0
        self.lock = threading.Lock()

    def answer(self, message):
        with self.lock:
            self.requests += 1
        # The longest prompt contained in the message: some prompts contain shorter ones.
        found = [(len(p), raw) for p, raw in self.answers if p in message]
        return max(found)[1] if found else None


# What a thinking model drafts before its answer: a program of its own, which would be judged
# (and fail) if the thinking were taken for the answer.
DRAFT = ("Let me draft it first.\n```python\nimport os\n\ndef task_func(*args, **kwargs):\n"
         "    raise NotImplementedError('only a draft')\n```\nThat is not right yet; ")


def thinking_reply(text, mode):
    """The message and finish reason of a model that thinks as `mode` says, answering `text`."""
    if mode == "text":
        return {"role": "assistant", "content": f"<think>\n{DRAFT}\n</think>\n\n{text}"}, "stop"
    if mode == "opened":
        return {"role": "assistant", "content": f"{DRAFT}\n</think>\n\n{text}"}, "stop"
    if mode == "field":
        return {"role": "assistant", "content": text, "reasoning_content": DRAFT}, "stop"
    if mode == "cut":
        return {"role": "assistant", "content": f"<think>\n{DRAFT}let me think again"}, "length"
    return {"role": "assistant", "content": text}, "stop"


def serve(recorded, mode="none", delay=0.0):
    """A loopback server answering as `recorded` says, each answer `delay` seconds after its
    request (a model's time to answer)."""
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            time.sleep(delay)
            text = recorded.answer(body["messages"][0]["content"])
            if text is None:
                self.reply(404, {"error": {"message": "no recorded answer for this prompt", "type": "not_found"}})
                return
            message, finish = thinking_reply(text, mode)
            usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
            if mode != "none":
                usage = {"prompt_tokens": 100, "completion_tokens": 300, "total_tokens": 400,
                         "completion_tokens_details": {"reasoning_tokens": 120}}
            self.reply(200, {
                "id": "replay", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            })

        def reply(self, status, doc):
            data = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assay", default=str(parity.HERE.parent / "target" / "release" / "assay"))
    parser.add_argument("--out", default="replay-runs", help="where the run directories go")
    parser.add_argument("--thinking", default="none", choices=["none", "text", "opened", "field", "cut"],
                        help="answer as a thinking model does (see above)")
    parser.add_argument("--cold-references", action="store_true",
                        help="each file's run on a cache with no reference results (see above)")
    parser.add_argument("run_args", nargs="*", help="after --: passed to assay run")
    args = parser.parse_args()
    all_tasks = tasks()
    files = sorted(parity.OFFICIAL.glob(f"*{parity.SUFFIX}.jsonl"))
    if not files:
        sys.exit(f"no official runs found in {parity.OFFICIAL}")
    reports, identical_rows, rows_total = [], 0, 0
    for samples_file in files:
        name = samples_file.name[: -len(f"{parity.SUFFIX}.jsonl")]
        model, _, rest = name.partition("--bigcodebench-hard-")
        split = rest
        recorded = Recorded(samples_file, split, all_tasks)
        server = serve(recorded, args.thinking)
        run_dir = Path(args.out) / name
        started = time.monotonic()
        command = [args.assay, "run", "bigcodebench-hard", "--version", parity.VERSION, "--split", split,
                   "--model", f"openai:{model}", "--base-url", f"http://127.0.0.1:{server.server_port}/v1",
                   "--out", str(run_dir), "--json", *args.run_args]
        env = dict(os.environ)
        if args.cold_references:
            cache = cold_cache(Path(args.out).resolve() / f"{name}.cache")
            env["ASSAY_CACHE_DIR"] = str(cache)
        done = subprocess.run(command, stdout=subprocess.DEVNULL, env=env)
        server.shutdown()
        if done.returncode != 0:
            sys.exit(f"assay run failed on {name} (exit {done.returncode})")
        seconds = time.monotonic() - started
        ours = (run_dir / "samples.jsonl").read_text().splitlines()
        theirs = samples_file.read_text().splitlines()
        if args.thinking != "none":
            report_thinking(name, run_dir, ours, theirs, args.thinking)
            continue
        same = sum(a == b for a, b in zip(ours, theirs))
        identical_rows += same
        rows_total += len(theirs)
        print(f"{name}: {recorded.requests} requests; samples.jsonl rows identical to the official "
              f"file: {same}/{len(theirs)} (whole file identical: {ours == theirs}); {seconds:.0f} s")
        official = parity.official_verdicts(samples_file.with_name(samples_file.stem + "_eval_results.json"))
        reports.append(parity.compare(f"  verdicts {name}", official, parity.assay_verdicts(run_dir)))
    if not reports:
        return
    judged = sum(r["judged"] for r in reports)
    agree = sum(r["agree"] for r in reports)
    print(f"all files: samples rows identical {identical_rows}/{rows_total}; verdicts {agree}/{judged} agree "
          f"({agree / judged:.2%}); infra {sum(len(r['infra']) for r in reports)}")


def report_thinking(name, run_dir, ours, theirs, mode):
    """What became of the thinking: solutions against the official ones, raw answers kept whole,
    and (cut) how the answers without an answer were judged."""
    ours = [json.loads(line) for line in ours]
    theirs = [json.loads(line) for line in theirs]
    same = sum(a["solution"] == b["solution"] for a, b in zip(ours, theirs))
    whole = sum(a["raw_solution"] != b["raw_solution"] for a, b in zip(ours, theirs))
    line = (f"{name} ({mode}): sanitized solutions equal to the official ones {same}/{len(theirs)}; "
            f"raw answers holding their thinking {whole}/{len(theirs)}")
    results = run_dir / "results.jsonl"
    if results.exists():
        records = [json.loads(l) for l in results.read_text().splitlines()]
        statuses = {}
        for r in records:
            statuses[r["status"]] = statuses.get(r["status"], 0) + 1
        noted = sum(r["reason"].startswith("no answer: it ended inside its thinking") for r in records)
        line += f"; statuses {statuses}; reasons naming the cut thinking {noted}/{len(records)}"
    print(line)


if __name__ == "__main__":
    main()
