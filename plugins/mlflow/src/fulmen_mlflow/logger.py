"""``MLFlowLogger``: Lightning's class name and arguments, on fulmen's logger contract.

mlflow is imported when the run is first needed, on global rank zero only (the other ranks never
import it). Differences from Lightning's, each a fix:

* ``tracking_uri`` defaults to ``$MLFLOW_TRACKING_URI`` read at construction (Lightning reads it
  when its module is imported), else a SQLite database ``<save_dir>/mlflow.db`` with artifacts in
  ``<save_dir>/artifacts`` (Lightning's ``file:<save_dir>`` store is refused by MLflow 3); the
  global ``mlflow.set_tracking_uri`` is left alone.
* Checkpoints go to ``checkpoints/<stem>`` with the stem made of characters every MLflow accepts
  (``epoch=0-step=151`` -> ``epoch_0-step_151``; MLflow 3 rejects Lightning's paths), and a
  checkpoint ``ModelCheckpoint`` deletes (top-k) is deleted from the run's artifacts too.
* The run id is kept in fulmen checkpoints: a fit resumed from one continues the same run, which
  goes back to RUNNING; ``finalize`` ends it FINISHED, FAILED or KILLED (interrupted).
* ``name`` is the experiment name and ``version`` the run id once there is one, without creating
  a run (Lightning's create one when read).
* Parameter values are cut at MLflow's limit (6000 characters), not 250.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from fulmen.api.logger import CheckpointArtifacts, Logger, RunRecord, rank_zero_experiment
from fulmen.errors import ConfigurationError
from fulmen.loggers.utils import add_prefix, flatten
from fulmen.utilities.rank_zero import rank_zero_warn

LOCAL_FILE_URI_PREFIX = "file:"
_STATUS = {"success": "FINISHED", "failed": "FAILED", "interrupted": "KILLED",
           "finished": "FINISHED"}  # (Lightning's users call finalize("finished") too)
_BAD_METRIC_CHARACTERS = re.compile(r"[^a-zA-Z0-9_/. \-:]+")


class MLFlowLogger(Logger):
    """Log to `MLflow <https://mlflow.org>`_: a tracking server (``tracking_uri="http://..."``),
    a database (``"sqlite:///mlflow.db"``) or a local folder (``save_dir``).

    Args:
        experiment_name: the experiment (created when missing).
        run_name: the run's name (the ``mlflow.runName`` tag).
        tracking_uri: where MLflow stores runs; default ``$MLFLOW_TRACKING_URI``, else
            ``sqlite:///<save_dir>/mlflow.db``.
        tags: tags of the run.
        save_dir: the local folder used when there is no tracking URI.
        log_model: log ``ModelCheckpoint``'s checkpoints as artifacts: ``"all"`` as they are
            saved, ``True`` at the end of training (as saved when ``save_top_k == -1``).
        prefix: put at the start of every metric name (``"<prefix>-<name>"``).
        artifact_location: where a newly created experiment keeps artifacts.
        run_id: continue this run instead of starting one.
        synchronous: MLflow's ``synchronous`` for logging calls (False: asynchronous logging;
            None: MLflow's default).
        raise_on_error: stop training when MLflow fails (default: report it once, go on).
    """

    LOGGER_JOIN_CHAR = "-"

    def __init__(self, experiment_name: str = "lightning_logs", run_name: str | None = None,
                 tracking_uri: str | None = None, tags: dict[str, Any] | None = None,
                 save_dir: str | None = "./mlruns",
                 log_model: Literal[True, False, "all"] = False, prefix: str = "",
                 artifact_location: str | None = None, run_id: str | None = None,
                 synchronous: bool | None = None, raise_on_error: bool = False) -> None:
        import importlib.util

        if importlib.util.find_spec("mlflow") is None:
            raise ConfigurationError("MLFlowLogger needs the mlflow package: "
                                     "pip install 'fulmen[mlflow]'")
        tracking_uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
        self._local_dir: str | None = None
        if not tracking_uri:  # MLflow 3 refuses file stores: a database in save_dir
            self._local_dir = os.path.abspath(save_dir or "./mlruns")
            tracking_uri = f"sqlite:///{os.path.join(self._local_dir, 'mlflow.db')}"
            if artifact_location is None:
                artifact_location = Path(self._local_dir, "artifacts").as_uri()
        self._experiment_name = experiment_name
        self._experiment_id: str | None = None
        self._tracking_uri = tracking_uri
        self._run_name = run_name
        self._run_id = run_id
        self._run_id_given = run_id is not None
        self.tags = dict(tags or {})
        self._artifacts = CheckpointArtifacts(log_model)
        self._prefix = prefix
        self._artifact_location = artifact_location
        self._log_batch_kwargs = {} if synchronous is None else {"synchronous": synchronous}
        self._pending: list[Any] = []  # asynchronous operations not yet waited for
        self._client: Any = None
        self._ended: str | None = None  # why the run is not RUNNING here: a status, "resumed"
        self.raise_on_error = raise_on_error

    @classmethod
    def for_root_dir(cls, root_dir: str, **kwargs: Any) -> Logger:
        """``logger="mlflow"``: runs in ``<default_root_dir>/mlruns`` unless a tracking URI is
        given (argument or ``$MLFLOW_TRACKING_URI``)."""
        return cls(**{"save_dir": os.path.join(root_dir, "mlruns"), **kwargs})

    @classmethod
    def for_conformance(cls, root_dir: str) -> Logger:
        """Runs in a local database under ``root_dir`` (no server)."""
        return cls(save_dir=os.path.join(root_dir, "mlruns"), experiment_name="fulmen-check")

    def read_run(self) -> RunRecord | None:
        """The run as MLflow's client reads it: parameters, every metric's history, status, and
        how many runs the experiment holds."""
        if self._run_id is None:
            return None
        from mlflow.tracking import MlflowClient

        client = MlflowClient(self._tracking_uri)
        run = client.get_run(self._run_id)
        metrics = {key: [(m.step, m.value) for m in sorted(
            client.get_metric_history(self._run_id, key), key=lambda m: (m.timestamp, m.step))]
            for key in run.data.metrics}
        status = {"FINISHED": "success", "FAILED": "failed", "KILLED": "interrupted"}.get(
            run.info.status)
        runs = client.search_runs([run.info.experiment_id])
        artifacts = [os.path.basename(a.path) for a in
                     client.list_artifacts(self._run_id, "checkpoints")]
        return RunRecord(metrics, dict(run.data.params), status, runs=len(runs),
                         artifacts=artifacts)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"], state["_pending"] = None, []  # a spawned rank makes its own client
        return state

    # ------------------------------------------------------------------ the run

    @property
    @rank_zero_experiment
    def experiment(self) -> Any:
        """The ``mlflow.MlflowClient``, with this logger's run created (or continued)."""
        from mlflow.tracking import MlflowClient

        if self._client is None:
            if self._local_dir is not None:
                os.makedirs(self._local_dir, exist_ok=True)
            self._client = MlflowClient(self._tracking_uri)
        client = self._client
        if self._run_id is None:
            self._create_run(client)
        elif self._experiment_id is None:
            self._experiment_id = client.get_run(self._run_id).info.experiment_id
        return client

    def _logging_client(self) -> Any:
        """The client, with the run RUNNING again if it was ended (a later stage, a resume)."""
        client: Any = self.experiment
        if self._ended is not None:
            if client.get_run(self._run_id).info.status != "RUNNING":
                client.update_run(self._run_id, status="RUNNING")
            self._ended = None
        return client

    def _create_run(self, client: Any) -> None:
        from mlflow.tracking.context.registry import resolve_tags
        from mlflow.utils.mlflow_tags import MLFLOW_RUN_NAME

        if self._experiment_id is None:
            found = client.get_experiment_by_name(self._experiment_name)
            if found is not None and found.lifecycle_stage != "deleted":
                self._experiment_id = found.experiment_id
            else:
                self._experiment_id = client.create_experiment(
                    name=self._experiment_name, artifact_location=self._artifact_location)
        tags = dict(self.tags)
        if self._run_name is not None:
            if MLFLOW_RUN_NAME in tags:
                rank_zero_warn(f"MLFlowLogger: the tag {MLFLOW_RUN_NAME} is replaced by "
                               f"run_name={self._run_name!r}")
            tags[MLFLOW_RUN_NAME] = self._run_name
        run = client.create_run(experiment_id=self._experiment_id, tags=resolve_tags(tags))
        self._run_id = run.info.run_id

    @property
    def run_id(self) -> str | None:
        """The run id (creates the run on first use, as Lightning's)."""
        _ = self.experiment
        return self._run_id

    @property
    def experiment_id(self) -> str | None:
        _ = self.experiment
        return self._experiment_id

    @property
    def name(self) -> str | None:
        return self._experiment_name

    @property
    def version(self) -> str | None:
        return self._run_id

    @property
    def save_dir(self) -> str | None:
        """The local folder runs are kept in (no tracking URI given), else None."""
        if self._local_dir is not None:
            return self._local_dir
        if self._tracking_uri.startswith(LOCAL_FILE_URI_PREFIX):
            return self._tracking_uri[len(LOCAL_FILE_URI_PREFIX):]
        return None

    @property
    def tracking_uri(self) -> str:
        return self._tracking_uri

    def state_dict(self) -> dict[str, Any]:
        return {"run_id": self._run_id, "experiment_id": self._experiment_id}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue the checkpoint's run (unless ``run_id=`` was given)."""
        if not self._run_id_given and state.get("run_id"):
            self._run_id = str(state["run_id"])
            self._experiment_id = None  # read from the run when it is continued
            self._ended = "resumed"  # RUNNING again when logging starts

    def logged_steps(self) -> dict[str, int]:
        """The last step of each metric the continued run holds (read from the server)."""
        if self._run_id is None:
            return {}
        client: Any = self.experiment
        return {key: max((m.step for m in client.get_metric_history(self._run_id, key)),
                         default=-1)
                for key in client.get_run(self._run_id).data.metrics}

    # ------------------------------------------------------------------ logging

    def log_hyperparams(self, params: dict[str, Any]) -> None:
        from mlflow.entities import Param
        from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH

        items = [Param(key=k, value=str(v)[:MAX_PARAM_VAL_LENGTH])
                 for k, v in flatten(params).items()]
        client = self._logging_client()
        for start in range(0, len(items), 100):  # MLflow's most per request
            self._track(client.log_batch(run_id=self._run_id, params=items[start:start + 100],
                                         **self._log_batch_kwargs))

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        from mlflow.entities import Metric

        timestamp = int(time.time() * 1000)
        items = []
        for key, value in add_prefix(metrics, self._prefix, self.LOGGER_JOIN_CHAR).items():
            if isinstance(value, str):
                rank_zero_warn(f"MLFlowLogger: discarding the metric {key}={value!r}, a string")
                continue
            clean = _BAD_METRIC_CHARACTERS.sub("", key)
            if clean != key:
                rank_zero_warn(f"MLFlowLogger: MLflow only allows '_', '/', '.', ' ', '-' and "
                               f"':' special characters in metric names; {key!r} is logged as "
                               f"{clean!r}", category=RuntimeWarning)
            items.append(Metric(key=clean, value=float(value), timestamp=timestamp,
                                step=step or 0))
        client = self._logging_client()
        self._track(client.log_batch(run_id=self._run_id, metrics=items,
                                     **self._log_batch_kwargs))

    def _track(self, operation: Any) -> None:
        if operation is not None:  # asynchronous logging returns something to wait for
            self._pending.append(operation)

    def save(self) -> None:
        pending, self._pending = self._pending, []
        for operation in pending:
            operation.wait()

    # ------------------------------------------------------------------ checkpoints

    def after_save_checkpoint(self, checkpoint_callback: Any) -> None:
        if self._artifacts.now(checkpoint_callback):
            self._sync_checkpoints(checkpoint_callback)

    def _sync_checkpoints(self, callback: Any) -> None:
        client: Any = self._logging_client()
        new, gone = self._artifacts.changes(callback)
        for item in new:
            folder = f"checkpoints/{item.artifact_name}"
            client.log_artifact(self._run_id, item.path, folder)
            client.log_dict(self._run_id, {"score": item.score, "aliases": list(item.aliases),
                                           "original_filename": os.path.basename(item.path)},
                            f"{folder}/metadata.yaml")
            self._artifacts.uploaded_file(item)
        if gone:
            from mlflow.store.artifact.artifact_repository_registry import (
                get_artifact_repository,
            )

            repository = get_artifact_repository(client.get_run(self._run_id).info.artifact_uri,
                                                 tracking_uri=self._tracking_uri)
            for path in gone:
                repository.delete_artifacts(f"checkpoints/{self._artifacts.deleted(path)}")

    def finalize(self, status: str) -> None:
        """Wait for asynchronous logging, upload the checkpoints of ``log_model=True`` (after
        a successful fit), and end the run FINISHED, FAILED or KILLED."""
        if self._client is None or self._run_id is None:
            return  # nothing was logged: no run to end
        self.save()
        if status == "success":
            for callback in self._artifacts.callbacks.values():
                self._sync_checkpoints(callback)
        self._client.set_terminated(self._run_id, _STATUS.get(status, "FINISHED"))
        self._ended = status
