"""The parity oracle: upstream's own data/unit_test/tests.py run over a run's trajectories and
outputs (merged into one ./output/, as upstream's runs share it). Writes verdicts.json,
{index: "pass" | "fail"}. Runs in a folder holding tests.py, trajectory.jsonl, data/, output/,
and dirs.json: the folders to make first (a job's input files cannot be empty folders)."""
import contextlib
import importlib.util
import io
import json
import os
import sys

for folder in ["output", *json.load(open("dirs.json"))]:
    os.makedirs(folder, exist_ok=True)

spec = importlib.util.spec_from_file_location("tests", "tests.py")
tests = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tests)
trajectories = {}
for line in open("trajectory.jsonl", encoding="utf-8"):
    if line.strip():
        record = json.loads(line)
        trajectories[str(record["index"])] = record["messages"]
verdicts = {}
for index in sys.argv[1].split(","):
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            getattr(tests, f"test_task_{index}")(trajectories[index])
        verdicts[index] = "pass"
    except BaseException:  # noqa: BLE001 - upstream's runner counts anything as Failed
        verdicts[index] = "fail"
with open("verdicts.json", "w") as f:
    json.dump(verdicts, f)
