#!/usr/bin/env python3
"""`assay judge pybench` against a judge on loopback that answers in every shape a real one does.

A small OpenAI-compatible server reads each judge request as upstream's prompts lay it out
(Agent 1's and Agent 2's trajectories between the template's lines) and answers from what the
trajectories hold, so that the figures mean something: an agent passes when its last message is
a reply that starts "Finished"; the decision goes to the one that passes, else to the one with
fewer replies, else to Agent2 (a position bias on purpose, for the figures to show). Some tasks
get the replies judges also give: a ```json fence (upstream's reader cannot read it), a refusal,
and a 429 first.

    python3 bench/judge.py RUN_DIR [--assay target/release/assay] [-- JUDGE ARGS]

Arguments after `--` go to `assay judge pybench` (for example `--prompt scores`). It prints
what assay printed, the requests the server saw, and the seconds the judging took.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

AGENT1 = "Agent 1's solution:\n"
AGENT2 = "\n\nAgent 2's solution:\n"


def side(text):
    """(task index, passes, replies) of one side's trajectory text, or None for `AgentN Failed`."""
    text = text.strip()
    if re.fullmatch(r"Agent[12] Failed", text):
        return None
    record = json.loads(text)
    messages = record["messages"]
    replies = sum(1 for m in messages if m["role"] == "assistant")
    last = messages[-1]
    passes = last["role"] == "assistant" and last["content"].lstrip().startswith("Finished")
    return record["index"], passes, replies


def verdict(user, scores):
    start = user.index(AGENT1) + len(AGENT1)
    middle = user.index(AGENT2, start)
    one, two = side(user[start:middle]), side(user[middle + len(AGENT2):])
    index = (one or two or ("0",))[0]
    pass1 = bool(one and one[1])
    pass2 = bool(two and two[1])
    if pass1 != pass2:
        first_better = pass1
    elif one and two and one[2] != two[2]:
        first_better = one[2] < two[2]
    else:
        first_better = False
    label = lambda ok: "Pass" if ok else "Failed"
    body = {"Pass": {"Agent1": label(pass1), "Agent2": label(pass2)}}
    if scores:
        good, bad = 8, 4
        body["ReasoningQuality"] = {"Agent1": good if first_better else bad,
                                    "Agent2": bad if first_better else good}
        body["CodeQuality"] = dict(body["ReasoningQuality"])
    else:
        body["Decision"] = {"Agent1": int(first_better), "Agent2": int(not first_better)}
    return int(index), body


class Judge(BaseHTTPRequestHandler):
    refused_once = set()
    lock = threading.Lock()
    requests = 0

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send(200, {"object": "list", "data": [{"id": "loopback-judge", "object": "model"}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        scores = '"ReasoningQuality"' in system
        index, answer = verdict(user, scores)
        with Judge.lock:
            Judge.requests += 1
            first_time = index % 11 == 0 and index not in Judge.refused_once
            Judge.refused_once.add(index)
        if first_time:
            return self.send(429, {"error": {"message": "slow down", "type": "rate_limit"}})
        verdict_json = json.dumps(answer, indent=2)
        if index % 13 == 0:
            text = f"Both agents tried.\n```json\n{verdict_json}\n```"
        elif index % 17 == 0:
            text = "I'm sorry, but I can't help with judging these trajectories."
        else:
            text = f"Agent2's reasoning is sound.\n```\n{verdict_json}\n```"
        self.send(200, {
            "id": "judge", "object": "chat.completion", "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": len(user) // 4, "completion_tokens": len(text) // 4},
        })

    def send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run")
    parser.add_argument("--assay", default="target/release/assay")
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Judge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    command = [args.assay, "judge", "pybench", args.run, "--judge", "openai:loopback-judge",
               "--base-url", f"http://127.0.0.1:{server.server_port}/v1", *rest]
    started = time.monotonic()
    done = subprocess.run(command, env={**os.environ, "OPENAI_API_KEY": "sk-loopback"})
    print(f"judge requests the server saw: {Judge.requests}; {time.monotonic() - started:.1f} s")
    server.shutdown()
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
