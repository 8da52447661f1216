"""``WandbLogger``: Lightning's class name and arguments, on fulmen's logger contract.

wandb is imported when the run is first needed, on global rank zero only: the other ranks never
create a run (Lightning's duplicated runs under DDP came from ranks and spawned workers calling
``wandb.init``). Differences from Lightning's, each a fix:

* The run id is kept in fulmen checkpoints (and travels with the logger into spawned workers): a
  fit resumed from a checkpoint, a SLURM requeue or a restart continues the same run, with W&B's
  own step going on (metrics are plotted against ``trainer/global_step``, Lightning's axis).
* ``resume="never"`` is honoured: a resumed fit then starts a new run instead of continuing.
* ``offline=True`` passes ``mode="offline"`` to ``wandb.init`` instead of setting ``WANDB_MODE``
  for the whole process.
* ``finalize`` finishes the run (exit code 0, or 1 when the stage failed or was interrupted); a
  later stage (``trainer.test`` after ``fit``) continues it.
* ``log_model`` uploads checkpoints as versions of one model artifact; with ``log_model=True`` at
  the end of a successful fit. A checkpoint ``ModelCheckpoint`` deletes (top-k) has its artifact
  version deleted too when the run is online (offline runs have no server to delete from).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from fulmen.api.logger import CheckpointArtifacts, Logger, RunRecord, rank_zero_experiment
from fulmen.errors import ConfigurationError
from fulmen.loggers.utils import add_prefix, flatten
from fulmen.utilities.rank_zero import rank_zero_warn

STEP_METRIC = "trainer/global_step"


class WandbLogger(Logger):
    """Log to `Weights & Biases <https://wandb.ai>`_.

    Args:
        name: the run's display name.
        save_dir: where wandb writes its run files (``<save_dir>/wandb``).
        version: the run id to use or continue (same as ``id``).
        offline: write the run to files only (``wandb sync`` uploads them later).
        dir: like ``save_dir`` (wandb's name).
        id: the run id.
        anonymous: log anonymously.
        project: the project; default ``$WANDB_PROJECT``, else ``"lightning_logs"``.
        log_model: log ``ModelCheckpoint``'s checkpoints as artifacts: ``"all"`` as they are
            saved, ``True`` at the end of training (as saved when ``save_top_k == -1``).
        experiment: a ``wandb`` run to log to (made by you).
        prefix: put at the start of every metric name (``"<prefix>-<name>"``).
        checkpoint_name: the model artifact's name (default ``model-<run id>``).
        add_file_policy: wandb's policy for artifact files (``"mutable"``: copied).
        raise_on_error: stop training when W&B fails (default: report it once, go on).
        **kwargs: more ``wandb.init`` arguments (``entity``, ``tags``, ``group``, ``config``,
            ``resume``, ``settings``...).
    """

    LOGGER_JOIN_CHAR = "-"

    def __init__(self, name: str | None = None, save_dir: str | os.PathLike[str] = ".",
                 version: str | None = None, offline: bool = False,
                 dir: str | os.PathLike[str] | None = None, id: str | None = None,
                 anonymous: bool | None = None, project: str | None = None,
                 log_model: Literal["all"] | bool = False, experiment: Any = None,
                 prefix: str = "", checkpoint_name: str | None = None,
                 add_file_policy: Literal["mutable", "immutable"] = "mutable",
                 raise_on_error: bool = False, **kwargs: Any) -> None:
        import importlib.util

        if importlib.util.find_spec("wandb") is None:
            raise ConfigurationError("WandbLogger needs the wandb package: "
                                     "pip install 'fulmen[wandb]'")
        if offline and log_model:
            raise ConfigurationError(
                f"WandbLogger(offline=True, log_model={log_model!r}): checkpoints cannot be "
                "uploaded by an offline run; set offline=False to log them, or log_model=False")
        if kwargs.get("resume") not in (None, "allow", "must", "never", "auto", True, False):
            raise ConfigurationError(f"WandbLogger(resume={kwargs['resume']!r}): use 'allow', "
                                     "'must', 'never' or 'auto'")
        self._offline = offline
        self._artifacts = CheckpointArtifacts(log_model)
        self._prefix = prefix
        self._experiment = experiment
        self._checkpoint_name = checkpoint_name
        self.add_file_policy = add_file_policy
        self._logged_versions: dict[str, Any] = {}  # artifact name -> logged wandb artifact
        self._resume = kwargs.pop("resume", None)
        if save_dir is not None:
            save_dir = os.fspath(save_dir)
        elif dir is not None:
            dir = os.fspath(dir)
        project = project or os.environ.get("WANDB_PROJECT", "lightning_logs")
        self._wandb_init: dict[str, Any] = {
            "name": name, "project": project, "dir": save_dir or dir,
            "anonymous": "allow" if anonymous else None, **kwargs}
        self._project = project
        self._save_dir = self._wandb_init["dir"]
        self._name = name
        self._id = version or id
        self._finished = 0  # runs finished by finalize (a later stage continues the run)
        self.raise_on_error = raise_on_error

    @classmethod
    def for_root_dir(cls, root_dir: str, **kwargs: Any) -> Logger:
        """``logger="wandb"``: run files under ``<default_root_dir>/wandb``."""
        return cls(**{"save_dir": root_dir, **kwargs})

    @classmethod
    def for_conformance(cls, root_dir: str) -> Logger:
        """An offline run under ``root_dir`` (no login, no network)."""
        return cls(save_dir=root_dir, offline=True, project="fulmen-check")

    def read_run(self) -> RunRecord | None:
        """This job's runs as their run files hold them (offline runs, or the local copy an
        online run writes), read with :mod:`fulmen_wandb.run_files`."""
        from fulmen_wandb.run_files import read_run

        if self._save_dir is None:
            return None
        deadline = time.monotonic() + 30
        while True:  # wandb's core process writes the file after finish() returns
            runs = read_run(Path(self._save_dir))
            run = runs.get(self._id or "")
            done = run is not None and (run["complete"] or self._experiment is not None)
            if done or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if run is None:
            return None
        metrics: dict[str, list[tuple[int, float]]] = {}
        for row in run["history"]:
            step = row.get(STEP_METRIC)
            for key, value in row.items():
                if not key.startswith("_") and key != STEP_METRIC and step is not None \
                        and isinstance(value, int | float):
                    metrics.setdefault(key, []).append((int(step), float(value)))
        params = {k: v for k, v in run["config"].items() if not k.startswith("_")}
        codes = run["exit_codes"]
        status = None if not codes else "success" if codes[-1] == 0 else "failed"
        return RunRecord(metrics, flatten(params), status, runs=len(runs),
                         artifacts=[a.name for a in run["artifacts"]])

    def __getstate__(self) -> dict[str, Any]:
        """A spawned worker gets the run id, never the run: its rank zero continues the run this
        process made (if any) instead of making another."""
        state = dict(self.__dict__)
        if self._experiment is not None:
            state["_id"] = self._experiment.id
        state["_experiment"], state["_logged_versions"] = None, {}
        return state

    # ------------------------------------------------------------------ the run

    @property
    @rank_zero_experiment
    def experiment(self) -> Any:
        """The ``wandb`` run (created, or continued, on first use; global rank zero only)."""
        if self._experiment is None:
            import wandb

            if wandb.run is not None and self._id in (None, wandb.run.id):
                rank_zero_warn("WandbLogger: a wandb run is already in progress in this process; "
                               "logging to it. Call wandb.finish() first to get a new run.")
                self._experiment = wandb.run
            else:
                init = {k: v for k, v in self._wandb_init.items() if v is not None}
                if self._offline:
                    init["mode"] = "offline"
                if self._id is not None:
                    init["id"] = self._id
                    init["resume"] = self._resume or "allow"
                elif self._resume is not None:
                    init["resume"] = self._resume
                self._experiment = wandb.init(**init)
                self._experiment.define_metric(STEP_METRIC)
                self._experiment.define_metric("*", step_metric=STEP_METRIC, step_sync=True)
            self._id = self._experiment.id
        return self._experiment

    @property
    def name(self) -> str | None:
        """The project (Lightning's); the run's display name is ``experiment.name``."""
        return self._project

    @property
    def version(self) -> str | None:
        """The run id, once there is one (reading it creates no run)."""
        return self._experiment.id if self._experiment is not None else self._id

    @property
    def save_dir(self) -> str | None:
        return self._save_dir

    def state_dict(self) -> dict[str, Any]:
        return {"run_id": self.version, "project": self._project}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue the checkpoint's run; with ``resume="never"`` start a new one."""
        if self._resume == "never" or not state.get("run_id"):
            return
        if self._experiment is not None and self._experiment.id != state["run_id"]:
            rank_zero_warn(f"WandbLogger: the checkpoint's run {state['run_id']!r} is not "
                           f"continued: this logger logs to run {self._experiment.id!r} already")
            return
        self._id = str(state["run_id"])

    def logged_steps(self) -> dict[str, int]:
        """The last ``trainer/global_step`` of each metric in the continued run's local run
        files (written by online runs too); none when they are not on this machine."""
        from fulmen_wandb.run_files import read_run

        if self._id is None or self._save_dir is None:
            return {}
        run = read_run(Path(self._save_dir)).get(self._id)
        last: dict[str, int] = {}
        for row in run["history"] if run else []:
            step = row.get(STEP_METRIC)
            if step is not None:
                for key in row:
                    if not key.startswith("_") and key != STEP_METRIC:
                        last[key] = max(last.get(key, -1), int(step))
        return last

    # ------------------------------------------------------------------ logging

    def log_hyperparams(self, params: dict[str, Any]) -> None:
        self.experiment.config.update(params, allow_val_change=True)

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        metrics = add_prefix(metrics, self._prefix, self.LOGGER_JOIN_CHAR)
        if step is not None:
            metrics[STEP_METRIC] = step
        self.experiment.log(metrics)

    def watch(self, model: Any, log: str | None = "gradients", log_freq: int = 100,
              log_graph: bool = True) -> None:
        """Log gradients (and parameters with ``log="all"``) every ``log_freq`` steps."""
        self.experiment.watch(model, log=log, log_freq=log_freq, log_graph=log_graph)

    def log_table(self, key: str, columns: list[Any] | None = None,
                  data: list[list[Any]] | None = None, dataframe: Any = None,
                  step: int | None = None) -> None:
        import wandb

        self._log_media(key, wandb.Table(columns=columns, data=data, dataframe=dataframe), step)

    def log_text(self, key: str, columns: list[str] | None = None,
                 data: list[list[str]] | None = None, dataframe: Any = None,
                 step: int | None = None) -> None:
        self.log_table(key, columns, data, dataframe, step)

    def log_image(self, key: str, images: list[Any], step: int | None = None,
                  **kwargs: Any) -> None:
        """Images (tensors, arrays, PIL images or paths); ``kwargs`` are lists, one per image
        (``caption=[...]``)."""
        import wandb

        self._log_media(key, [wandb.Image(img, **each) for img, each in
                              zip(images, _per_item(images, kwargs), strict=True)], step)

    def _log_media(self, key: str, value: Any, step: int | None) -> None:
        """Tables and images: W&B objects, not numbers (so not through ``log_metrics``)."""
        row = {f"{self._prefix}{self.LOGGER_JOIN_CHAR}{key}" if self._prefix else key: value}
        if step is not None:
            row[STEP_METRIC] = step
        self.experiment.log(row)

    # ------------------------------------------------------------------ checkpoints

    def after_save_checkpoint(self, checkpoint_callback: Any) -> None:
        if self._artifacts.now(checkpoint_callback):
            self._sync_checkpoints(checkpoint_callback)

    def _sync_checkpoints(self, callback: Any) -> None:
        import wandb

        run = self.experiment
        new, gone = self._artifacts.changes(callback)
        for item in new:
            artifact = wandb.Artifact(
                name=self._checkpoint_name or f"model-{run.id}", type="model",
                metadata={"score": item.score, "original_filename": Path(item.path).name,
                          "checkpoint": item.artifact_name})
            artifact.add_file(item.path, name="model.ckpt", policy=self.add_file_policy)
            self._logged_versions[item.path] = run.log_artifact(artifact,
                                                                aliases=list(item.aliases))
            self._artifacts.uploaded_file(item)
        for path in gone:
            self._artifacts.deleted(path)
            logged = self._logged_versions.pop(path, None)
            if logged is not None and not self._offline:
                logged.wait()
                logged.delete(delete_aliases=True)

    def finalize(self, status: str) -> None:
        """Upload the checkpoints of ``log_model=True`` (after a successful fit) and finish the
        run; a later stage continues it."""
        if self._experiment is None:
            return  # nothing was logged here: no run to finish
        if status == "success":
            for callback in self._artifacts.callbacks.values():
                self._sync_checkpoints(callback)
        self._id = self._experiment.id
        self._experiment.finish(exit_code=0 if status == "success" else 1)
        self._experiment = None
        self._finished += 1


def _per_item(items: list[Any], kwargs: dict[str, list[Any]]) -> list[dict[str, Any]]:
    for key, values in kwargs.items():
        if len(values) != len(items):
            raise ConfigurationError(f"{key}= has {len(values)} entries for {len(items)} items; "
                                     "give one per item")
    return [{k: v[i] for k, v in kwargs.items()} for i in range(len(items))]
