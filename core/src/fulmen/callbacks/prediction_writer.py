"""``BasePredictionWriter`` (Lightning's) and ``PredictionWriter``, which saves to a directory.

Subclass ``BasePredictionWriter`` and implement ``write_on_batch_end`` and/or
``write_on_epoch_end``; ``write_interval`` says which the Trainer's predict loop calls. Each rank
writes its own outputs, so predictions of a multi-process run need no gather.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fulmen import arguments
from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError

WRITE_INTERVALS = ("batch", "epoch", "batch_and_epoch")


class BasePredictionWriter(Callback):
    """Write predictions as they come (``"batch"``), once at the end (``"epoch"``), or both."""

    def __init__(self, write_interval: str = "batch") -> None:
        if write_interval not in WRITE_INTERVALS:
            raise ConfigurationError(f"{type(self).__name__}(write_interval={write_interval!r}): "
                                     f"use one of {', '.join(map(repr, WRITE_INTERVALS))}")
        self.interval = write_interval
        self._predictions: list[list[Any]] = []
        self._batch_indices: list[list[int]] = []

    @property
    def on_batch(self) -> bool:
        return self.interval in ("batch", "batch_and_epoch")

    @property
    def on_epoch(self) -> bool:
        return self.interval in ("epoch", "batch_and_epoch")

    def write_on_batch_end(self, trainer: Any, module: Any, prediction: Any,
                           batch_indices: list[int] | None, batch: Any, batch_idx: int,
                           dataloader_idx: int) -> None:
        """Called after every ``predict_step`` when the interval includes ``"batch"``."""
        raise NotImplementedError(f"{type(self).__name__} has write_interval={self.interval!r} "
                                  "but does not implement write_on_batch_end")

    def write_on_epoch_end(self, trainer: Any, module: Any, predictions: list[Any],
                           batch_indices: list[Any]) -> None:
        """Called once after the predict loop when the interval includes ``"epoch"``;
        ``predictions`` holds one list per dataloader (a flat list for one dataloader)."""
        raise NotImplementedError(f"{type(self).__name__} has write_interval={self.interval!r} "
                                  "but does not implement write_on_epoch_end")

    def on_predict_epoch_start(self, trainer: Any, module: Any) -> None:
        self._predictions, self._batch_indices = [], []

    def on_predict_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                             batch_idx: int, dataloader_idx: int = 0) -> None:
        if self.on_batch:
            self.write_on_batch_end(trainer, module, outputs, None, batch, batch_idx,
                                    dataloader_idx)
        if self.on_epoch:
            while len(self._predictions) <= dataloader_idx:
                self._predictions.append([])
                self._batch_indices.append([])
            self._predictions[dataloader_idx].append(outputs)
            self._batch_indices[dataloader_idx].append(batch_idx)

    def on_predict_epoch_end(self, trainer: Any, module: Any) -> None:
        if not self.on_epoch:
            return
        predictions, indices = self._predictions, self._batch_indices
        if len(predictions) == 1:
            predictions, indices = predictions[0], indices[0]  # type: ignore[assignment]
        self.write_on_epoch_end(trainer, module, predictions, indices)
        self._predictions, self._batch_indices = [], []


class PredictionWriter(BasePredictionWriter):
    """Save every rank's predictions with ``torch.save`` into ``output_dir``.

    ``"epoch"``: one ``predictions_rank<r>.pt`` per rank holding ``{"predictions": [...],
    "batch_indices": [...]}``. ``"batch"``: one ``predictions_rank<r>_dl<d>_batch<i>.pt`` per batch.
    ``output_dir=None`` writes into ``trainer.log_dir``.
    """

    def __init__(self, output_dir: str | Path | None = None, write_interval: str = "epoch") -> None:
        arguments.check_path("PredictionWriter", "output_dir", output_dir)
        super().__init__(write_interval)
        self.output_dir = None if output_dir is None else Path(output_dir)
        self.written: list[Path] = []

    def _target(self, trainer: Any, name: str) -> Path:
        directory = self.output_dir if self.output_dir is not None else Path(trainer.log_dir)
        directory.mkdir(parents=True, exist_ok=True)
        return directory / name

    def _save(self, obj: Any, path: Path) -> None:
        import torch

        torch.save(obj, path)
        self.written.append(path)

    def write_on_batch_end(self, trainer: Any, module: Any, prediction: Any,
                           batch_indices: list[int] | None, batch: Any, batch_idx: int,
                           dataloader_idx: int) -> None:
        rank = trainer.global_rank
        self._save(prediction, self._target(
            trainer, f"predictions_rank{rank}_dl{dataloader_idx}_batch{batch_idx}.pt"))

    def write_on_epoch_end(self, trainer: Any, module: Any, predictions: list[Any],
                           batch_indices: list[Any]) -> None:
        self._save({"predictions": predictions, "batch_indices": batch_indices},
                   self._target(trainer, f"predictions_rank{trainer.global_rank}.pt"))
