"""``CometLogger``: Lightning's class name and arguments (Lightning 2.5's, on ``comet_ml.start``),
on fulmen's logger contract.

comet_ml is imported when the experiment is first needed, on global rank zero only (Lightning's
imports it in every process's constructor, and comet_ml patches libraries when imported).
Differences from Lightning's, each a fix:

* The experiment key is kept in fulmen checkpoints (and travels into spawned workers): a fit
  resumed from a checkpoint continues the same experiment (``mode="get_or_create"``; offline, a
  new archive with the same key, which Comet merges on upload).
* ``finalize`` ends the experiment (an offline one writes its archive then); a later stage
  continues it with the same key.
* Lightning's deprecated arguments (``experiment_name``, ``project_name``, ``offline``,
  ``save_dir``) are still taken, with a warning that shows the new name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from fulmen.api.logger import Logger, RunRecord, rank_zero_experiment
from fulmen.errors import ConfigurationError
from fulmen.utilities.rank_zero import rank_zero_deprecation

FRAMEWORK_NAME = "fulmen"
_RENAMED = {"experiment_name": "name", "project_name": "project", "save_dir": "offline_directory"}


class CometLogger(Logger):
    """Log to `Comet <https://www.comet.com>`_.

    Args:
        api_key: Comet's API key (default: ``$COMET_API_KEY`` or Comet's config file).
        workspace: the workspace.
        project: the project.
        experiment_key: continue (or create) the experiment with this key.
        mode: ``"get_or_create"``, ``"get"`` or ``"create"`` (comet_ml.start's).
        online: False: an offline experiment written to ``offline_directory`` as an archive.
        prefix: put at the start of every metric name.
        raise_on_error: stop training when Comet fails (default: report it once, go on).
        **kwargs: ``comet_ml.ExperimentConfig`` arguments (``name``, ``tags``,
            ``offline_directory``, ``log_code``...).
    """

    def __init__(self, *, api_key: str | None = None, workspace: str | None = None,
                 project: str | None = None, experiment_key: str | None = None,
                 mode: Literal["get_or_create", "get", "create"] | None = None,
                 online: bool | None = None, prefix: str | None = None,
                 raise_on_error: bool = False, **kwargs: Any) -> None:
        import importlib.util

        if importlib.util.find_spec("comet_ml") is None:
            raise ConfigurationError("CometLogger needs the comet_ml package: "
                                     "pip install 'fulmen[comet]'")
        for old, new in _RENAMED.items():
            if old in kwargs:
                rank_zero_deprecation(f"CometLogger({old}=...) is deprecated; use {new}=...")
                value = kwargs.pop(old)
                if new == "project":
                    project = project or value
                else:
                    kwargs.setdefault(new, value)
        if "offline" in kwargs:
            rank_zero_deprecation("CometLogger(offline=...) is deprecated; use online=...")
            offline = kwargs.pop("offline")
            online = (not offline) if online is None else online
        if mode not in (None, "get_or_create", "get", "create"):
            raise ConfigurationError(f"CometLogger(mode={mode!r}): use 'get_or_create', 'get' "
                                     "or 'create'")
        self._api_key = api_key
        self._workspace = workspace
        self._project_name = project
        self._experiment_key = experiment_key
        self._mode = mode
        self._online = online
        self._prefix = prefix
        self._config_kwargs = kwargs
        self._experiment: Any = None
        self._ended = 0  # experiments ended by finalize (a later stage continues the key)
        self.raise_on_error = raise_on_error

    @classmethod
    def for_root_dir(cls, root_dir: str, **kwargs: Any) -> Logger:
        """``logger="comet"``: offline archives (when offline) in ``<default_root_dir>/comet``."""
        return cls(**{"offline_directory": os.path.join(root_dir, "comet"), **kwargs})

    @classmethod
    def for_conformance(cls, root_dir: str) -> Logger:
        """An offline experiment archived under ``root_dir`` (no API key, no network)."""
        return cls(online=False, offline_directory=os.path.join(root_dir, "comet"),
                   project="fulmen-check", log_code=False, log_env_details=False,
                   log_git_metadata=False, log_git_patch=False)

    def read_run(self) -> RunRecord | None:
        """The offline archives of this experiment (``<key>-*.zip``, one per stage), read as
        Comet's uploader reads them: ``experiment.json`` and ``messages.json``."""
        import json
        import zipfile
        from pathlib import Path

        from comet_ml.config.config_constants import (
            OFFLINE_EXPERIMENT_JSON_FILE_NAME,
            OFFLINE_EXPERIMENT_MESSAGES_JSON_FILE_NAME,
        )

        if self.save_dir is None or self.version is None:
            return None
        metrics: dict[str, list[tuple[int, float]]] = {}
        params: dict[str, Any] = {}
        keys: set[str] = set()
        for path in sorted(Path(self.save_dir).glob("*.zip"), key=lambda p: p.stat().st_mtime):
            with zipfile.ZipFile(path) as archive:
                meta = json.loads(archive.read(OFFLINE_EXPERIMENT_JSON_FILE_NAME))
                keys.add(meta["offline_id"])
                if meta["offline_id"] != self.version:
                    continue
                for line in archive.read(OFFLINE_EXPERIMENT_MESSAGES_JSON_FILE_NAME).splitlines():
                    message = json.loads(line)
                    payload = message["payload"]
                    if message["type"] == "metric_msg":
                        metric = payload["metric"]
                        if metric["step"] is not None and not metric["metricName"].startswith(
                                "sys."):
                            metrics.setdefault(metric["metricName"], []).append(
                                (int(metric["step"]), float(metric["metricValue"])))
                    elif message["type"] == "parameter_msg":
                        params[payload["param"]["paramName"].replace("|", "/")] = \
                            payload["param"]["paramValue"]
        return RunRecord(metrics, params, None, runs=len(keys))

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_experiment_key"] = self.version
        state["_experiment"] = None  # a spawned rank zero continues the same key
        return state

    @property
    @rank_zero_experiment
    def experiment(self) -> Any:
        """The ``comet_ml`` experiment (created, or continued, on first use; rank zero only)."""
        if self._experiment is None:
            os.environ.setdefault("COMET_DISABLE_AUTO_LOGGING", "1")  # before comet_ml loads
            import comet_ml

            config = dict(self._config_kwargs)
            if self._online is False:
                config.setdefault("disabled", False)
            mode = self._mode
            if mode is None and self._experiment_key is not None:
                mode = "get_or_create"
            self._experiment = comet_ml.start(
                api_key=self._api_key, workspace=self._workspace, project=self._project_name,
                experiment_key=self._experiment_key, mode=mode, online=self._online,
                experiment_config=comet_ml.ExperimentConfig(**config))
            self._experiment_key = self._experiment.get_key()
            self._project_name = self._experiment.project_name
            self._experiment.log_other("Created from", FRAMEWORK_NAME)
        return self._experiment

    @property
    def name(self) -> str | None:
        return self._project_name

    @property
    def version(self) -> str | None:
        """The experiment key, once there is one (reading it creates nothing)."""
        return self._experiment.get_key() if self._experiment is not None \
            else self._experiment_key

    @property
    def save_dir(self) -> str | None:
        directory = self._config_kwargs.get("offline_directory")
        return str(directory) if directory is not None else None

    def state_dict(self) -> dict[str, Any]:
        return {"experiment_key": self.version}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue the checkpoint's experiment (unless ``mode="create"``)."""
        if self._mode != "create" and state.get("experiment_key") and self._experiment is None:
            self._experiment_key = str(state["experiment_key"])

    def log_hyperparams(self, params: dict[str, Any]) -> None:
        self.experiment.log_parameters(params, nested_support=True)

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        values = dict(metrics)
        epoch = values.pop("epoch", None)
        self.experiment.log_metrics(values, step=step,
                                    epoch=None if epoch is None else int(epoch),
                                    prefix=self._prefix)

    def log_graph(self, model: Any, input_array: Any = None) -> None:
        if self._experiment is not None:
            self._experiment.set_model_graph(model)

    def save(self) -> None:
        if self._experiment is not None:
            self._experiment.flush()

    def finalize(self, status: str) -> None:
        """End the experiment (an offline one writes its archive); a later stage continues it."""
        if self._experiment is None:
            return
        self._experiment_key = self._experiment.get_key()
        self._experiment.end()
        self._experiment = None
        self._ended += 1
