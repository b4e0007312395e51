#!/usr/bin/env python3
"""What an MLflow tracking server holds, read with MLflow's own client, for
tests/test_mlflow.cpp (run by the mlflow venv's python, SKEIN_MLFLOW_PYTHON).

  mlflow_read.py URI EXPERIMENT   the experiment's runs as JSON on stdout
                                  ("0": MLflow's default experiment)

Each run: run_id, name, status, params, tags, artifacts (every file's path,
folders walked) and metrics: key -> [[step, value], ...] from
MlflowClient.get_metric_history, by step then timestamp (non-finite values
as "NaN", "Infinity", "-Infinity").
"""
import json
import math
import sys

from mlflow.tracking import MlflowClient


def number(v):
    return v if math.isfinite(v) else ("NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity"))


def files(client, run_id, path=None):
    out = []
    for f in client.list_artifacts(run_id, path):
        out += files(client, run_id, f.path) if f.is_dir else [f.path]
    return out


def main():
    uri, name = sys.argv[1], sys.argv[2]
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment(name) if name == "0" else client.get_experiment_by_name(name)
    runs = []
    for r in client.search_runs([experiment.experiment_id]) if experiment else []:
        run_id = r.info.run_id
        metrics = {}
        for key in r.data.metrics:
            history = sorted(client.get_metric_history(run_id, key), key=lambda m: (m.step, m.timestamp))
            metrics[key] = [[m.step, number(m.value)] for m in history]
        runs.append({"run_id": run_id, "name": r.info.run_name, "status": r.info.status, "params": r.data.params,
                     "tags": r.data.tags, "metrics": metrics, "artifacts": sorted(files(client, run_id))})
    json.dump(runs, sys.stdout)


if __name__ == "__main__":
    main()
