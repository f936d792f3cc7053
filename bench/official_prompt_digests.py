#!/usr/bin/env python3
"""Digests of every official BigCodeBench chat prompt, made by the official harness itself.

Writes `crates/assay-generate/tests/data/official_prompt_digests.json`: for each of the 1,140
tasks of dataset v0.1.4 and each split (complete, instruct), the BLAKE3 digest (hex) of the
UTF-8 user message that the official harness, bigcodebench 0.2.5, sends to an API chat model.
`crates/assay-generate/tests/prompts.rs` compares `assay_generate::prompt::chat_message` with
all 2,280 of them. (BLAKE3 rather than SHA-256 because the workspace already depends on the
`blake3` crate and on no SHA-256 crate; the dataset file's SHA-256 is in the header.)

The messages come from the harness's own code path, not from a copy of it: this script calls
`bigcodebench.generate.run_codegen` (its defaults: `instruction_prefix`, `response_prefix`,
prompt taken as `task[f"{split}_prompt"]`, no newline stripping) with the `openai` and the
`anthropic` backends, whose `codegen` build each message with
`bigcodebench.provider.utility.make_raw_chat_prompt(prompt, subset, split, instruction_prefix,
response_prefix, tokenizer=None)`. Only the network call is replaced (each backend module's
`make_auto_request`), to record the message and answer with a stub. The dataset is read by the
harness's own loader (`BIGCODEBENCH_OVERRIDE_PATH`). Both backends must send the same message
for every task, or the script stops.

Direct completion (a base model, `--direct_completion`): the harness sends the Complete prompt
unchanged (`make_raw_chat_prompt(..., direct_completion=True)` returns `task_prompt` as it is,
and `codegen` passes `task["complete_prompt"]` without stripping). It is not listed in the
fixture; the script checks that identity for every task with the official function, and
`prompts.rs` checks that `prompt::completion_prompt` is the Complete prompt.

Getting the official harness (once; the full dependency set pulls in vLLM and CUDA, so install
the package without its dependencies plus what the generation code path imports):

    python3.11 -m venv /work/bench-official-prompts
    /work/bench-official-prompts/bin/pip install --no-deps bigcodebench==0.2.5
    /work/bench-official-prompts/bin/pip install appdirs fire pqdm tempdir termcolor tqdm \\
        tree_sitter tree-sitter-python wget transformers datasets rich openai anthropic \\
        numpy blake3

Then, from the repository root (nothing is sent over the network):

    /work/bench-official-prompts/bin/python bench/official_prompt_digests.py [--dataset GZ] \\
        [--out JSON] [--check]

`--dataset` defaults to `../shared/data/bigcodebench/BigCodeBench-v0.1.4.jsonl.gz` (the same
bytes as `crates/assay-tasks/data/BigCodeBench-v0.1.4.jsonl.gz`); `--check` compares with the
existing fixture instead of writing it.
"""

import argparse
import contextlib
import hashlib
import inspect
import json
import os
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATASET = REPO.parent / "shared" / "data" / "bigcodebench" / "BigCodeBench-v0.1.4.jsonl.gz"
OUT = REPO / "crates" / "assay-generate" / "tests" / "data" / "official_prompt_digests.json"
HARNESS_VERSION = "0.2.5"
DATASET_VERSION = "v0.1.4"
SPLITS = ("complete", "instruct")
BACKENDS = ("openai", "anthropic")
# What the stubbed model answers: any code will do, the harness sanitizes it and moves on.
ANSWER = "def task_func():\n    pass\n"


def blake3_hex(text):
    import blake3

    return blake3.blake3(text.encode("utf-8")).hexdigest()


def task_number(task_id):
    return int(task_id.split("/")[1])


def capture_messages(backend, split, root):
    """task_id -> the user message the harness sends, for one backend and split, in order."""
    import bigcodebench.provider.anthropic as anthropic_provider
    import bigcodebench.provider.openai as openai_provider
    from bigcodebench.data import utils as data_utils
    from bigcodebench.generate import run_codegen

    sent = []

    def openai_request(client, message, model, n=1, **kwargs):
        sent.append(message)
        choice = SimpleNamespace(message=SimpleNamespace(content=ANSWER))
        return SimpleNamespace(choices=[choice] * n)

    def anthropic_request(client, model, messages, **kwargs):
        assert len(messages) == 1 and messages[0]["role"] == "user", messages
        sent.append(messages[0]["content"])
        return SimpleNamespace(content=[SimpleNamespace(text=ANSWER)])

    openai_provider.make_auto_request = openai_request
    anthropic_provider.make_auto_request = anthropic_request
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
        target = run_codegen(
            model="prompt-capture",
            backend=backend,
            split=split,
            subset="full",
            root=str(root),
            greedy=True,
        )
    # The samples file the harness wrote says which task each request was for (one per task,
    # in the order the requests were made).
    task_ids = [row["task_id"] for row in data_utils.stream_jsonl(target)]
    assert all(isinstance(m, str) for m in sent), f"{backend}: a message is not a string"
    assert len(task_ids) == len(sent), f"{backend} {split}: {len(sent)} requests, {len(task_ids)} samples"
    assert len(set(task_ids)) == len(task_ids), f"{backend} {split}: a task was asked twice"
    return dict(zip(task_ids, sent))


def check_direct_completion(dataset):
    """The base-model prompt is the Complete prompt as it is."""
    from bigcodebench.generate import run_codegen
    from bigcodebench.provider.utility import make_raw_chat_prompt

    defaults = inspect.signature(run_codegen).parameters
    for template in (None, "a chat template"):
        tokenizer = SimpleNamespace(chat_template=template)
        for task_id, task in dataset.items():
            prompt = make_raw_chat_prompt(
                task["complete_prompt"],
                "full",
                "complete",
                defaults["instruction_prefix"].default,
                defaults["response_prefix"].default,
                tokenizer,
                direct_completion=True,
            )
            assert prompt == task["complete_prompt"], f"{task_id}: direct completion changes the prompt"


def render(header, digests):
    """The fixture: the header, then one task per line in task order."""
    lines = ["{"]
    for key, value in header.items():
        lines.append(f" {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)},")
    lines.append(' "digests": {')
    rows = sorted(digests.items(), key=lambda kv: task_number(kv[0]))
    for i, (task_id, by_split) in enumerate(rows):
        comma = "," if i + 1 < len(rows) else ""
        entry = json.dumps({split: by_split[split] for split in SPLITS})
        lines.append(f"  {json.dumps(task_id)}: {entry}{comma}")
    lines.append(" }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=DATASET, help="BigCodeBench-v0.1.4.jsonl.gz")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="compare with --out, do not write")
    args = parser.parse_args()

    installed = metadata.version("bigcodebench")
    if installed != HARNESS_VERSION:
        sys.exit(f"bigcodebench {installed} is installed; this fixture is for {HARNESS_VERSION}")
    dataset_path = args.dataset.resolve()
    # The harness reads this when its data module is imported: set it before any import.
    os.environ["BIGCODEBENCH_OVERRIDE_PATH"] = str(dataset_path)
    from bigcodebench.data import get_bigcodebench
    from bigcodebench.data.bigcodebench import BIGCODEBENCH_VERSION

    if BIGCODEBENCH_VERSION != DATASET_VERSION:
        sys.exit(f"the harness's dataset version is {BIGCODEBENCH_VERSION}, not {DATASET_VERSION}")
    dataset = get_bigcodebench(subset="full")
    if len(dataset) != 1140:
        sys.exit(f"{dataset_path}: {len(dataset)} tasks, expected 1140")

    check_direct_completion(dataset)

    digests = {task_id: {} for task_id in dataset}
    with tempfile.TemporaryDirectory() as root:
        for split in SPLITS:
            by_backend = {backend: capture_messages(backend, split, Path(root) / backend) for backend in BACKENDS}
            first = by_backend[BACKENDS[0]]
            if set(first) != set(dataset):
                sys.exit(f"{split}: the harness asked for {len(first)} tasks, not the dataset's {len(dataset)}")
            for backend in BACKENDS[1:]:
                differ = [t for t in dataset if by_backend[backend].get(t) != first[t]]
                if differ:
                    sys.exit(f"{split}: {backend} and {BACKENDS[0]} send different messages: {differ[:5]}")
            for task_id, message in first.items():
                digests[task_id][split] = blake3_hex(message)

    entries = sum(len(by_split) for by_split in digests.values())
    header = {
        "harness": f"bigcodebench {installed}",
        "prompts": "the user message of bigcodebench.generate.run_codegen (default prefixes, "
        "subset full) with the openai and anthropic backends (identical): "
        "provider.utility.make_raw_chat_prompt(task[split + '_prompt'], 'full', split, "
        "instruction_prefix, response_prefix, tokenizer=None)",
        "direct_completion": "the complete_prompt unchanged (checked by the script, not listed)",
        "digest": "blake3 of the UTF-8 message, hex",
        "dataset_version": BIGCODEBENCH_VERSION,
        "dataset_file": dataset_path.name,
        "dataset_sha256": hashlib.sha256(dataset_path.read_bytes()).hexdigest(),
        "made_by": "bench/official_prompt_digests.py",
        "entries": entries,
    }
    text = render(header, digests)
    if args.check:
        if args.out.read_text() != text:
            sys.exit(f"{args.out} differs from what the harness makes now")
        print(f"{args.out}: {entries} digests, as the harness makes them")
        return
    args.out.write_text(text)
    print(f"wrote {args.out}: {entries} digests ({len(dataset)} tasks x {len(SPLITS)} splits)")


if __name__ == "__main__":
    main()
