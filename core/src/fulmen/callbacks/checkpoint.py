"""``ModelCheckpoint``: keep the best k checkpoints by a metric, and/or the last one."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

from fulmen.callbacks import monitor as mon
from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError

_FIELD = re.compile(r"\{([^{}:]+)(:[^{}]*)?\}")


class ModelCheckpoint(Callback):
    """Save checkpoints during ``fit``.

    ``filename`` is a template: ``"{epoch}-{step}-{val_loss:.3f}"`` fills in the epoch, the
    global step and any logged metric (``val_loss=0.123`` in the file name). With ``monitor``,
    only the ``save_top_k`` best by ``mode`` are kept; ``save_last`` also keeps ``last.ckpt``.
    Saves at the end of every ``every_n_epochs`` epochs, or every ``every_n_train_steps``
    optimizer steps. Files are written atomically; a crash never leaves a half-written one.
    """

    monitors = True
    CHECKPOINT_EXT = ".ckpt"

    def __init__(self, dirpath: str | Path | None = None, filename: str | None = None,
                 monitor: str | None = None, mode: str = "min", save_top_k: int = 1,
                 save_last: bool | None = None, every_n_epochs: int | None = None,
                 every_n_train_steps: int | None = None, save_weights_only: bool = False,
                 verbose: bool = False) -> None:
        mon.check_mode("ModelCheckpoint", mode)
        if isinstance(save_top_k, bool) or not isinstance(save_top_k, int) or save_top_k < -1:
            raise ConfigurationError(f"ModelCheckpoint(save_top_k={save_top_k!r}): use -1 (all), "
                                     "0 (none) or a positive int")
        if monitor is None and save_top_k not in (-1, 0, 1):
            raise ConfigurationError(f"ModelCheckpoint(save_top_k={save_top_k}) keeps the best k "
                                     "by a metric: set monitor='...' too")
        for flag, value in (("every_n_epochs", every_n_epochs),
                            ("every_n_train_steps", every_n_train_steps)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 0):
                raise ConfigurationError(f"ModelCheckpoint({flag}={value!r}): use an int >= 0")
        self.dirpath = Path(dirpath) if dirpath is not None else None
        self.filename = filename
        self.monitor, self.mode = monitor, mode
        self.save_top_k, self.save_last = save_top_k, save_last
        self.every_n_train_steps = every_n_train_steps or 0
        self.every_n_epochs = every_n_epochs if every_n_epochs is not None else (
            0 if self.every_n_train_steps else 1)
        self.save_weights_only, self.verbose = save_weights_only, verbose
        self.best_k_models: dict[str, float] = {}
        self.best_model_path = ""
        self.best_model_score: float | None = None
        self.last_model_path = ""
        self._last_global_step_saved = -1

    @property
    def state_key(self) -> str:
        return (f"ModelCheckpoint{{'monitor': {self.monitor!r}, 'mode': {self.mode!r}, "
                f"'every_n_train_steps': {self.every_n_train_steps}, "
                f"'every_n_epochs': {self.every_n_epochs}}}")

    # ------------------------------------------------------------------ hooks

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        if self.dirpath is None:
            base = Path(trainer.log_dir) if trainer.logger is not None else Path(
                trainer.default_root_dir)
            self.dirpath = base / "checkpoints"

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        n = self.every_n_train_steps
        if n and trainer.global_step % n == 0 and not trainer.sanity_checking:
            self._save(trainer)

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        n = self.every_n_epochs
        if n and (trainer.current_epoch + 1) % n == 0:
            self._save(trainer)

    def state_dict(self) -> dict[str, Any]:
        return {"best_k_models": dict(self.best_k_models), "best_model_path": self.best_model_path,
                "best_model_score": self.best_model_score, "last_model_path":
                self.last_model_path, "dirpath": str(self.dirpath) if self.dirpath else None}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if state_dict.get("dirpath") and self.dirpath is not None and \
                str(self.dirpath) != state_dict["dirpath"]:
            return  # another directory: start its own ranking
        self.best_k_models = dict(state_dict.get("best_k_models", {}))
        self.best_model_path = state_dict.get("best_model_path", "")
        self.best_model_score = state_dict.get("best_model_score")
        self.last_model_path = state_dict.get("last_model_path", "")

    def find_last(self) -> str | None:
        """The last checkpoint: the one this callback wrote, else ``last.ckpt`` in dirpath."""
        if self.last_model_path and os.path.exists(self.last_model_path):
            return self.last_model_path
        if self.dirpath is not None and (self.dirpath / f"last{self.CHECKPOINT_EXT}").exists():
            return str(self.dirpath / f"last{self.CHECKPOINT_EXT}")
        return None

    # ------------------------------------------------------------------ saving

    def _save(self, trainer: Any) -> None:
        if trainer.global_step == self._last_global_step_saved or trainer.fast_dev_run:
            return
        self._last_global_step_saved = trainer.global_step
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
        if self.monitor is not None:
            # every rank takes rank zero's decision, so all agree on what exists
            current = trainer.strategy.broadcast(mon.read("ModelCheckpoint", trainer,
                                                          self.monitor))
            self._save_top_k(trainer, current, metrics)
        elif self.save_top_k != 0:
            path = self._path(metrics, trainer)
            previous = self.best_model_path
            self._write(trainer, path)
            if self.save_top_k == 1 and previous and previous != path:
                trainer.strategy.remove_checkpoint(previous)
            self.best_model_path = path
        if self.save_last:
            assert self.dirpath is not None
            self.last_model_path = str(self.dirpath / f"last{self.CHECKPOINT_EXT}")
            self._write(trainer, self.last_model_path)
        elif self.monitor is None:  # without save_last, the newest checkpoint is the last one
            self.last_model_path = self.best_model_path

    def _save_top_k(self, trainer: Any, current: float, metrics: dict[str, float]) -> None:
        if self.save_top_k == 0 or math.isnan(current):
            return
        keep = self.save_top_k
        if keep != -1 and len(self.best_k_models) >= keep:
            worst_path = (max if self.mode == "min" else min)(
                self.best_k_models, key=self.best_k_models.__getitem__)
            if not mon.improved(self.mode, current, self.best_k_models[worst_path]):
                return
            del self.best_k_models[worst_path]
            trainer.strategy.remove_checkpoint(worst_path)
        path = self._path(metrics, trainer)
        self._write(trainer, path)
        self.best_k_models[path] = current
        best = (min if self.mode == "min" else max)(self.best_k_models,
                                                     key=self.best_k_models.__getitem__)
        self.best_model_path, self.best_model_score = best, self.best_k_models[best]

    def _write(self, trainer: Any, path: str) -> None:
        trainer.save_checkpoint(path, weights_only=self.save_weights_only)
        if self.verbose:
            trainer.print(f"ModelCheckpoint: saved {path}")

    def _path(self, metrics: dict[str, float], trainer: Any) -> str:
        values = {**metrics, "epoch": trainer.current_epoch, "step": trainer.global_step}
        template = self.filename or "{epoch}-{step}"

        def fill(match: re.Match[str]) -> str:
            name, spec = match.group(1), match.group(2) or ""
            if name not in values:
                raise ConfigurationError(
                    f"ModelCheckpoint(filename={template!r}) uses {{{name}}}, which was not "
                    f"logged; available: {sorted(values)}")
            return f"{name}={format(values[name], spec[1:] if spec else '')}"

        name = _FIELD.sub(fill, template)
        assert self.dirpath is not None
        path = self.dirpath / f"{name}{self.CHECKPOINT_EXT}"
        replacing = self.save_top_k == 1 and str(path) == self.best_model_path
        version = 1
        while not replacing and (path.exists() or str(path) in self.best_k_models):
            path = self.dirpath / f"{name}-v{version}{self.CHECKPOINT_EXT}"  # never overwrite
            version += 1
        # Rank zero decides: another rank looking after rank zero wrote would see the file.
        return str(trainer.strategy.broadcast(str(path)))
