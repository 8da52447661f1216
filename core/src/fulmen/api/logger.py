"""``Logger``: the base class of experiment trackers (CSV, TensorBoard, W&B, MLflow, Comet...).

The Trainer and Lite talk to loggers only through the members below, and only through
:class:`fulmen.loggers.dispatch.LoggerSet`, which owns the run-time rules of the logger contract
(docs/plugin-contracts.md): calls come from global rank zero only; metrics come on Lightning's
step axis, a name never twice for a step (what a callback queued at a step goes in the step's
call); hyper-parameters arrive once, as plain data; ``finalize`` is called once per stage with
its status; a logger that raises is reported once and left out (unless its ``raise_on_error``
is True).

A tracker whose run lives elsewhere (a server, a run folder) keeps the run's identity in
:meth:`Logger.state_dict`, which goes into every checkpoint: a fit resumed from it (``ckpt_path=``,
a SLURM requeue, a restart) continues the same run.
"""

from __future__ import annotations

import functools
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import torch

#: the run statuses ``finalize`` is called with
SUCCESS, FAILED, INTERRUPTED = "success", "failed", "interrupted"
STATUSES = (SUCCESS, FAILED, INTERRUPTED)

T = TypeVar("T")


class Logger(ABC):
    """Subclass and implement ``log_metrics`` and ``log_hyperparams``; override the rest as the
    tracker needs. Lightning's ``Logger`` names and arguments."""

    #: True: an exception from this logger stops training (the default reports it once and
    #: training goes on without the logger)
    raise_on_error: bool = False

    @classmethod
    def for_root_dir(cls, root_dir: str, **kwargs: Any) -> Logger:
        """The logger a registered name selects: built with the record's ``init_kwargs``;
        ``root_dir`` is the Trainer's ``default_root_dir`` (where a logger that writes files
        should put them unless ``kwargs`` say otherwise). Default: ``cls(**kwargs)``."""
        return cls(**kwargs)

    @classmethod
    def for_conformance(cls, root_dir: str) -> Logger:
        """A logger that needs no network and no credentials and keeps everything under
        ``root_dir`` (W&B and Comet offline, MLflow on a local store), for ``fulmen plugins
        --check``. Default: :meth:`for_root_dir`."""
        return cls.for_root_dir(root_dir)

    def read_run(self) -> RunRecord | None:
        """What the tracker holds for this logger's run, read back with the tracker's own client
        or files (the kit compares it with what was logged). None: this logger cannot read its
        run back (the kit then skips the clauses that need it)."""
        return None

    @property
    def name(self) -> str | None:
        """The experiment (project) name."""
        return type(self).__name__

    @property
    def version(self) -> int | str | None:
        """The run's identity (a version number, a run id), or None before there is one."""
        return None

    @property
    def log_dir(self) -> str | None:
        """A local folder of this run (checkpoints go under it), or None."""
        return None

    @property
    def save_dir(self) -> str | None:
        """Where the logger writes locally, or None."""
        return None

    def set_version(self, version: int | str | None) -> None:  # noqa: B027 - optional
        """Fix the version (all processes of a job use rank zero's)."""

    @abstractmethod
    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        """Record ``metrics`` (name -> float) at ``step``. Called on global rank zero, once per
        step with every value of that step; must not start a collective, a host-device sync or
        a network round trip per call that blocks training for long (buffer, or use the
        tracker's asynchronous API)."""

    @abstractmethod
    def log_hyperparams(self, params: dict[str, Any]) -> None:
        """Record the run's hyper-parameters: plain data (modules and partials already replaced
        by ``{"class_path", "init_args"}``, other objects by their ``module:name`` or repr)."""

    def log_graph(self, model: torch.nn.Module, input_array: Any = None) -> None:  # noqa: B027 - optional
        """Record the module's graph (the Trainer calls it once when fit starts, after
        ``log_hyperparams``, with the ``fulmen.Module`` it trains). Default: nothing."""

    def after_save_checkpoint(self, checkpoint_callback: Any) -> None:  # noqa: B027 - optional
        """A ``ModelCheckpoint`` saved (and maybe removed) files; its ``best_k_models``,
        ``best_model_path`` and ``last_model_path`` say which it keeps. A logger that logs
        checkpoints as artifacts uploads new ones and deletes the artifacts of files the
        callback dropped (:class:`CheckpointArtifacts` works that out)."""

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps of this logger so that a resumed fit continues the same run
        (a run id, a version). Plain data. Default: nothing."""
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:  # noqa: B027 - optional
        """Continue the run ``state`` names (called before anything is logged on resume)."""

    def logged_steps(self) -> Mapping[str, int]:
        """After ``load_state_dict``: the last step the tracker already holds for each name of
        the continued run (a job killed after its last checkpoint wrote steps past it), so that
        the resumed fit does not write them again. Called on global rank zero only. Default:
        nothing known (the checkpoint's own record of written steps still applies)."""
        return {}

    def save(self) -> None:  # noqa: B027 - optional, nothing to flush by default
        """Flush what is buffered."""

    def finalize(self, status: str) -> None:
        """The stage ended with ``status`` (``"success"``, ``"failed"`` or ``"interrupted"``):
        flush, and close the tracker's run. A later stage of the same Trainer logs again and
        must continue the same run."""
        self.save()


@dataclass
class RunRecord:
    """A run as the tracker holds it: ``metrics`` name -> ``[(step, value), ...]`` in the order
    written, ``params`` (flattened names -> values as the tracker keeps them, often text),
    ``status`` (``"success"``, ``"failed"``, ``"interrupted"`` or None when the tracker keeps
    none), ``runs`` (how many runs the job made: 1), ``artifacts`` (checkpoint artifact names)."""

    metrics: dict[str, list[tuple[int, float]]]
    params: dict[str, Any]
    status: str | None = None
    runs: int = 1
    artifacts: list[str] | None = None


# --------------------------------------------------------------------------- rank zero


class NoOpExperiment:
    """What ``experiment`` gives on ranks other than zero: every attribute, call and item is
    itself, so user code such as ``self.logger.experiment.log_image(...)`` does nothing there
    (and never blocks)."""

    def __getattr__(self, name: str) -> NoOpExperiment:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> NoOpExperiment:
        return self

    def __getitem__(self, key: Any) -> NoOpExperiment:
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        pass

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __bool__(self) -> bool:
        return False


def rank_zero_experiment(fn: Callable[[Any], T]) -> Callable[[Any], T | NoOpExperiment]:
    """Decorate a logger's ``experiment`` getter: it runs on global rank zero only; elsewhere a
    :class:`NoOpExperiment` comes back and no run is created (Lightning's name)."""

    @functools.wraps(fn)
    def experiment(self: Any) -> T | NoOpExperiment:
        from fulmen.utilities.rank_zero import current_rank

        if current_rank() != 0:
            return NoOpExperiment()
        return fn(self)

    return experiment


# --------------------------------------------------------------------------- checkpoints


@dataclass(frozen=True)
class CheckpointFile:
    """A checkpoint file to upload: its path, the artifact name to give it (``artifact_name``:
    a name every tracker accepts, no ``=``), its score and aliases."""

    path: str
    artifact_name: str
    score: float | None
    aliases: tuple[str, ...]


def artifact_name(path: str) -> str:
    """A checkpoint's file stem as an artifact name trackers accept: ``epoch=0-step=151`` ->
    ``epoch_0-step_151`` (MLflow 3 rejects ``=`` and other characters in artifact paths)."""
    import re

    stem = os.path.splitext(os.path.basename(path))[0]
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", stem) or "checkpoint"


class CheckpointArtifacts:
    """Which checkpoint files a tracker should upload and which of its artifacts to delete, from
    a ``ModelCheckpoint``'s public state: ``best_k_models``, ``best_model_path``,
    ``last_model_path`` (a file re-written under the same name, ``last.ckpt``, is uploaded
    again). ``log_model``: Lightning's argument (``"all"``: as they are saved; ``True``: at the
    end, or as saved when ``save_top_k == -1``; ``False``: never)."""

    def __init__(self, log_model: bool | str) -> None:
        if log_model not in (True, False, "all"):
            from fulmen.errors import ConfigurationError

            raise ConfigurationError(f"log_model={log_model!r}: use True (checkpoints at the end "
                                     "of training), 'all' (as they are saved) or False")
        self.log_model = log_model
        self.uploaded: dict[str, tuple[float, str]] = {}  # path -> (mtime, artifact name)
        self.callbacks: dict[int, Any] = {}

    def now(self, callback: Any) -> bool:
        """Whether checkpoints go up as they are saved (else at the end)."""
        if self.log_model == "all" or (self.log_model is True and callback.save_top_k == -1):
            return True
        if self.log_model is True:
            self.callbacks[id(callback)] = callback
        return False

    def changes(self, callback: Any) -> tuple[list[CheckpointFile], list[str]]:
        """(files to upload, artifact names whose files the callback no longer keeps)."""
        kept: dict[str, float | None] = {}
        for path, score in getattr(callback, "best_k_models", {}).items():
            kept[str(path)] = float(score)
        for path in (callback.best_model_path, callback.last_model_path):
            if path:
                kept.setdefault(str(path), None)
        new: list[CheckpointFile] = []
        for path, score in kept.items():
            try:
                mtime = os.path.getmtime(path)
            except OSError:
                continue  # not written (yet), or not local
            if self.uploaded.get(path, (None,))[0] == mtime:
                continue
            aliases = ("latest", "best") if path == callback.best_model_path else ("latest",)
            new.append(CheckpointFile(path, artifact_name(path), score, aliases))
        gone = [p for p in self.uploaded if p not in kept]
        return new, gone

    def uploaded_file(self, item: CheckpointFile) -> None:
        self.uploaded[item.path] = (os.path.getmtime(item.path), item.artifact_name)

    def deleted(self, path: str) -> str:
        """Forget ``path``; returns the artifact name it was uploaded as."""
        return self.uploaded.pop(path)[1]
