"""A small OpenAI-compatible server for the `--serve` tests: the standard library only.

python3 openai_stub_server.py --port PORT [--mode MODE]

MODE `ok` (the default) lists one model, `stub`, and answers every chat completion with a
fixed program; `slow` does too, two seconds after each request; `no-models` answers 404
everywhere (a base URL without /v1, say). At start it
prints whether it can see the provider keys, so that a test can read in its log that it
cannot; it prints again when SIGTERM arrives.
"""

import argparse
import json
import os
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--mode", choices=["ok", "slow", "no-models"], default="ok")
options = parser.parse_args()
PORT, MODE = options.port, options.mode
ANSWER = "```python\ndef task_func(*args, **kwargs):\n    return None\n```"

print("keys seen:", sorted(k for k in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY") if k in os.environ),
      flush=True)
print("group leader:", os.getpgid(0) == os.getpid(), flush=True)


def stop(signum, frame):
    print("stopping on", signal.Signals(signum).name, flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)


class Handler(BaseHTTPRequestHandler):
    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if MODE != "no-models" and self.path == "/v1/models":
            self.reply(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})
        else:
            self.reply(404, {"detail": "Not Found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        self.rfile.read(length)
        if MODE == "slow":
            time.sleep(2)
        if MODE != "no-models" and self.path == "/v1/chat/completions":
            self.reply(200, {
                "id": "stub", "object": "chat.completion", "model": "stub",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": ANSWER}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10},
            })
        else:
            self.reply(404, {"detail": "Not Found"})

    def log_message(self, format, *args):
        print(format % args, flush=True)


ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
