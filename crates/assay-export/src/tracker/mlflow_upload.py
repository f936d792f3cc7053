# assay's MLflow uploader: logs the runs of the document argv[1] (written by `assay export --to
# mlflow`) with MLflow's own client, one MLflow run per assay run, and answers for each on a
# line starting "assay-upload: ". A run is found again by its `assay.run_key` tag, so a second
# export updates it: the same parameters (MLflow refuses changing one: a change is a warning),
# each metric whose value changed logged after the run's latest point of it (so that it is the
# one MLflow shows) and the unchanged ones not again, tags and artifacts replaced.
import json
import sys
from urllib.parse import urlsplit, urlunsplit

from mlflow.entities import Metric, Param, RunTag, ViewType
from mlflow.tracking import MlflowClient

RUN_KEY = "assay.run_key"
# The tag that lists the metrics an export logged: a later export says which of them the run's
# figures no longer have (MLflow cannot delete a metric).
METRICS_TAG = "assay.metrics"
# The longest tag value MLflow keeps (MAX_TAG_VAL_LENGTH, MLflow 3).
MAX_TAG_CHARS = 8000


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


def without_user_info(url):
    """`url` without the user name and password it may carry (`https://user:pass@host`)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def find(client, experiment, key, warnings):
    """The run of `key`: an active one before a deleted one; more than one is said."""
    found = client.search_runs(
        [experiment],
        filter_string=f"tags.`{RUN_KEY}` = '{key}'",
        run_view_type=ViewType.ALL,
        max_results=10,
    )
    found = sorted(found, key=lambda r: r.info.lifecycle_stage == "deleted")
    if len(found) > 1:
        ids = ", ".join(r.info.run_id for r in found)
        warnings.append(
            f"{len(found)} MLflow runs carry the tag {RUN_KEY} = {key} ({ids}): "
            f"updated {found[0].info.run_id}; delete the others"
        )
    return found[0] if found else None


def metrics_to_log(client, run_id, metrics, measured_ms, logged):
    """The points to log: each metric whose value is not the run's latest, after that
    latest's time (MLflow shows the latest point, and of equal times the larger value)."""
    points = []
    for name, value in metrics.items():
        if name not in logged:
            points.append(Metric(name, value, measured_ms, 0))
        elif logged[name] != value:
            latest = max(m.timestamp for m in client.get_metric_history(run_id, name))
            points.append(Metric(name, value, max(measured_ms, latest + 1), 0))
    return points


def batches(items, size):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def log(client, experiment, run):
    warnings = []
    existing = find(client, experiment, run["key"], warnings)
    if existing is not None:
        run_id = existing.info.run_id
        if existing.info.lifecycle_stage == "deleted":
            client.restore_run(run_id)
        logged = existing.data.params
        logged_metrics = existing.data.metrics
        listed = existing.data.tags.get(METRICS_TAG)
        previous = json.loads(listed) if listed else list(logged_metrics)
    else:
        created = client.create_run(
            experiment,
            start_time=run["started_ms"],
            tags={RUN_KEY: run["key"]},
            run_name=run["name"],
        )
        run_id = created.info.run_id
        logged = {}
        logged_metrics = {}
        previous = []
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
    listing = json.dumps(sorted(run["metrics"]))
    if len(listing) <= MAX_TAG_CHARS:
        tags.append(RunTag(METRICS_TAG, listing))
    else:
        warnings.append(
            f"the {len(run['metrics'])} metrics' names are longer than an MLflow tag keeps: "
            f"no {METRICS_TAG} tag"
        )
    stale = sorted(n for n in previous if n in logged_metrics and n not in run["metrics"])
    if stale:
        warnings.append(
            "metrics the run's figures no longer have keep their last value in MLflow, which "
            "cannot delete a metric: " + ", ".join(stale)
        )
    metrics = metrics_to_log(client, run_id, run["metrics"], run["measured_ms"], logged_metrics)
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
    tracking_uri = without_user_info(client.tracking_uri)
    if tracking_uri.startswith(("http://", "https://")):
        location = f"{tracking_uri.rstrip('/')}/#/experiments/{experiment}/runs/{run_id}"
    else:
        location = f"{tracking_uri} (experiment {experiment})"
    created = existing is None
    return {"run_id": run_id, "created": created, "location": location, "warnings": warnings}


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        document = json.load(f)
    destination = document["destination"]
    tracking_uri = destination["tracking_uri"]
    client = MlflowClient(tracking_uri=tracking_uri)

    def said(error):
        """The error in a line, without the tracking URI's credentials."""
        text = f"{type(error).__name__}: {error}"
        return text.replace(tracking_uri, without_user_info(tracking_uri))

    try:
        experiment = experiment_id(client, destination["experiment"])
    except Exception as error:  # no server, no access: said in a line, not a traceback
        raise SystemExit(said(error))
    for index, run in enumerate(document["runs"]):
        try:
            answer(index, **log(client, experiment, run))
        except Exception as error:  # one run refused: the others still go
            answer(index, error=said(error))


main()
