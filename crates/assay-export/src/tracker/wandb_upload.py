# assay's Weights & Biases uploader: logs the runs of the document argv[1] (written by `assay
# export --to wandb`) with wandb's own client, one W&B run per assay run, and answers for each
# on a line starting "assay-upload: ". A run's id is its assay run key, resumed when it exists,
# so a second export updates it: its config and summary set again, its files logged again as an
# artifact (W&B keeps one version of files that did not change). Offline (WANDB_MODE=offline)
# each export writes a run directory to `wandb sync`; they sync into the one run of that id.
# The summary keys an earlier export logged that the run's figures no longer have are removed
# (online: offline, the earlier export's summary is not known); their names are kept in the
# config as `assay.metrics`.
import json
import os
import sys

import wandb

# The config entry that lists the summary keys assay logged.
METRICS_KEY = "assay.metrics"


def answer(index, **fields):
    print("assay-upload: " + json.dumps({"index": index, **fields}), flush=True)


def log(destination, run):
    config = dict(run["params"])
    config.update(run["tags"])
    tracked = wandb.init(
        project=destination["project"],
        entity=destination["entity"],
        id=run["key"],
        name=run["name"],
        resume="allow",
        config=config,
        allow_val_change=True,
        reinit="create_new",
        settings=wandb.Settings(init_timeout=120, console="off", silent=True),
    )
    if tracked.disabled:
        tracked.finish()
        raise SystemExit("W&B is disabled (WANDB_MODE=disabled): nothing was logged")
    try:
        # Offline, W&B cannot know whether the run exists (`wandb sync` will).
        created = None if tracked.offline else not tracked.resumed
        previous = tracked.config.get(METRICS_KEY) or []
        for name in previous:
            if name not in run["metrics"] and name in tracked.summary.keys():
                del tracked.summary[name]
        tracked.summary.update(run["metrics"])
        tracked.config.update({METRICS_KEY: sorted(run["metrics"])}, allow_val_change=True)
        files = wandb.Artifact(f"assay-{run['key']}", type="assay-run")
        for path in run["files"]:
            files.add_file(path, name=os.path.basename(path))
        tracked.log_artifact(files)
        if tracked.offline:
            location = os.path.dirname(tracked.dir)
        else:
            location = tracked.url
        result = {"run_id": tracked.id, "created": created, "location": location}
    finally:
        tracked.finish()
    return result


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        document = json.load(f)
    for index, run in enumerate(document["runs"]):
        try:
            answer(index, **log(document["destination"], run))
        except Exception as error:  # one run refused: the others still go
            answer(index, error=f"{type(error).__name__}: {error}")


main()
