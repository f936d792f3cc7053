# assay's MLflow uploader: logs the runs of the document argv[1] (written by `assay export --to
# mlflow`) with MLflow's own client, one MLflow run per assay run, and answers for each on a
# line starting "assay-upload: ". A run is found again by its `assay.run_key` tag, so a second
# export updates it: the same parameters (MLflow refuses changing one: a change is a warning),
# metrics at the same time and step (MLflow keeps no duplicate point), tags and artifacts
# replaced.
import json
import sys

from mlflow.entities import Metric, Param, RunTag, ViewType
from mlflow.tracking import MlflowClient

RUN_KEY = "assay.run_key"


def answer(index, **fields):
    print("assay-upload: " + json.dumps({"index": index, **fields}), flush=True)


def experiment_id(client, name):
    found = client.get_experiment_by_name(name)
    if found is None:
        return client.create_experiment(name)
    if found.lifecycle_stage == "deleted":
        raise SystemExit(
            f"the MLflow experiment {name!r} is deleted: restore it (`mlflow experiments restore "
            f"--experiment-id {found.experiment_id}`) or export to another (--experiment)"
        )
    return found.experiment_id


def batches(items, size):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def log(client, experiment, run):
    found = client.search_runs(
        [experiment],
        filter_string=f"tags.`{RUN_KEY}` = '{run['key']}'",
        run_view_type=ViewType.ALL,
        max_results=1,
    )
    warnings = []
    if found:
        existing = found[0]
        run_id = existing.info.run_id
        if existing.info.lifecycle_stage == "deleted":
            client.restore_run(run_id)
        logged = existing.data.params
    else:
        created = client.create_run(
            experiment,
            start_time=run["started_ms"],
            tags={RUN_KEY: run["key"]},
            run_name=run["name"],
        )
        run_id = created.info.run_id
        logged = {}
    params = []
    for name, value in run["params"].items():
        if name not in logged:
            params.append(Param(name, value))
        elif logged[name] != value:
            warnings.append(
                f"parameter {name} is {logged[name]!r} in MLflow, {value!r} now "
                "(MLflow keeps the first value)"
            )
    tags = [RunTag(name, value) for name, value in run["tags"].items()]
    tags.append(RunTag("mlflow.runName", run["name"]))
    metrics = [
        Metric(name, value, run["measured_ms"], 0) for name, value in run["metrics"].items()
    ]
    # MLflow's limits per call: 100 parameters, 100 tags, 1000 metrics, 1000 in all.
    for chunk in batches(params, 100):
        client.log_batch(run_id, params=chunk)
    for chunk in batches(tags, 100):
        client.log_batch(run_id, tags=chunk)
    for chunk in batches(metrics, 1000):
        client.log_batch(run_id, metrics=chunk)
    for path in run["files"]:
        client.log_artifact(run_id, path)
    if run["finished_ms"] is not None:
        client.set_terminated(run_id, status="FINISHED", end_time=run["finished_ms"])
    else:
        client.update_run(run_id, status="RUNNING")
    experiment_url = client.tracking_uri.rstrip("/")
    if experiment_url.startswith(("http://", "https://")):
        location = f"{experiment_url}/#/experiments/{experiment}/runs/{run_id}"
    else:
        location = f"{client.tracking_uri} (experiment {experiment})"
    return {"run_id": run_id, "created": not found, "location": location, "warnings": warnings}


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        document = json.load(f)
    destination = document["destination"]
    client = MlflowClient(tracking_uri=destination["tracking_uri"])
    try:
        experiment = experiment_id(client, destination["experiment"])
    except Exception as error:  # no server, no access: said in a line, not a traceback
        raise SystemExit(f"{type(error).__name__}: {error}")
    for index, run in enumerate(document["runs"]):
        try:
            answer(index, **log(client, experiment, run))
        except Exception as error:  # one run refused: the others still go
            answer(index, error=f"{type(error).__name__}: {error}")


main()
