#!/usr/bin/env python3
"""What assay adds to a coding agent's episode, against the agent's own time.

A loopback model that answers at once (a scripted OpenAI Chat Completions server: the model's
time is ~0, so what remains is the agent's and assay's) has each agent solve PyBench task 3:
one shell command that dedups a CSV into ./output/3.csv, then an answer. Each agent runs the
task R times (`assay run pybench --agent NAME`, a fresh run directory each time); each
episode's `tasks/3/agent/timing.json` and record say where the time went:

- agent: the agent's job, its start to its end (the CLI's own start-up and logic, its command,
  its waits on the gateway);
- gateway: the gateway's own time over the episode's requests (reading, translating to Chat
  Completions, replying in the agent's protocol), the model's time taken out;
- sandbox: the rest of the episode (taking a confined job process, the relay, reading the
  files back, stopping the gateway);
- checks: the rest of the record's time (the task's checks, keeping the outputs).

It prints the medians per agent and assay's share: (gateway + sandbox + checks) / agent.

    python3 bench/agent_overhead.py [--assay target/release/assay] [--agents codex,...]
                                    [--repeat 5] [--data ../shared/data/pybench]

The agents are installed first if they are not (`assay agents install`).
"""

import argparse
import http.server
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

DEDUP = (
    "import pandas as pd\n"
    "df = pd.read_csv('./data/Week 40 - US Christmas Tree Sales - 2010 to 2016.csv')\n"
    "df.drop_duplicates().to_csv('./output/3.csv', index=False)\n"
    "print('rows', len(df))"
)
COMMAND = f"python3 - <<'EOF'\n{DEDUP}\nEOF"
ANSWER = "Finished: saved to ./output/3.csv"


def reply(body):
    """The scripted turn: the dedup through whichever shell tool the agent offers, then the
    answer (for mini-swe-agent, which ends only by a command, the command that submits)."""
    messages = body.get("messages", [])
    done = sum(1 for m in messages if m.get("role") == "tool")
    offered = [t["function"]["name"] for t in body.get("tools", []) if "function" in t]
    by_command = "bash" in offered and "Bash" not in offered
    if done == 0:
        text, command = "", COMMAND
    elif done == 1 and by_command:
        text, command = ANSWER, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    else:
        text, command = ANSWER, None
    message = {"role": "assistant", "content": text}
    if command is not None:
        if "exec_command" in offered:
            name, args = "exec_command", {"cmd": command}
        elif "Bash" in offered:
            name, args = "Bash", {"command": command}
        else:
            name, args = "bash", {"command": command}
        message["tool_calls"] = [{"id": f"call_{done}", "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(args)}}]
    return {"id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench",
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if command else "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        data = json.dumps(reply(body)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def episode(assay, agent, base, data, out):
    command = [assay, "run", "pybench", "--agent", agent, "--model", "openai:bench",
               "--base-url", base, "--data", data, "--tasks", "3", "--out", str(out)]
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"{agent}: exit {done.returncode}\n{done.stderr}")
    record = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    if record["status"] != "pass":
        sys.exit(f"{agent}: the episode did not pass: {record}")
    timing = json.loads((out / "tasks/3/agent/timing.json").read_text())
    return {
        "agent": timing["job_seconds"],
        "gateway": timing["gateway_seconds"],
        "sandbox": timing["episode_seconds"] - timing["job_seconds"],
        "checks": record["seconds"] - timing["episode_seconds"],
        "requests": timing["requests"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assay", default="target/release/assay")
    parser.add_argument("--agents", default="codex,claude-code,mini-swe-agent")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--data", default="../shared/data/pybench")
    args = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    work = Path(tempfile.mkdtemp(prefix="agent-overhead-", dir="."))
    print(f"{'agent':<16}{'requests':>9}{'agent s':>9}{'gateway s':>11}{'sandbox s':>11}"
          f"{'checks s':>10}{'assay/agent':>13}")
    try:
        for agent in args.agents.split(","):
            subprocess.run([args.assay, "agents", "install", agent], check=True,
                           stdout=subprocess.DEVNULL)
            # One unmeasured episode first: the sandbox's worker warm, the agent's files cached.
            episode(args.assay, agent, base, args.data, work / f"{agent}-warm")
            runs = [episode(args.assay, agent, base, args.data, work / f"{agent}-{i}")
                    for i in range(args.repeat)]
            median = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            ours = median["gateway"] + median["sandbox"] + median["checks"]
            print(f"{agent:<16}{median['requests']:>9.0f}{median['agent']:>9.2f}"
                  f"{median['gateway']:>11.3f}{median['sandbox']:>11.3f}{median['checks']:>10.3f}"
                  f"{ours / median['agent']:>13.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        server.shutdown()


if __name__ == "__main__":
    main()
