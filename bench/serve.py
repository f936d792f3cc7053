#!/usr/bin/env python3
"""`assay serve` under many concurrent clients, against `assay eval` and against a verifier that
starts a fresh Python process per request (NeMo Gym's BigCodeBench resources server's design).

Everything runs on this machine in one run, one system at a time, with the same --jobs:

- trivial answers: one fast task's reference solution (BigCodeBench/97 of v0.1.4, six tests on
  `math`/`itertools`, ~6 ms of tests) sent N times as a whole program (`solution`), through
  `POST /v1/bigcodebench/verify` and through the baseline: the fixed cost of a verification;
- Hard answers: an official run's answers (default: checkpoint-400's Hard Complete samples of
  ../shared/data/bigcodebench/official-runs, 148 answers, dataset v0.1.2, calibrated), once
  each: through `assay eval bigcodebench-hard` (the CLI's wall for the same work; the target is
  server wall <= 1.1x CLI wall), through `assay serve` twice, the answers sent in the file's
  order and then in assay eval's (longest expected first: the reference's time or the task's
  samples' in earlier evaluations, from the reference-run cache), one request per answer,
  then all in one `verify_batch` (which starts them longest first itself), and through the
  baseline (file order);
- sessions: trivial cells through `POST /v1/sessions/{id}/execute` on many sessions at once
  (cells per second), then rounds of create, one cell, delete (create and delete p50/p99);
  sessions run in the `pybench` environment (`assay serve --sessions-profile pybench`: they
  need IPython, which the bigcodebench environment lacks).

The baseline is written here (not NeMo Gym's code), after the behaviour NeMo Gym documents: a
stdlib ThreadingHTTPServer whose `POST /verify` waits on a semaphore of --jobs, then spawns
`python runner.py` (a fresh interpreter) that reads {code, test_code, entry_point, limits} on
stdin, calls the official `bigcodebench.eval.untrusted_check` (bigcodebench==0.2.5, the latest
on PyPI, installed --no-deps into <work>/bcb-0.2.5 and put on PYTHONPATH) with gt_time_limit
20, min_time_limit 1 and 30720 MiB address-space/data limits (10 MiB stack), and prints
{status, details}; an outer 240 s timeout kills the runner's process group (status `timeout`).
Its interpreter is assay's own bigcodebench environment (~/.cache/assay/envs/bigcodebench-*),
which already holds the evaluation libraries. The body carries the task's test, entry point
and code prompt, as NeMo Gym's `verifier_metadata` does; calibration prepends
`code_prompt + "\\n    pass\\n"` as the official harness and NeMo Gym do.

Both sides are measured warm: the reference-run cache (~/.cache/assay/ground-truth) is filled
first by an untimed `assay check` for the tasks used (the baseline needs none: gt_time_limit is
fixed), and each server answers a few unmeasured trivial requests before its first workload.
Clients are threads, each sending its next request when the last one is answered (default
2 x --jobs of them), a new HTTP/1.1 connection per request; a 503 is retried after its
Retry-After. Latency is the client's, from sending to the whole answer read, so it includes
the wait for a free job (the clients outnumber the jobs).

    python3 bench/serve.py [--assay target/release/assay] [--jobs 2] [--out serve.json]
    python3 bench/serve.py --quick                 # a few minutes: fewer requests, 60 Hard answers
    python3 bench/serve.py --parts baseline        # only some parts: cli,serve,sessions,baseline

On 2 cores (--jobs 2) the default run took 10.5 min, most of it the baseline's (its Hard run
waits 240 s on task 1040's answer), and --quick 3.5 min.

Prints one table (workload, system, n, concurrency, wall s, per second, p50 ms, p99 ms), the
ratios against their targets, how the verdicts agree (server against CLI; baseline and server
against the official verdicts), the load average before and after (other work on the machine
distorts every figure), and any answer that does not match the draft API spec
(/work/spec/serve-api.md) in what this bench reads: the fields of /health, verify and execute,
the /metrics names, the answer to a verify sent without a JSON Content-Type. Scratch files go
under target/bench-serve/ (the sandbox refuses Python environments under /tmp).
"""

import argparse
import collections
import concurrent.futures
import glob
import gzip
import http.client
import json
import math
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from cold_cache import cache_root

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = REPO.parent / "shared" / "data" / "bigcodebench"
OFFICIAL_RUN = DATA / "official-runs" / \
    "checkpoint-400--main--bigcodebench-hard-complete--vllm-0-1-sanitized_calibrated.jsonl"
OFFICIAL_VERSION = "0.2.5"  # bigcodebench on PyPI: the latest, and the harness assay follows
TRIVIAL_TASK = "BigCodeBench/97"
TRIVIAL_VERSION = "v0.1.4"
# NeMo Gym's BigCodeBench resources server configuration (docs/research/verifiers.md section 1).
LIMITS = {"max_as_limit": 30720, "max_data_limit": 30720, "max_stack_limit": 10,
          "min_time_limit": 1.0, "gt_time_limit": 20.0}
OUTER_TIMEOUT = 240.0
# The orders Hard answers are sent in: row labels, keys of the JSON.
ORDER_LABEL = {"file": " (file order)", "eval": " (assay eval's order)",
               "batch": " (one verify_batch)"}
ORDER_KEY = {"file": "", "eval": "_eval_order", "batch": "_batch"}

# What the spec says each answer holds (only the routes this bench calls).
VERIFY_KEYS = ["id", "task_id", "version", "split", "status", "official_status", "reason",
               "solution", "tests", "integrity", "time_limit_seconds", "reference_seconds",
               "wall_seconds", "cpu_seconds", "memory_peak_bytes", "stdout", "stderr"]
VERIFY_STATUSES = {"pass", "fail", "error", "timeout", "oom", "infra"}
HEALTH_KEYS = ["status", "version", "profile", "jobs", "max_jobs", "isolation", "queue", "sessions"]
HEALTH_QUEUE_KEYS = ["waiting", "running", "capacity"]
HEALTH_SESSIONS_KEYS = ["live", "max"]
METRICS = ["assay_requests_total", "assay_queue_waiting", "assay_jobs_running",
           "assay_verdicts_total", "assay_job_seconds_sum", "assay_job_seconds_count",
           "assay_sessions_live"]
EXECUTE_KEYS = ["status", "reason", "text", "stdout", "result", "error", "figures",
                "session_alive", "wall_seconds"]

RUNNER = r'''"""One verification in a fresh interpreter: {code, test_code, entry_point,
limits} on stdin, the official untrusted_check, {status, details} as stdout's last line."""
import json
import sys

from bigcodebench.eval import untrusted_check

request = json.load(sys.stdin)
limits = request["limits"]
status, details = untrusted_check(
    request["code"], request["test_code"], request["entry_point"],
    limits["max_as_limit"], limits["max_data_limit"], limits["max_stack_limit"],
    limits["min_time_limit"], limits["gt_time_limit"])
sys.stdout.write("\n" + json.dumps({"status": status, "details": dict(details)}) + "\n")
sys.stdout.flush()
'''


# ---------------------------------------------------------------------------------------------
# The baseline server (run as `python3 bench/serve.py --baseline-server ...`, its own process).

def baseline_server(argv):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    parser = argparse.ArgumentParser(prog="serve.py --baseline-server")
    parser.add_argument("--baseline-server", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--jobs", type=int, required=True)
    parser.add_argument("--python", required=True)
    parser.add_argument("--bcb-path", required=True)
    parser.add_argument("--runner", required=True)
    parser.add_argument("--cwd", required=True)
    args = parser.parse_args(argv)

    slots = threading.Semaphore(args.jobs)
    live = set()
    live_lock = threading.Lock()
    env = dict(os.environ, PYTHONPATH=args.bcb_path)

    def verify(body):
        code = body["solution"]
        if body.get("calibrated", True):
            code = body["code_prompt"] + "\n    pass\n" + code
        request = json.dumps({"code": code, "test_code": body["test"],
                              "entry_point": body["entry_point"], "limits": LIMITS})
        with slots:
            started = time.monotonic()
            process = subprocess.Popen([args.python, args.runner], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       cwd=args.cwd, env=env, text=True, start_new_session=True)
            with live_lock:
                live.add(process)
            try:
                out, err = process.communicate(request, timeout=OUTER_TIMEOUT)
            except subprocess.TimeoutExpired:
                kill_group(process)
                process.communicate()
                return {"status": "timeout", "details": {"reason": "outer_subprocess_timeout"}}, \
                    time.monotonic() - started
            finally:
                kill_group(process)  # what untrusted_check left behind, if anything
                with live_lock:
                    live.discard(process)
            seconds = time.monotonic() - started
        for line in reversed(out.splitlines()):
            if line.startswith("{"):
                try:
                    return json.loads(line), seconds
                except ValueError:
                    break
        return {"status": "error", "details": {"stdout": out[-2000:], "stderr": err[-2000:]}}, \
            seconds

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def reply(self, code, doc):
            data = json.dumps(doc).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.reply(200, {"status": "ok"})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            if self.path != "/verify":
                return self.reply(404, {"error": f"no route {self.path}"})
            try:
                result, seconds = verify(body)
            except Exception as e:  # a harness failure, never a verdict
                return self.reply(500, {"error": repr(e)})
            self.reply(200, {"id": body.get("id"), "task_id": body.get("task_id"),
                             "status": result.get("status"), "details": result.get("details"),
                             "wall_seconds": seconds})

        def log_message(self, *args):
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 256

    server = Server(("127.0.0.1", args.port), Handler)

    def stop(*_):
        with live_lock:
            for process in list(live):
                kill_group(process)
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"baseline: listening on http://127.0.0.1:{server.server_address[1]}/", flush=True)
    server.serve_forever()


def kill_group(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# ---------------------------------------------------------------------------------------------
# Processes: started, their listening line awaited (bounded), stopped.

class Service:
    def __init__(self, name, command, pattern, log, timeout, env=None):
        self.name = name
        self.log = open(log, "w")
        self.log_path = log
        print("$", " ".join(str(c) for c in command), file=sys.stderr)
        self.process = subprocess.Popen([str(c) for c in command], stdout=subprocess.PIPE,
                                        stderr=self.log, stdin=subprocess.DEVNULL, text=True,
                                        env=env, cwd=REPO)
        lines = queue.Queue()

        def drain():
            for line in self.process.stdout:
                lines.put(line)
                try:
                    self.log.write("[stdout] " + line)
                    self.log.flush()
                except ValueError:  # the log closed: the service stopped
                    pass
            lines.put(None)

        threading.Thread(target=drain, daemon=True).start()
        deadline = time.monotonic() + timeout
        self.stdout_lines = []
        while True:
            remaining = deadline - time.monotonic()
            try:
                line = lines.get(timeout=max(0.0, remaining))
            except queue.Empty:
                self.stop()
                sys.exit(f"{name}: no listening line within {timeout:.0f} s (log: {log})")
            if line is None:
                code = self.process.wait(timeout=10)
                sys.exit(f"{name}: exited {code} before listening (log: {log}):\n"
                         + tail(log))
            self.stdout_lines.append(line.rstrip("\n"))
            found = re.search(pattern, line)
            if found:
                self.url = found.group(1)
                self.host, port = re.match(r"http://([^:/]+):(\d+)/", self.url).groups()
                self.port = int(port)
                return

    def stop(self, timeout=30):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                print(f"{self.name}: not stopped {timeout} s after SIGTERM; killed",
                      file=sys.stderr)
                self.process.kill()
                self.process.wait(timeout=10)
        self.log.close()
        return self.process.returncode


def tail(path, chars=3000):
    try:
        return Path(path).read_text(errors="replace")[-chars:]
    except OSError:
        return ""


# ---------------------------------------------------------------------------------------------
# The client.

class Reply:
    __slots__ = ("code", "doc", "seconds", "retries", "error", "started")

    def __init__(self, code, doc, seconds, retries, error=None):
        self.code, self.doc, self.seconds, self.retries, self.error = \
            code, doc, seconds, retries, error
        self.started = time.monotonic() - seconds


def call(host, port, method, path, body=None, timeout=600.0):
    """One request (503s retried after Retry-After, within `timeout`): a Reply."""
    started = time.monotonic()
    deadline = started + timeout
    data = None if body is None else json.dumps(body).encode()
    retries = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return Reply(None, None, time.monotonic() - started, retries, "deadline")
        connection = http.client.HTTPConnection(host, port, timeout=remaining)
        try:
            headers = {"Content-Type": "application/json"} if data is not None else {}
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            raw = response.read()
            code = response.status
            retry_after = response.getheader("Retry-After")
        except (OSError, http.client.HTTPException) as e:
            return Reply(None, None, time.monotonic() - started, retries, repr(e))
        finally:
            connection.close()
        if code == 503 and retries < 1000:
            retries += 1
            try:
                wait = float(retry_after) if retry_after else 0.5
            except ValueError:
                wait = 0.5
            time.sleep(max(0.05, min(wait, 10.0, deadline - time.monotonic())))
            continue
        try:
            doc = json.loads(raw) if raw else None
        except ValueError:
            doc = raw.decode(errors="replace")
        return Reply(code, doc, time.monotonic() - started, retries)


def batch(host, port, bodies, timeout):
    """All of `bodies` in one `POST /v1/bigcodebench/verify_batch`, its NDJSON read line by
    line as each answer finishes: (wall, a Reply per body in the bodies' order, its latency
    the time from sending the batch to that answer's line)."""
    started = time.monotonic()
    requests = [dict(body, id=i) for i, body in enumerate(bodies)]
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    replies = [None] * len(bodies)
    try:
        connection.request("POST", "/v1/bigcodebench/verify_batch",
                           body=json.dumps({"requests": requests}),
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        if response.status != 200:
            raise SystemExit(f"verify_batch: HTTP {response.status}: {response.read()[:300]!r}")
        for line in response:
            if line.strip():
                doc = json.loads(line)
                replies[doc["id"]] = Reply(200, doc, time.monotonic() - started, 0)
    finally:
        connection.close()
    wall = time.monotonic() - started
    return wall, [r or Reply(None, None, wall, 0, "no line") for r in replies]


def load(host, port, path, bodies, concurrency, request_timeout, bound):
    """Send every body (POST `path`) from `concurrency` threads: (wall seconds, [Reply])."""
    replies = [None] * len(bodies)
    started = time.monotonic()
    futures = bounded(concurrency, [(call, host, port, "POST", path, body, request_timeout)
                                    for body in bodies], bound, f"requests to {path}")
    wall = time.monotonic() - started
    for i, f in enumerate(futures):
        replies[i] = f.result()
        replies[i].started -= started  # from the workload's start
    return wall, replies


def timeline(bodies, replies):
    """Per request: task, client start and end (s from the workload's start), the job's wall."""
    return [[b["task_id"], round(r.started, 3), round(r.started + r.seconds, 3),
             r.doc.get("wall_seconds") if isinstance(r.doc, dict) else None]
            for b, r in zip(bodies, replies)]


def bounded(threads, calls, bound, what):
    """Run the calls on `threads` threads, all done within `bound` seconds or exit (the
    servers are stopped on the way out, which ends the requests still waiting)."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=threads)
    futures = [pool.submit(*c) for c in calls]
    done, pending = concurrent.futures.wait(futures, timeout=bound)
    pool.shutdown(wait=not pending, cancel_futures=True)
    if pending:
        raise SystemExit(f"{len(pending)} of {len(futures)} {what} unfinished after "
                         f"{bound:.0f} s")
    return futures


def percentile(values, p):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(p * len(ordered)) - 1))]


def row(workload, system, n, concurrency, wall=None, latencies=(), count=None, note=""):
    """One line of the table; `count` (default n) is what per second counts."""
    latencies = list(latencies)
    count = n if count is None else count
    return {
        "workload": workload, "system": system, "n": n, "concurrency": concurrency,
        "wall_seconds": None if wall is None else round(wall, 3),
        "per_second": None if not wall else round(count / wall, 3),
        "p50_ms": None if not latencies else round(1000 * percentile(latencies, 0.50), 1),
        "p99_ms": None if not latencies else round(1000 * percentile(latencies, 0.99), 1),
        "note": note,
    }


def outcome(replies, key="status"):
    """Counts of the answers' `key` (or the HTTP failure) as a short note."""
    counts = collections.Counter()
    for r in replies:
        if r.error:
            counts[f"client error {r.error.split('(')[0]}"] += 1
        elif r.code != 200:
            counts[f"HTTP {r.code}"] += 1
        elif isinstance(r.doc, dict):
            counts[str(r.doc.get(key))] += 1
        else:
            counts["not JSON"] += 1
    retries = sum(r.retries for r in replies)
    note = " ".join(f"{k}:{v}" for k, v in sorted(counts.items()))
    return note + (f" (503 retried {retries}x)" if retries else ""), counts


# ---------------------------------------------------------------------------------------------
# Data.


def dataset(version):
    with gzip.open(DATA / f"BigCodeBench-{version}.jsonl.gz", "rt") as f:
        return {t["task_id"]: t for t in map(json.loads, f) if t}


def hard_samples(path, limit):
    """The samples of the Hard tasks (a full run's file is filtered to the 148 Hard ids)."""
    hard = set(json.loads((DATA / "hard_task_ids.json").read_text()))
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["task_id"] in hard]
    return rows[:limit] if limit else rows


def official_verdicts(samples_path):
    """task_id -> the official status of its first sample, when the results file is beside."""
    results = Path(str(samples_path).replace(".jsonl", "_eval_results.json"))
    if not results.exists():
        return {}
    doc = json.loads(results.read_text())
    return {task: entries[0]["status"] for task, entries in doc["eval"].items() if entries}


def run(command, timeout, **kwargs):
    print("$", " ".join(str(c) for c in command), file=sys.stderr)
    try:
        return subprocess.run([str(c) for c in command], timeout=timeout, check=True, **kwargs)
    except subprocess.TimeoutExpired:
        sys.exit(f"not done within {timeout} s: {' '.join(str(c) for c in command)}")
    except subprocess.CalledProcessError as e:
        sys.exit(f"exit {e.returncode}: {' '.join(str(c) for c in command)}")


# ---------------------------------------------------------------------------------------------
# The parts.

def part_cli(args, work, samples_file, tasks):
    out = work / "cli-eval"
    command = [args.assay, "eval", "bigcodebench-hard", "--samples", samples_file,
               "--version", args.version, "--split", args.split, "--jobs", args.jobs,
               "--out", out, "--json"]
    if args.hard_n:
        command += ["--tasks", ",".join(tasks)]
    started = time.monotonic()
    run(command, args.bound, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - started
    records = [json.loads(l) for l in (out / "results.jsonl").read_text().splitlines() if l]
    statuses = {r["task_id"]: r["status"] for r in records}
    officials = {r["task_id"]: (r["official"] or {}).get("status") for r in records}
    note = " ".join(f"{k}:{v}" for k, v in sorted(collections.Counter(statuses.values()).items()))
    return row(f"Hard answers{ORDER_LABEL['eval']}", "assay eval (CLI)", len(records),
               f"jobs {args.jobs}", wall, note=note), statuses, officials


def check_keys(deviations, where, doc, keys):
    if not isinstance(doc, dict):
        deviations.add(f"{where}: answer is not a JSON object: {str(doc)[:200]}")
        return
    missing = [k for k in keys if k not in doc]
    if missing:
        deviations.add(f"{where}: missing {', '.join(missing)} (has {', '.join(sorted(doc))})")


def verify_deviations(deviations, replies, bodies):
    for reply, body in zip(replies, bodies):
        if reply.code != 200:
            if reply.code is not None:
                deviations.add(f"POST /v1/bigcodebench/verify: HTTP {reply.code} for "
                               f"{body['task_id']}: {str(reply.doc)[:300]}")
            continue
        check_keys(deviations, "POST /v1/bigcodebench/verify", reply.doc, VERIFY_KEYS)
        doc = reply.doc if isinstance(reply.doc, dict) else {}
        if "id" in doc and doc["id"] != body["id"]:
            deviations.add(f"POST /v1/bigcodebench/verify: id {body['id']!r} echoed as "
                           f"{doc['id']!r}")
        if doc.get("status") not in VERIFY_STATUSES:
            deviations.add(f"POST /v1/bigcodebench/verify: status {doc.get('status')!r}")
        if doc.get("official_status") not in (None, "pass", "fail", "timeout"):
            deviations.add(f"POST /v1/bigcodebench/verify: official_status "
                           f"{doc.get('official_status')!r}")


def expected_seconds(cache):
    """task_id -> what assay eval orders by (crates/assay-eval/src/bigcodebench/
    ground_truth.rs, expected_seconds): the reference's time or the task's samples' in
    earlier evaluations here, whichever is longer, from the reference-run cache."""
    times = {}
    results = Path(cache) / "results.jsonl"
    for line in results.read_text().splitlines() if results.exists() else []:
        if line.strip():
            r = json.loads(line)
            times[r["task_id"]] = r.get("wall_seconds") or 0.0
    samples = Path(cache) / "sample_times.json"
    if samples.exists():
        for task, seconds in json.loads(samples.read_text()).get("tasks", {}).items():
            times[task] = max(times.get(task, 0.0), seconds or 0.0)
    return times


def part_serve(args, work, rows, results, deviations, trivial, hard, hard_order):
    command = [args.assay, "serve", "--port", "0", "--jobs", args.jobs]
    if args.sessions_profile and "--sessions-profile" in subprocess.run(
            [args.assay, "serve", "--help"], capture_output=True, text=True, timeout=60).stdout:
        command += ["--sessions-profile", args.sessions_profile]
    server = Service("assay serve", command,
                     r"assay serve: listening on (http://\S+/)", work / "assay-serve.log",
                     args.start_timeout)
    results["serve_stdout"] = server.stdout_lines
    if not re.fullmatch(r"assay serve: listening on http://127\.0\.0\.1:\d+/",
                        server.stdout_lines[-1]):
        deviations.add(f"stdout line: {server.stdout_lines[-1]!r}")
    try:
        host, port = server.host, server.port
        health = call(host, port, "GET", "/health", timeout=30)
        results["serve_health"] = health.doc
        if health.code != 200:
            deviations.add(f"GET /health: HTTP {health.code}: {health.doc}")
        else:
            check_keys(deviations, "GET /health", health.doc, HEALTH_KEYS)
            if isinstance(health.doc, dict):
                check_keys(deviations, "GET /health .queue", health.doc.get("queue"),
                           HEALTH_QUEUE_KEYS)
                check_keys(deviations, "GET /health .sessions", health.doc.get("sessions"),
                           HEALTH_SESSIONS_KEYS)
            if isinstance(health.doc, dict) and health.doc.get("jobs") != args.jobs:
                deviations.add(f"GET /health: jobs {health.doc.get('jobs')} "
                               f"(serve --jobs {args.jobs})")
        path = "/v1/bigcodebench/verify"
        # Unmeasured: the workers warm, the trivial task's reference time looked up.
        warm = [dict(trivial(i), id=f"warm-{i}") for i in range(2 * args.jobs)]
        _, replies = load(host, port, path, warm, args.concurrency, args.request_timeout,
                          args.bound)
        verify_deviations(deviations, replies, warm)

        if "trivial" in args.workloads:
            bodies = [trivial(i) for i in range(args.trivial_n)]
            wall, replies = load(host, port, path, bodies, args.concurrency,
                                 args.request_timeout, args.bound)
            verify_deviations(deviations, replies, bodies)
            note, _ = outcome(replies)
            rows.append(row(f"trivial ({TRIVIAL_TASK})", "assay serve", len(bodies),
                            args.concurrency, wall, [r.seconds for r in replies], note=note))
            results["serve_trivial_server_wall_p50_ms"] = _server_p50(replies)

        for order in args.hard_orders if "hard" in args.workloads else []:
            indices = hard_order(order, args.hard_count)
            bodies = [hard(i) for i in indices]
            if order == "batch":
                wall, replies = batch(host, port, bodies, args.bound)
                clients = "1 batch"
            else:
                wall, replies = load(host, port, path, bodies, args.concurrency,
                                     args.request_timeout, args.bound)
                clients = args.concurrency
            verify_deviations(deviations, replies, bodies)
            note, _ = outcome(replies)
            rows.append(row(f"Hard answers{ORDER_LABEL[order]}", "assay serve", len(bodies),
                            clients, wall, [r.seconds for r in replies], note=note))
            results[f"serve_hard{ORDER_KEY[order]}"] = {
                b["task_id"]: {"status": r.doc.get("status"),
                               "official_status": r.doc.get("official_status"),
                               "wall_seconds": r.doc.get("wall_seconds")}
                if isinstance(r.doc, dict) else {"error": r.error or r.code}
                for b, r in zip(bodies, replies)}
            results[f"serve_hard{ORDER_KEY[order]}_timeline"] = timeline(bodies, replies)

        if "sessions" in args.parts:
            part_sessions(args, host, port, rows, results, deviations)

        metrics = call(host, port, "GET", "/metrics", timeout=30)
        text = metrics.doc if isinstance(metrics.doc, str) else str(metrics.doc)
        missing = [m for m in METRICS if not re.search(rf"^{m}[{{ ]", text, re.M)]
        if missing:
            deviations.add(f"GET /metrics: no {', '.join(missing)}")
        results["serve_metrics"] = [l for l in text.splitlines()
                                    if l.startswith("assay_") and "_bucket{" not in l]
        # Without a JSON Content-Type (curl -d sends another): the spec names 400, not 415.
        bare = http.client.HTTPConnection(host, port, timeout=60)
        try:
            bare.request("POST", "/v1/bigcodebench/verify", body=json.dumps(trivial("bare")))
            answer = bare.getresponse()
            answer.read()
            if answer.status != 200:
                deviations.add(f"POST /v1/bigcodebench/verify without Content-Type: "
                               f"HTTP {answer.status} (with application/json: 200)")
        finally:
            bare.close()
    finally:
        code = server.stop()
        results["serve_exit_code"] = code


def _server_p50(replies):
    walls = [r.doc.get("wall_seconds") for r in replies if isinstance(r.doc, dict)
             and isinstance(r.doc.get("wall_seconds"), (int, float))]
    return None if not walls else round(1000 * percentile(walls, 0.5), 1)


def part_sessions(args, host, port, rows, results, deviations):
    timeout = args.request_timeout
    creates, first_cells, deletes = [], [], []
    lock = threading.Lock()
    statuses = collections.Counter()
    first_failure = results.setdefault("session_first_failure", {})

    def create():
        reply = call(host, port, "POST", "/v1/sessions", {}, timeout)
        if reply.code != 200 or not isinstance(reply.doc, dict) or "session_id" not in reply.doc:
            deviations.add(f"POST /v1/sessions: HTTP {reply.code}: {str(reply.doc)[:300]} "
                           f"{reply.error or ''}")
            return None, reply
        return reply.doc["session_id"], reply

    def execute(session, code):
        reply = call(host, port, "POST", f"/v1/sessions/{session}/execute",
                     {"code": code, "timeout": 30}, timeout)
        with lock:
            if reply.code != 200:
                statuses[f"HTTP {reply.code}"] += 1
                deviations.add(f"POST /v1/sessions/{{id}}/execute: HTTP {reply.code}: "
                               f"{str(reply.doc)[:300]} {reply.error or ''}")
            else:
                check_keys(deviations, "POST /v1/sessions/{id}/execute", reply.doc, EXECUTE_KEYS)
                status = (str(reply.doc.get("status")) if isinstance(reply.doc, dict)
                          else "not JSON")
                statuses[status] += 1
                if status != "pass" and status not in first_failure:
                    first_failure[status] = reply.doc
        return reply

    def delete(session):
        reply = call(host, port, "DELETE", f"/v1/sessions/{session}", None, timeout)
        if reply.code != 200 or not isinstance(reply.doc, dict) \
                or reply.doc.get("deleted") is not True:
            deviations.add(f"DELETE /v1/sessions/{{id}}: HTTP {reply.code}: "
                           f"{str(reply.doc)[:300]} {reply.error or ''}")
        return reply

    # Cells: S sessions at once, each with its own client sending K trivial cells in turn.
    sessions_n, cells_n = args.sessions, args.cells_per_session
    marks = {}
    barrier = threading.Barrier(sessions_n, action=lambda: marks.setdefault(
        "start", time.monotonic()), timeout=args.bound)
    cell_latencies, ends = [], []

    def cells_client(k):
        session, reply = create()
        with lock:
            creates.append(reply.seconds)
        try:
            if session is not None:
                execute(session, "import math\nx = 0")  # the interpreter up, not measured
            barrier.wait()
            mine = []
            if session is not None:
                for i in range(cells_n):
                    mine.append(execute(session, f"x = x + {i}\nx * 2").seconds)
            with lock:
                cell_latencies.extend(mine)
                ends.append(time.monotonic())
            return len(mine)
        finally:
            if session is not None:
                deleted = delete(session)
                with lock:
                    deletes.append(deleted.seconds)

    futures = bounded(sessions_n, [(cells_client, k) for k in range(sessions_n)], args.bound,
                      "session clients")
    ran = sum(f.result() for f in futures)
    wall = max(ends) - marks["start"] if ends and "start" in marks else None
    note = " ".join(f"{k}:{v}" for k, v in sorted(statuses.items()))
    rows.append(row("session cells (trivial)", "assay serve", ran,
                    f"{sessions_n} sessions", wall, cell_latencies, note=note))

    # Lifecycle: clients each doing rounds of create, one cell, delete.
    statuses.clear()
    rounds = args.session_rounds
    creates_l, deletes_l = [], []

    def lifecycle_client(k):
        done_rounds = 0
        for _ in range(rounds):
            session, reply = create()
            with lock:
                creates_l.append(reply.seconds)
            if session is None:
                continue
            first = execute(session, "1 + 1")
            deleted = delete(session)
            with lock:
                first_cells.append(first.seconds)
                deletes_l.append(deleted.seconds)
            done_rounds += 1
        return done_rounds

    started = time.monotonic()
    futures = bounded(args.concurrency, [(lifecycle_client, k) for k in range(args.concurrency)],
                      args.bound, "session clients")
    cycles = sum(f.result() for f in futures)
    wall = time.monotonic() - started
    note = " ".join(f"{k}:{v}" for k, v in sorted(statuses.items()))
    rows.append(row("session create+cell+delete", "assay serve", cycles, args.concurrency, wall,
                    [c + f + d for c, f, d in zip(creates_l, first_cells, deletes_l)],
                    note=f"first cells {note}"))
    rows.append(row("  session create", "assay serve", len(creates_l), args.concurrency,
                    latencies=creates_l))
    rows.append(row("  session first cell", "assay serve", len(first_cells), args.concurrency,
                    latencies=first_cells))
    rows.append(row("  session delete", "assay serve", len(deletes_l), args.concurrency,
                    latencies=deletes_l))
    rows.append(row(f"  session create ({sessions_n} at once)", "assay serve", len(creates),
                    sessions_n, latencies=creates))


def bcb_python(args):
    if args.baseline_python:
        return Path(args.baseline_python)
    found = sorted(glob.glob(str(cache_root() / "envs" / "bigcodebench-py3.*" / "bin" / "python")),
                   key=os.path.getmtime)
    if not found:
        sys.exit("no bigcodebench environment under assay's cache: run `assay env setup` "
                 "(or pass --baseline-python)")
    return Path(found[-1])


def official_package(work, python, bound):
    """bigcodebench==0.2.5 (--no-deps) in a folder of its own, for PYTHONPATH."""
    target = work / f"bcb-{OFFICIAL_VERSION}"
    marker = target / "assay-bench-ready"
    if marker.exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    spec = f"bigcodebench=={OFFICIAL_VERSION}"
    pip = subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True)
    if pip.returncode == 0:
        run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--target", target, spec],
            bound)
    else:
        uv = shutil.which("uv") or next(iter(sorted(glob.glob(
            str(cache_root() / "tools" / "uv-*" / "bin" / "uv")))), None)
        if uv is None:
            sys.exit(f"neither pip in {python} nor uv to install {spec}")
        run([uv, "pip", "install", "--python", python, "--no-deps", "--target", target, spec],
            bound)
    marker.touch()
    return target


def part_baseline(args, work, rows, results, trivial_baseline, hard_baseline, official):
    python = bcb_python(args)
    package = official_package(work.parent, python, args.bound)
    runner = work / "runner.py"
    runner.write_text(RUNNER)
    cwd = work / "baseline-cwd"
    cwd.mkdir(exist_ok=True)
    server = Service("baseline", [sys.executable, Path(__file__).resolve(), "--baseline-server",
                                  "--port", "0", "--jobs", args.jobs, "--python", python,
                                  "--bcb-path", package, "--runner", runner, "--cwd", cwd],
                     r"baseline: listening on (http://\S+/)", work / "baseline.log", 60)
    results["baseline"] = {"python": str(python), "bigcodebench": str(package)}
    try:
        host, port = server.host, server.port
        warm = [dict(trivial_baseline(i), id=f"warm-{i}") for i in range(args.jobs)]
        _, replies = load(host, port, "/verify", warm, args.concurrency, args.request_timeout,
                          args.bound)
        note, counts = outcome(replies)
        if counts.get("pass") != len(warm):
            sys.exit(f"baseline: the trivial answer did not pass: {note}\n"
                     f"{[r.doc for r in replies][:2]}\n{tail(work / 'baseline.log')}")

        if "trivial" in args.workloads:
            bodies = [trivial_baseline(i) for i in range(args.baseline_trivial_n)]
            wall, replies = load(host, port, "/verify", bodies, args.concurrency,
                                 args.request_timeout, args.bound)
            note, _ = outcome(replies)
            rows.append(row(f"trivial ({TRIVIAL_TASK})", "baseline (process/request)",
                            len(bodies), args.concurrency, wall, [r.seconds for r in replies],
                            note=note))

        if "hard" in args.workloads:
            bodies = [hard_baseline(i) for i in range(args.hard_count)]
            wall, replies = load(host, port, "/verify", bodies, args.concurrency,
                                 args.request_timeout, args.bound)
            note, _ = outcome(replies)
            rows.append(row(f"Hard answers{ORDER_LABEL['file']}", "baseline (process/request)",
                            len(bodies), args.concurrency, wall, [r.seconds for r in replies],
                            note=note))
            results["baseline_hard_timeline"] = timeline(bodies, replies)
            got = {b["task_id"]: (r.doc.get("status") if isinstance(r.doc, dict) else None)
                   for b, r in zip(bodies, replies)}
            results["baseline_hard"] = got
    finally:
        server.stop()


# ---------------------------------------------------------------------------------------------

def show(rows):
    head = (f"{'workload':<34}{'system':<28}{'n':>6}{'concurrency':>13}{'wall s':>9}"
            f"{'per second':>12}{'p50 ms':>10}{'p99 ms':>10}")
    print(head)
    print("-" * len(head))

    def fmt(v, spec):
        return "-" if v is None else format(v, spec)

    for r in rows:
        print(f"{r['workload']:<34}{r['system']:<28}{r['n']:>6}{str(r['concurrency']):>13}"
              f"{fmt(r['wall_seconds'], '.1f'):>9}{fmt(r['per_second'], '.2f'):>12}"
              f"{fmt(r['p50_ms'], '.0f'):>10}{fmt(r['p99_ms'], '.0f'):>10}"
              + (f"   {r['note']}" if r["note"] else ""))


def find(rows, workload, system):
    return next((r for r in rows if r["workload"].startswith(workload) and r["system"] == system),
                None)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--baseline-server":
        return baseline_server(sys.argv[1:])
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assay", default=str(REPO / "target" / "release" / "assay"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count(),
                        help="sandbox jobs of assay serve and assay eval, and the baseline's "
                             "semaphore (default: the CPUs)")
    parser.add_argument("--concurrency", type=int, help="client threads (default 2 x --jobs)")
    parser.add_argument("--quick", action="store_true",
                        help="a few minutes: 100 trivial requests (60 to the baseline), the "
                             "first 60 Hard answers, 8 sessions x 10 cells, 3 lifecycle rounds")
    parser.add_argument("--trivial-n", type=int, help="trivial requests to assay (default 400)")
    parser.add_argument("--baseline-trivial-n", type=int,
                        help="trivial requests to the baseline (default: --trivial-n)")
    parser.add_argument("--samples", default=str(OFFICIAL_RUN),
                        help="official-format samples, filtered to the Hard tasks")
    parser.add_argument("--version", default="v0.1.2",
                        help="dataset version of --samples (the official runs: v0.1.2)")
    parser.add_argument("--split", default="complete", choices=["complete", "instruct"])
    parser.add_argument("--hard-n", type=int, help="only the first N Hard answers (default all)")
    parser.add_argument("--sessions", type=int, help="sessions at once for cells (default 16)")
    parser.add_argument("--cells-per-session", type=int, help="default 25")
    parser.add_argument("--session-rounds", type=int,
                        help="create/cell/delete rounds per client (default 10)")
    parser.add_argument("--sessions-profile", default="pybench",
                        help="`assay serve --sessions-profile`: sessions need IPython, which "
                             "the bigcodebench environment lacks (default pybench; '' to omit)")
    parser.add_argument("--hard-orders", default="file,eval,batch",
                        help="how the Hard answers are sent to assay serve: `file` (one request "
                             "each, the samples file's order), `eval` (one each, assay eval's "
                             "order: longest expected first, from the reference-run cache), "
                             "`batch` (all in one verify_batch, the file's order: the server "
                             "orders them); default file,eval,batch")
    parser.add_argument("--parts", default="cli,serve,sessions,baseline",
                        help="what to run (default cli,serve,sessions,baseline)")
    parser.add_argument("--workloads", default="trivial,hard",
                        help="verify workloads for serve and baseline (default trivial,hard)")
    parser.add_argument("--baseline-python",
                        help="the baseline's interpreter (default: assay's bigcodebench env)")
    parser.add_argument("--work", default=str(REPO / "target" / "bench-serve"))
    parser.add_argument("--start-timeout", type=float, default=900,
                        help="seconds for `assay serve` to print its line (first start may "
                             "set up the environment)")
    parser.add_argument("--request-timeout", type=float, default=900)
    parser.add_argument("--bound", type=float, default=3600,
                        help="seconds any one workload or command may take")
    parser.add_argument("--out", help="also write the figures to this JSON file")
    args = parser.parse_args()
    quick = args.quick
    args.concurrency = args.concurrency or 2 * args.jobs
    args.trivial_n = args.trivial_n or (100 if quick else 400)
    args.baseline_trivial_n = args.baseline_trivial_n or (60 if quick else args.trivial_n)
    args.hard_n = args.hard_n if args.hard_n is not None else (60 if quick else 0)
    args.sessions = args.sessions or (8 if quick else 16)
    args.cells_per_session = args.cells_per_session or (10 if quick else 25)
    args.session_rounds = args.session_rounds or (3 if quick else 10)
    args.parts = set(args.parts.split(","))
    args.hard_orders = args.hard_orders.split(",")
    args.workloads = set(args.workloads.split(","))
    args.assay = str(Path(args.assay).resolve())

    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_dir = work / f"run-{stamp}"
    run_dir.mkdir()

    # The workloads.
    trivial_rows = dataset(TRIVIAL_VERSION)
    task = trivial_rows[TRIVIAL_TASK]
    trivial_solution = task["complete_prompt"] + "\n" + task["canonical_solution"]

    def trivial(i):
        return {"id": i, "task_id": TRIVIAL_TASK, "version": TRIVIAL_VERSION,
                "split": "complete", "solution": trivial_solution, "calibrated": True}

    def trivial_baseline(i):
        return {"id": i, "task_id": TRIVIAL_TASK, "solution": trivial_solution,
                "test": task["test"], "entry_point": task["entry_point"],
                "code_prompt": task["code_prompt"], "calibrated": True}

    samples = hard_samples(args.samples, args.hard_n)
    args.hard_count = len(samples)
    tasks = dataset(args.version)
    samples_file = run_dir / "hard-samples.jsonl"
    samples_file.write_text("".join(json.dumps(s) + "\n" for s in samples))
    official = official_verdicts(args.samples)

    def answer_field(s):
        if "solution" in s:
            return {"solution": s["solution"]}
        return {"completion": s["completion"]}

    def hard(i):
        s = samples[i]
        return {"id": i, "task_id": s["task_id"], "version": args.version, "split": args.split,
                **answer_field(s), "calibrated": True}

    def hard_baseline(i):
        s = samples[i]
        t = tasks[s["task_id"]]
        solution = s["solution"] if "solution" in s else t["complete_prompt"] + s["completion"]
        return {"id": i, "task_id": s["task_id"], "solution": solution, "test": t["test"],
                "entry_point": t["entry_point"], "code_prompt": t["code_prompt"],
                "calibrated": True}

    rows, results, deviations = [], {}, set()
    expected = {}

    def hard_order(order, count):
        """The answers' indices in the order sent: the file's, or assay eval's (longest
        expected first; the sort is stable, as Rust's sort_by)."""
        if order in ("file", "batch"):
            return list(range(count))
        return sorted(range(count), key=lambda i: -expected.get(samples[i]["task_id"], 0.0))
    results["load_average_before"] = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, --jobs {args.jobs}, {args.concurrency} clients; "
          f"Hard: {len(samples)} answers of {Path(args.samples).name} ({args.version}); "
          f"work {run_dir}", file=sys.stderr)

    if args.parts & {"cli", "serve", "sessions"}:
        # Untimed: the reference-run cache filled for every task used (a no-op once warm).
        checked = run([args.assay, "check", "bigcodebench-hard", "--version", args.version,
                       "--jobs", args.jobs, "--json"], args.bound, stdout=subprocess.PIPE)
        try:
            expected.update(expected_seconds(json.loads(checked.stdout)["ground_truth"]["cache"]))
        except (ValueError, KeyError, TypeError, OSError) as e:
            print(f"no reference times for assay eval's order ({e!r}): file order only",
                  file=sys.stderr)
            args.hard_orders = ["file"]
        run([args.assay, "check", "bigcodebench", "--version", TRIVIAL_VERSION,
             "--tasks", TRIVIAL_TASK, "--jobs", args.jobs, "--json"], args.bound,
            stdout=subprocess.DEVNULL)
    cli_statuses = cli_official = None
    if "cli" in args.parts:
        cli_row, cli_statuses, cli_official = part_cli(
            args, run_dir, samples_file, [s["task_id"] for s in samples])
        rows.append(cli_row)
    if args.parts & {"serve", "sessions"}:
        if "serve" not in args.parts:
            args.workloads = set()
        part_serve(args, run_dir, rows, results, deviations, trivial, hard, hard_order)
    if "baseline" in args.parts:
        part_baseline(args, run_dir, rows, results, trivial_baseline, hard_baseline, official)

    rows.sort(key=lambda r: (0 if r["workload"].startswith("trivial") else
                             1 if r["workload"].startswith("Hard") else 2))
    print()
    show(rows)
    print()

    ratios = {}
    cli_hard = find(rows, "Hard answers", "assay eval (CLI)")
    base_hard = find(rows, "Hard answers", "baseline (process/request)")
    serve_triv = find(rows, "trivial", "assay serve")
    base_triv = find(rows, "trivial", "baseline (process/request)")
    if serve_triv and base_triv:
        ratios["trivial_serve_over_baseline_per_second"] = round(
            serve_triv["per_second"] / base_triv["per_second"], 2)
        print(f"trivial: assay serve / baseline verifications per second = "
              f"{ratios['trivial_serve_over_baseline_per_second']:.1f}x (target >= 10x)")
    for order in args.hard_orders:
        serve_hard = find(rows, f"Hard answers{ORDER_LABEL[order]}", "assay serve")
        if not serve_hard:
            continue
        label, key = ORDER_LABEL[order].strip(" ()"), ORDER_KEY[order]
        if cli_hard:
            ratios[f"hard_serve_wall_over_cli_wall{key}"] = round(
                serve_hard["wall_seconds"] / cli_hard["wall_seconds"], 3)
            print(f"Hard, {label}: assay serve wall / assay eval wall = "
                  f"{ratios[f'hard_serve_wall_over_cli_wall{key}']:.2f} (target <= 1.10)")
        if base_hard:
            ratios[f"hard_serve_over_baseline_per_second{key}"] = round(
                serve_hard["per_second"] / base_hard["per_second"], 2)
            print(f"Hard, {label}: assay serve / baseline (file order) verifications per "
                  f"second = {ratios[f'hard_serve_over_baseline_per_second{key}']:.2f}x")
    if cli_hard and base_hard:
        ratios["hard_cli_over_baseline_per_second"] = round(
            cli_hard["per_second"] / base_hard["per_second"], 2)
        print(f"Hard: assay eval / baseline verifications per second = "
              f"{ratios['hard_cli_over_baseline_per_second']:.2f}x")

    agreement = {}
    for order in args.hard_orders:
        got = results.get(f"serve_hard{ORDER_KEY[order]}")
        if not got:
            continue
        label = ORDER_LABEL[order].strip(" ()")
        if cli_statuses:
            same = sum(v.get("status") == cli_statuses.get(t) for t, v in got.items())
            agreement[f"serve_vs_cli_status{ORDER_KEY[order]}"] = [same, len(got)]
            differ = {t: (v.get("status"), cli_statuses.get(t)) for t, v in got.items()
                      if v.get("status") != cli_statuses.get(t)}
            print(f"verdicts ({label}): assay serve = assay eval on {same}/{len(got)}"
                  + (f"; differ (serve, eval): {differ}" if differ else ""))
        if official:
            judged = {t: v.get("official_status") for t, v in got.items()
                      if v.get("official_status") is not None}
            same = sum(official.get(t) == s for t, s in judged.items())
            agreement[f"serve_official_status_vs_official{ORDER_KEY[order]}"] = \
                [same, len(judged)]
            print(f"verdicts ({label}): assay serve official_status = official on "
                  f"{same}/{len(judged)} judged ({len(got) - len(judged)} infra)")
    if official and cli_official:
        judged = {t: s for t, s in cli_official.items() if s is not None}
        same = sum(official.get(t) == s for t, s in judged.items())
        agreement["cli_official_vs_official"] = [same, len(judged)]
        print(f"verdicts: assay eval official = official on {same}/{len(judged)} judged")
    if official and "baseline_hard" in results:
        got = results["baseline_hard"]
        same = sum(official.get(t) == s for t, s in got.items())
        agreement["baseline_vs_official"] = [same, len(got)]
        differ = {t: (s, official.get(t)) for t, s in got.items() if official.get(t) != s}
        print(f"verdicts: baseline = official on {same}/{len(got)}"
              + (f"; differ (baseline, official): {differ}" if differ else ""))
    results["load_average_after"] = os.getloadavg()
    print("load average (1, 5, 15 min) before: {:.2f} {:.2f} {:.2f}, after: {:.2f} {:.2f} "
          "{:.2f} (other work on the machine distorts every figure)".format(
              *results["load_average_before"], *results["load_average_after"]))
    if args.parts & {"cli", "serve", "sessions"}:
        print("warm: assay's reference-run cache filled by an untimed `assay check` before "
              "timing; each server answered unmeasured trivial requests first")
    for status, doc in results.get("session_first_failure", {}).items():
        print(f"first session cell with status {status}: {json.dumps(doc)[:600]}")
    if deviations:
        print("\nanswers that differ from /work/spec/serve-api.md:")
        for d in sorted(deviations):
            print("  " + d)

    if args.out:
        doc = {"cpus": os.cpu_count(), "jobs": args.jobs, "concurrency": args.concurrency,
               "samples": str(args.samples), "version": args.version, "split": args.split,
               "trivial_task": f"{TRIVIAL_TASK} {TRIVIAL_VERSION} (reference solution)",
               "rows": rows, "ratios": ratios, "agreement": agreement,
               "spec_deviations": sorted(deviations), "work": str(run_dir), **results}
        Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
