"""``ModelCheckpoint``: keep the best k checkpoints by a metric, and/or the last one.

Lightning's ``ModelCheckpoint`` with the same arguments, attributes and file names. Every rank
takes the same decision: the metrics used are rank zero's (broadcast), and whether a file exists
is rank zero's answer; files are written and removed on rank zero through the strategy.
"""

from __future__ import annotations

import os
import re
import time
import warnings
from datetime import timedelta
from typing import Any, Literal

import torch

from fulmen import arguments, storage
from fulmen.api.async_checkpoint_io import AsyncCheckpointIO
from fulmen.callbacks import monitor as mon
from fulmen.callbacks.base import Callback
from fulmen.callbacks.checkpoint_names import format_name
from fulmen.checkpoint import service
from fulmen.errors import ConfigurationError
from fulmen.utilities.rank_zero import rank_zero_info, rank_zero_warn


class ModelCheckpoint(Callback):
    """Save checkpoints during ``fit``.

    ``filename`` is a template: ``"{epoch}-{step}-{val_loss:.3f}"`` fills in the epoch, the
    global step and any logged metric (``epoch=2-step=30-val_loss=0.123.ckpt``; with
    ``auto_insert_metric_name=False`` only the values). With ``monitor``, only the
    ``save_top_k`` best by ``mode`` are kept (``-1``: all); ``save_last=True`` also keeps
    ``last.ckpt`` (``"link"``: a symbolic link to the newest checkpoint). Saves at the end of
    every ``every_n_epochs`` epochs (at the end of validation, or of the training epoch with
    ``save_on_train_epoch_end=True``), every ``every_n_train_steps`` optimizer steps, or every
    ``train_time_interval``; ``save_on_exception=True`` also saves when training fails.
    An existing file is never overwritten: ``-v1``, ``-v2``... are appended
    (``enable_version_counter=False`` overwrites instead). ``dirpath`` may be an fsspec URL
    (``s3://bucket/run``). ``async_save=True`` writes in the background: training waits only
    while the state is copied to CPU (see :class:`fulmen.api.AsyncCheckpointIO`).
    """

    monitors = True
    CHECKPOINT_JOIN_CHAR = "-"
    CHECKPOINT_EQUALS_CHAR = "="
    CHECKPOINT_NAME_LAST = "last"
    FILE_EXTENSION = ".ckpt"
    STARTING_VERSION = 1

    def __init__(self, dirpath: str | os.PathLike[str] | None = None,
                 filename: str | None = None, monitor: str | None = None,
                 verbose: bool = False, save_last: bool | Literal["link"] | None = None,
                 save_top_k: int = 1, save_on_exception: bool = False,
                 save_weights_only: bool = False, mode: str = "min",
                 auto_insert_metric_name: bool = True, every_n_train_steps: int | None = None,
                 train_time_interval: timedelta | None = None,
                 every_n_epochs: int | None = None, save_on_train_epoch_end: bool | None = None,
                 enable_version_counter: bool = True, async_save: bool = False) -> None:
        flags = arguments.check_bool("ModelCheckpoint", {
            "verbose": verbose, "save_on_exception": save_on_exception, "save_weights_only":
            save_weights_only, "auto_insert_metric_name": auto_insert_metric_name,
            "save_on_train_epoch_end": save_on_train_epoch_end, "enable_version_counter":
            enable_version_counter, "async_save": async_save},
            optional=("save_on_train_epoch_end",))
        verbose, save_on_exception = flags["verbose"], flags["save_on_exception"]
        save_weights_only = flags["save_weights_only"]
        auto_insert_metric_name = flags["auto_insert_metric_name"]
        save_on_train_epoch_end = flags["save_on_train_epoch_end"]
        enable_version_counter, async_save = flags["enable_version_counter"], flags["async_save"]
        save_top_k, every_n_epochs, every_n_train_steps, save_last = _as_lightning_takes(
            save_top_k=save_top_k, every_n_epochs=every_n_epochs,
            every_n_train_steps=every_n_train_steps, save_last=save_last)
        arguments.check_path("ModelCheckpoint", "dirpath",  # "": the working directory
                             None if dirpath == "" else dirpath)
        for flag, text, what in (("monitor", monitor, "a logged metric's name"),
                                 ("filename", filename, "a file name pattern")):
            if text is not None and not isinstance(text, str):
                raise ConfigurationError(f"ModelCheckpoint({flag}={text!r}): expected {what} "
                                         "or None")
        _validate(dirpath=dirpath, filename=filename, monitor=monitor, save_last=save_last,
                  save_top_k=save_top_k, mode=mode, every_n_train_steps=every_n_train_steps,
                  train_time_interval=train_time_interval, every_n_epochs=every_n_epochs)
        self.monitor = monitor
        self.verbose = verbose
        self.save_last = save_last
        self.save_top_k = save_top_k
        self.save_on_exception = save_on_exception
        self.save_weights_only = save_weights_only
        self.auto_insert_metric_name = auto_insert_metric_name
        self.mode = mode
        self.filename = filename
        storage.check(dirpath, "ModelCheckpoint(dirpath=...)")
        self.dirpath: str | None = storage.normalize(dirpath) if dirpath else None
        self.async_save = async_save
        self._async_io: AsyncCheckpointIO | None = None  # installed by this callback
        self._save_on_train_epoch_end = save_on_train_epoch_end
        self._enable_version_counter = enable_version_counter
        if every_n_train_steps is None and every_n_epochs is None and train_time_interval is None:
            every_n_epochs, every_n_train_steps = 1, 0
        self._every_n_epochs: int = every_n_epochs or 0
        self._every_n_train_steps: int = every_n_train_steps or 0
        self._train_time_interval = train_time_interval
        self._last_global_step_saved = 0  # nothing to save before the first step
        self._last_time_checked: float | None = None
        self._last_checkpoint_saved = ""
        self._defer_save_until_validation = False
        self._validation_ran = False
        self.current_score: torch.Tensor | None = None
        self.best_k_models: dict[str, torch.Tensor] = {}
        self.kth_best_model_path = ""
        self.kth_value = torch.tensor(mon.MODES[mode])
        self.best_model_score: torch.Tensor | None = None
        self.best_model_path = ""
        self.last_model_path = ""

    @property
    def every_n_epochs(self) -> int:
        return self._every_n_epochs

    @property
    def every_n_train_steps(self) -> int:
        return self._every_n_train_steps

    @property
    def train_time_interval(self) -> timedelta | None:
        return self._train_time_interval

    @property
    def state_key(self) -> str:
        return (f"ModelCheckpoint{{'monitor': {self.monitor!r}, 'mode': {self.mode!r}, "
                f"'every_n_train_steps': {self._every_n_train_steps}, "
                f"'every_n_epochs': {self._every_n_epochs}, "
                f"'train_time_interval': {self._train_time_interval!r}}}")

    # ------------------------------------------------------------------ hooks

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        self.dirpath = trainer.strategy.broadcast(self._resolve_dirpath(trainer))
        if trainer.is_global_zero and stage == "fit" and self.save_top_k != 0 and \
                storage.listdir(self.dirpath):
            rank_zero_warn(f"Checkpoint directory {self.dirpath} exists and is not empty.")
        if self.async_save and stage == "fit" and \
                not isinstance(trainer.strategy.checkpoint_io, AsyncCheckpointIO):
            self._async_io = AsyncCheckpointIO(trainer.strategy.checkpoint_io)
            trainer.strategy.checkpoint_io = self._async_io

    def teardown(self, trainer: Any, module: Any, stage: str) -> None:
        """Wait for a save in flight (its failure is raised) and give the strategy back the
        IO it had."""
        if self._async_io is not None:
            installed, self._async_io = self._async_io, None
            trainer.strategy.checkpoint_io = installed.checkpoint_io
            installed.teardown()

    def on_train_start(self, trainer: Any, module: Any) -> None:
        self._last_time_checked = time.monotonic()
        self._validation_ran = False

    def unused_hooks(self, trainer: Any, module: Any, stage: str) -> tuple[str, ...]:
        """No per-batch hook when saving only at epoch or validation end, synchronously."""
        if type(self).on_train_batch_end is ModelCheckpoint.on_train_batch_end and \
                self._async_io is None and self._every_n_train_steps < 1 and \
                self._train_time_interval is None:
            return ("on_train_batch_end",)
        return ()

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if self._async_io is not None:
            self._async_io.raise_failure()  # a background save that failed stops training
        n = self._every_n_train_steps
        if n < 1 and self._train_time_interval is None:
            return  # saves at epoch or validation end only: nothing to do per batch
        skip_state = self._should_skip_saving_checkpoint(trainer)
        skip_batch = n < 1 or trainer.global_step % n != 0
        skip_time, now = True, time.monotonic()
        if self._train_time_interval is not None:
            last = self._last_time_checked
            skip_time = last is None or (now - last) < self._train_time_interval.total_seconds()
            skip_time = trainer.strategy.broadcast(skip_time)
        if skip_batch and skip_time:
            return
        if not skip_time:
            self._last_time_checked = now
        candidates = self._monitor_candidates(trainer)
        if self.monitor is not None and self.monitor not in candidates:
            self._defer_save_until_validation = True  # the metric comes from validation
            return
        if self.monitor is not None and not self._should_save_on_train_epoch_end(trainer) \
                and batch_idx + 1 == trainer.num_training_batches and self._validation_will_run(
                    trainer):
            self._defer_save_until_validation = True  # validation updates the metric first
            return
        if skip_state:
            return
        self._save_topk_checkpoint(trainer, candidates)
        self._save_last_checkpoint(trainer, candidates)

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        if self._should_skip_saving_checkpoint(trainer) or \
                not self._should_save_on_train_epoch_end(trainer):
            return
        self._save_on_epoch(trainer)

    def on_validation_end(self, trainer: Any, module: Any) -> None:
        if trainer.state.fn == "fit" and not trainer.sanity_checking:
            self._validation_ran = True
        if self._should_skip_saving_checkpoint(trainer) or \
                self._should_save_on_train_epoch_end(trainer):
            return
        if self._defer_save_until_validation:
            candidates = self._monitor_candidates(trainer)
            self._save_topk_checkpoint(trainer, candidates)
            self._save_last_checkpoint(trainer, candidates)
            self._defer_save_until_validation = False
            return
        self._save_on_epoch(trainer)

    def on_exception(self, trainer: Any, module: Any, exception: BaseException) -> None:
        if not (self.save_on_exception and not trainer.fast_dev_run
                and not trainer.sanity_checking
                and self._last_global_step_saved != trainer.global_step):
            return
        candidates = self._monitor_candidates(trainer)
        filepath = self.format_checkpoint_name(candidates)
        self._save_checkpoint(trainer, filepath)
        self._save_last_checkpoint(trainer, candidates)
        rank_zero_info(f"{type(exception).__name__} was raised ({exception}); saved checkpoint "
                       f"to {filepath}")

    def on_train_end(self, trainer: Any, module: Any) -> None:
        if self.save_last and not self._last_checkpoint_saved and not trainer.fast_dev_run:
            self._save_last_checkpoint(trainer, self._monitor_candidates(trainer))

    def state_dict(self) -> dict[str, Any]:
        return {"monitor": self.monitor, "best_model_score": self.best_model_score,
                "best_model_path": self.best_model_path, "current_score": self.current_score,
                "dirpath": self.dirpath, "best_k_models": self.best_k_models,
                "kth_best_model_path": self.kth_best_model_path, "kth_value": self.kth_value,
                "last_model_path": self.last_model_path}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        saved_dir = state_dict.get("dirpath", self.dirpath)
        if self.dirpath is None:  # not set up yet (the main process of a spawned run)
            self.dirpath = saved_dir
        if self.dirpath == saved_dir:
            self.best_model_score = state_dict["best_model_score"]
            self.kth_best_model_path = state_dict.get("kth_best_model_path",
                                                      self.kth_best_model_path)
            self.kth_value = state_dict.get("kth_value", self.kth_value)
            self.best_k_models = state_dict.get("best_k_models", self.best_k_models)
            self.last_model_path = state_dict.get("last_model_path", self.last_model_path)
        else:
            warnings.warn(f"The dirpath has changed from {saved_dir!r} to {self.dirpath!r}, "
                          "therefore `best_model_score`, `kth_best_model_path`, `kth_value`, "
                          "`last_model_path` and `best_k_models` won't be reloaded. Only "
                          "`best_model_path` will be reloaded.", UserWarning, stacklevel=2)
        self.best_model_path = state_dict["best_model_path"]

    # ------------------------------------------------------------------ public helpers

    def format_checkpoint_name(self, metrics: dict[str, Any], filename: str | None = None,
                               ver: int | None = None, prefix: str | None = None) -> str:
        """The path for ``metrics``: ``filename`` (default: this callback's template) filled
        in, with ``prefix-`` before it, ``-v{ver}`` after it and the extension; inside
        ``dirpath`` when it is set."""
        name = format_name(filename or self.filename, metrics, prefix=prefix,
                           auto_insert_metric_name=self.auto_insert_metric_name,
                           join=self.CHECKPOINT_JOIN_CHAR, equals=self.CHECKPOINT_EQUALS_CHAR,
                           owner=f"ModelCheckpoint(filename={filename or self.filename!r})")
        if ver is not None:
            name = self.CHECKPOINT_JOIN_CHAR.join((name, f"v{ver}"))
        name = f"{name}{self.FILE_EXTENSION}"
        return storage.join(self.dirpath, name) if self.dirpath else name

    def check_monitor_top_k(self, trainer: Any, current: torch.Tensor | None = None) -> bool:
        """Whether ``current`` makes it into the top k."""
        if current is None:
            return False
        if self.save_top_k == -1 or len(self.best_k_models) < self.save_top_k:
            return True
        return mon.improved(self.mode, float(current),
                            float(self.best_k_models[self.kth_best_model_path]))

    def to_yaml(self, filepath: str | os.PathLike[str] | None = None) -> None:
        """Write ``best_k_models`` (path: score) as YAML, by default to
        ``dirpath/best_k_models.yaml``."""
        import yaml

        if filepath is None:
            if not self.dirpath:
                raise ConfigurationError("ModelCheckpoint.to_yaml() needs a filepath: this "
                                         "callback has no dirpath yet (it is set at fit)")
            filepath = storage.join(self.dirpath, "best_k_models.yaml")
        with storage.open_file(filepath, "w") as handle:
            yaml.safe_dump({k: float(v) for k, v in self.best_k_models.items()}, handle)

    def file_exists(self, filepath: str | os.PathLike[str], trainer: Any) -> bool:
        """Whether ``filepath`` exists, as rank zero sees it (every rank gets its answer)."""
        local = storage.exists(filepath) if trainer.is_global_zero else False
        return trainer.strategy.reduce_boolean_decision(local, all=False)

    def find_last(self) -> str | None:
        """The last checkpoint: the one this callback wrote, else ``last.ckpt`` in dirpath (by
        this callback's ``CHECKPOINT_NAME_LAST`` and ``FILE_EXTENSION``)."""
        if self.last_model_path and storage.exists(self.last_model_path):
            return self.last_model_path
        if self.dirpath:
            path = storage.join(self.dirpath, self.CHECKPOINT_NAME_LAST + self.FILE_EXTENSION)
            if storage.exists(path):
                return path
        return None

    def _find_last_checkpoints(self, trainer: Any) -> set[str]:
        """The "last" checkpoints (``last.ckpt``, ``last-v1.ckpt``...) in the directory, by
        this callback's ``CHECKPOINT_NAME_LAST`` and ``FILE_EXTENSION``."""
        folder = self._resolve_dirpath(trainer)
        pattern = re.compile(rf"^{re.escape(self.CHECKPOINT_NAME_LAST)}")
        ext = self.FILE_EXTENSION
        return {storage.join(folder, name) for name in storage.listdir(folder)
                if name.endswith(ext) and pattern.match(name[:len(name) - len(ext)])}

    # ------------------------------------------------------------------ decisions

    def _resolve_dirpath(self, trainer: Any) -> str:
        if self.dirpath:
            return self.dirpath
        base = trainer.log_dir if trainer.loggers else trainer.default_root_dir
        return storage.join(base, "checkpoints")

    def _should_skip_saving_checkpoint(self, trainer: Any) -> bool:
        return (bool(trainer.fast_dev_run) or trainer.state.fn != "fit"
                or trainer.sanity_checking
                or self._last_global_step_saved == trainer.global_step)

    def _should_save_on_train_epoch_end(self, trainer: Any) -> bool:
        if self._save_on_train_epoch_end is not None:
            return self._save_on_train_epoch_end
        if trainer.val_check_time_interval is not None:
            return False  # validation by the clock: save when it ends (Lightning)
        if trainer.check_val_every_n_epoch != 1:
            return False
        if sum(trainer.num_val_batches) == 0:
            return True
        return trainer.val_check_interval in (None, 1.0)

    def _validation_will_run(self, trainer: Any) -> bool:
        every = trainer.check_val_every_n_epoch
        return sum(trainer.num_val_batches) > 0 and (
            every is None or (trainer.current_epoch + 1) % every == 0)

    def _monitor_candidates(self, trainer: Any) -> dict[str, torch.Tensor]:
        candidates = {k: v.detach().cpu() if isinstance(v, torch.Tensor) else torch.tensor(v)
                      for k, v in trainer.callback_metrics.items()}
        epoch, step = candidates.get("epoch"), candidates.get("step")
        candidates["epoch"] = epoch.int() if epoch is not None else torch.tensor(
            trainer.current_epoch)
        candidates["step"] = step.int() if step is not None else torch.tensor(
            trainer.global_step)
        if trainer.world_size > 1:  # rank zero's values decide for everyone
            candidates = trainer.strategy.broadcast(candidates)
        return candidates

    def _missing_monitor(self, trainer: Any, candidates: dict[str, torch.Tensor]) -> None:
        assert self.monitor is not None
        message = mon.missing_message("ModelCheckpoint", self.monitor,
                                      [k for k in candidates if k not in ("epoch", "step")])
        if self._validation_ran:
            raise ConfigurationError(message)
        # no validation batch has run in this fit (none yet, or no validation at all): Lightning
        # warns and skips the monitored save
        rank_zero_warn(message + "; no validation has run yet, so this save is skipped",
                       category=UserWarning)

    # ------------------------------------------------------------------ saving

    def _save_on_epoch(self, trainer: Any) -> None:
        candidates = self._monitor_candidates(trainer)
        n = self._every_n_epochs
        if n >= 1 and (trainer.current_epoch + 1) % n == 0:
            self._save_topk_checkpoint(trainer, candidates)
        if self._last_global_step_saved == trainer.global_step or (
                self.save_last == "link" and self._last_checkpoint_saved):
            self._save_last_checkpoint(trainer, candidates)

    def _save_topk_checkpoint(self, trainer: Any, candidates: dict[str, torch.Tensor]) -> None:
        if self.save_top_k == 0:
            return
        if self.monitor is None:
            self._save_none_monitor_checkpoint(trainer, candidates)
            return
        if self.monitor not in candidates:
            self._missing_monitor(trainer, candidates)
            return
        current = candidates[self.monitor]
        if self.check_monitor_top_k(trainer, current):
            self._update_best_and_save(current, trainer, candidates)
        elif self.verbose:
            rank_zero_info(f"Epoch {int(candidates['epoch']):d}, global step "
                           f"{int(candidates['step']):d}: {self.monitor!r} was not in top "
                           f"{self.save_top_k}")

    def _save_checkpoint(self, trainer: Any, filepath: str) -> None:
        trainer.save_checkpoint(filepath, self.save_weights_only)
        self._last_global_step_saved = trainer.global_step
        self._last_checkpoint_saved = filepath
        trainer.logger_set.after_save_checkpoint(self)  # (Lightning's logger hook)

    @staticmethod
    def _link_checkpoint(trainer: Any, filepath: str, linkpath: str) -> None:
        """Point ``linkpath`` at ``filepath`` with a relative symbolic link (a copy where links
        cannot be made: object stores), replacing whatever was there. When saves run in the
        background, once ``filepath`` is written."""
        if trainer.is_global_zero:
            io = trainer.strategy.checkpoint_io
            if isinstance(io, AsyncCheckpointIO):
                io.after_pending(f"link of {linkpath!r}", _link, filepath, linkpath)
            else:
                _link(filepath, linkpath)
        trainer.strategy.barrier("ModelCheckpoint.link")

    def _versioned(self, trainer: Any, candidates: dict[str, torch.Tensor],
                   filename: str | None, keep: str | None) -> str:
        filepath = self.format_checkpoint_name(candidates, filename)
        if self._enable_version_counter:
            version = self.STARTING_VERSION
            while self.file_exists(filepath, trainer) and filepath != keep:
                filepath = self.format_checkpoint_name(candidates, filename, ver=version)
                version += 1
        return filepath

    def _save_last_checkpoint(self, trainer: Any, candidates: dict[str, torch.Tensor]) -> None:
        if not self.save_last:
            return
        filepath = self._versioned(trainer, candidates, self.CHECKPOINT_NAME_LAST,
                                   self.last_model_path)
        previous, self.last_model_path = self.last_model_path, filepath
        if self.save_last == "link" and self._last_checkpoint_saved and self.save_top_k != 0:
            self._link_checkpoint(trainer, self._last_checkpoint_saved, filepath)
        else:
            self._save_checkpoint(trainer, filepath)
        if previous and self._should_remove_checkpoint(trainer, previous, filepath):
            service.remove(trainer.strategy, previous)

    def _save_none_monitor_checkpoint(self, trainer: Any,
                                      candidates: dict[str, torch.Tensor]) -> None:
        filepath = self._versioned(trainer, candidates, None, self.best_model_path)
        previous, self.best_model_path = self.best_model_path, filepath
        self._save_checkpoint(trainer, filepath)
        if self.save_top_k == 1 and previous and self._should_remove_checkpoint(
                trainer, previous, filepath):
            service.remove(trainer.strategy, previous)

    def _update_best_and_save(self, current: torch.Tensor, trainer: Any,
                              candidates: dict[str, torch.Tensor]) -> None:
        k = len(self.best_k_models) + 1 if self.save_top_k == -1 else self.save_top_k
        del_filepath = None
        if len(self.best_k_models) == k and k > 0:
            del_filepath = self.kth_best_model_path
            self.best_k_models.pop(del_filepath)
        if torch.isnan(current):  # NaN ranks last
            current = torch.tensor(mon.MODES[self.mode])
        filepath = self._versioned(trainer, candidates, None, del_filepath)
        self.current_score = current
        self.best_k_models[filepath] = current
        if len(self.best_k_models) == k:
            worst = max if self.mode == "min" else min
            self.kth_best_model_path = worst(self.best_k_models,
                                             key=lambda p: float(self.best_k_models[p]))
            self.kth_value = self.best_k_models[self.kth_best_model_path]
        best = min if self.mode == "min" else max
        self.best_model_path = best(self.best_k_models,
                                    key=lambda p: float(self.best_k_models[p]))
        self.best_model_score = self.best_k_models[self.best_model_path]
        if self.verbose:
            rank_zero_info(f"Epoch {int(candidates['epoch']):d}, global step "
                           f"{int(candidates['step']):d}: {self.monitor!r} reached "
                           f"{float(current):0.5f} (best {float(self.best_model_score):0.5f}), "
                           f"saving model to {filepath!r} as top {k}")
        self._save_checkpoint(trainer, filepath)
        if del_filepath and self._should_remove_checkpoint(trainer, del_filepath, filepath):
            service.remove(trainer.strategy, del_filepath)

    def _should_remove_checkpoint(self, trainer: Any, previous: str, current: str) -> bool:
        """Never remove the file just written, the one training resumed from, or a file
        outside ``dirpath``."""
        if previous == current:
            return False
        if trainer.ckpt_path is not None and storage.same(previous, trainer.ckpt_path):
            return False
        assert self.dirpath is not None
        return storage.inside(previous, self.dirpath)


def _link(filepath: str, linkpath: str) -> None:
    """Replace ``linkpath`` by a relative symbolic link to ``filepath``; on an object store (or
    where links cannot be made) by a copy of it."""
    storage.remove(linkpath)
    if storage.is_url(linkpath):
        storage.copy(filepath, linkpath)
        return
    try:
        os.symlink(os.path.relpath(filepath, os.path.dirname(linkpath)), linkpath)
    except OSError:
        storage.copy(filepath, linkpath)


def _as_lightning_takes(save_top_k: Any, every_n_epochs: Any, every_n_train_steps: Any,
                        save_last: Any) -> tuple[Any, Any, Any, Any]:
    """Values Lightning runs though they are not of the documented type, taken as Lightning
    takes them, with a warning: a bool or a whole float as a count, a ``save_last`` other than
    True/False/None/'link' by its truth."""
    counts = {"save_top_k": save_top_k, "every_n_epochs": every_n_epochs,
              "every_n_train_steps": every_n_train_steps}
    for flag, value in counts.items():
        if isinstance(value, bool) or (isinstance(value, float) and value.is_integer()):
            rank_zero_warn(f"ModelCheckpoint({flag}={value!r}): expected an int; taken as "
                           f"{int(value)}, as Lightning does. Pass {int(value)}",
                           category=UserWarning)
            counts[flag] = int(value)
    if save_last not in (None, True, False, "link"):
        rank_zero_warn(f"ModelCheckpoint(save_last={save_last!r}): expected True, False, None "
                       f"or 'link'; taken as {bool(save_last)} (Lightning takes it by its "
                       f"truth). Pass {bool(save_last)}", category=UserWarning)
        save_last = bool(save_last)
    return counts["save_top_k"], counts["every_n_epochs"], counts["every_n_train_steps"], \
        save_last


def _validate(**given: Any) -> None:
    """Raise one ConfigurationError that echoes the arguments for a configuration that cannot
    work."""
    problems: list[str] = []
    mode, top_k, monitor = given["mode"], given["save_top_k"], given["monitor"]
    if mode not in mon.MODES:
        problems.append(f"`mode` can be min, max but got {mode}; use 'min' or 'max'")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < -1:
        problems.append(f"Invalid value for save_top_k={top_k!r}. Must be >= -1 (-1 keeps "
                        "all, 0 none, k the best k)")
    elif monitor is None and top_k not in (-1, 0, 1):
        problems.append(f"ModelCheckpoint(save_top_k={top_k}, monitor=None) is not a valid "
                        "configuration. No quantity for top_k to track: set monitor='...' too")
    elif monitor is not None and top_k == 0:  # Lightning accepts it (and saves no top k)
        rank_zero_warn(f"ModelCheckpoint(monitor={monitor!r}, save_top_k=0): save_top_k=0 keeps "
                       f"no monitored checkpoint, so monitor={monitor!r} is ignored. Drop "
                       "monitor, or set save_top_k to -1 or k >= 1", category=RuntimeWarning)
    for flag in ("every_n_train_steps", "every_n_epochs"):
        value = given[flag]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 0):
            problems.append(f"Invalid value for {flag}={value!r}. Must be >= 0")
    interval = given["train_time_interval"]
    if interval is not None and not isinstance(interval, timedelta):
        problems.append(f"train_time_interval={interval!r}: use a datetime.timedelta")
    if not problems:
        triggers = [bool(given["every_n_train_steps"]), bool(given["every_n_epochs"]),
                    interval is not None]
        if sum(triggers) > 1:
            problems.append(
                f"Combination of parameters every_n_train_steps={given['every_n_train_steps']}, "
                f"every_n_epochs={given['every_n_epochs']} and train_time_interval={interval} "
                "should be mutually exclusive: keep one trigger")
    if problems:
        shown = ", ".join(f"{k}={v!r}" for k, v in given.items() if v is not None)
        raise ConfigurationError(f"ModelCheckpoint({shown}): " + "; ".join(problems))
