"""``BasePredictionWriter`` (Lightning's) and ``PredictionWriter``, which saves to a directory.

Subclass ``BasePredictionWriter`` and implement ``write_on_batch_end`` and/or
``write_on_epoch_end``; ``write_interval`` says which the Trainer's predict loop calls. Each rank
writes its own outputs, so predictions of a multi-process run need no gather.

``batch_indices`` are the dataset indices of each batch's samples, as Lightning passes them,
when the predict dataloader's batch sampler yields them in a fixed order (a sequential sampler,
or a distributed one without shuffling); otherwise ``None`` for a batch and ``[]`` for a
dataloader (see docs/migrating.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fulmen import arguments
from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError
from fulmen.utilities.enums import LightningEnum

__all__ = ["BasePredictionWriter", "PredictionWriter", "WriteInterval"]


class WriteInterval(LightningEnum):
    """When a prediction writer writes (Lightning's enum; compares equal to its string)."""

    BATCH = "batch"
    EPOCH = "epoch"
    BATCH_AND_EPOCH = "batch_and_epoch"

    @property
    def on_batch(self) -> bool:
        return self in (WriteInterval.BATCH, WriteInterval.BATCH_AND_EPOCH)

    @property
    def on_epoch(self) -> bool:
        return self in (WriteInterval.EPOCH, WriteInterval.BATCH_AND_EPOCH)


WRITE_INTERVALS = tuple(i.value for i in WriteInterval)


def _sample_indices(loader: Any) -> list[list[Any]] | None:
    """The dataset indices of each batch ``loader`` yields, when its batch sampler yields them
    in a fixed order (so reading them ahead gives what the loop reads); otherwise None."""
    from torch.utils.data import BatchSampler, DistributedSampler, SequentialSampler

    batch_sampler = getattr(loader, "batch_sampler", None)
    if not isinstance(batch_sampler, BatchSampler):
        return None
    sampler = batch_sampler.sampler
    fixed = isinstance(sampler, SequentialSampler) or (
        isinstance(sampler, DistributedSampler) and not sampler.shuffle)
    return [list(batch) for batch in batch_sampler] if fixed else None


class BasePredictionWriter(Callback):
    """Write predictions as they come (``"batch"``), once at the end (``"epoch"``), or both.
    ``interval`` is the :class:`WriteInterval` (``interval.on_batch``, ``interval.on_epoch``)."""

    def __init__(self, write_interval: str = "batch") -> None:
        if write_interval not in WRITE_INTERVALS:
            raise ConfigurationError(f"`write_interval` should be one of {list(WRITE_INTERVALS)}."
                                     f" {type(self).__name__}(write_interval={write_interval!r})"
                                     " is not one of them")
        self.interval = WriteInterval(write_interval)
        self._predictions: list[list[Any]] = []
        self._batch_indices: list[list[Any]] = []
        self._sample_indices: list[list[list[Any]] | None] = []

    @property
    def on_batch(self) -> bool:
        return self.interval.on_batch

    @property
    def on_epoch(self) -> bool:
        return self.interval.on_epoch

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        from fulmen.utilities.signature_utils import is_param_in_hook_signature

        step = getattr(module, "predict_step", None)
        if stage == "predict" and callable(step) and is_param_in_hook_signature(
                step, "dataloader_iter", explicit=True):
            raise NotImplementedError("The `PredictionWriterCallback` does not support using "
                                      "`dataloader_iter`.")

    def write_on_batch_end(self, trainer: Any, module: Any, prediction: Any,
                           batch_indices: list[int] | None, batch: Any, batch_idx: int,
                           dataloader_idx: int) -> None:
        """Called after every ``predict_step`` when the interval includes ``"batch"``."""
        raise NotImplementedError(f"{type(self).__name__} has write_interval="
                                  f"{self.interval.value!r} but does not implement "
                                  "write_on_batch_end")

    def write_on_epoch_end(self, trainer: Any, module: Any, predictions: list[Any],
                           batch_indices: list[Any]) -> None:
        """Called once after the predict loop when the interval includes ``"epoch"``;
        ``predictions`` holds one list per dataloader (a flat list for one dataloader),
        ``batch_indices`` one list per dataloader of each batch's sample indices."""
        raise NotImplementedError(f"{type(self).__name__} has write_interval="
                                  f"{self.interval.value!r} but does not implement "
                                  "write_on_epoch_end")

    def on_predict_epoch_start(self, trainer: Any, module: Any) -> None:
        self._predictions, self._batch_indices = [], []
        loaders = trainer.predict_dataloaders
        loaders = loaders if isinstance(loaders, list | tuple) else [loaders]
        self._sample_indices = [_sample_indices(loader) for loader in loaders]

    def _indices_of(self, batch_idx: int, dataloader_idx: int) -> list[Any] | None:
        known = self._sample_indices[dataloader_idx] \
            if dataloader_idx < len(self._sample_indices) else None
        return known[batch_idx] if known is not None and batch_idx < len(known) else None

    def on_predict_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                             batch_idx: int, dataloader_idx: int = 0) -> None:
        indices = self._indices_of(batch_idx, dataloader_idx)
        if self.on_batch:
            self.write_on_batch_end(trainer, module, outputs, indices, batch, batch_idx,
                                    dataloader_idx)
        if self.on_epoch:
            while len(self._predictions) <= dataloader_idx:
                self._predictions.append([])
                self._batch_indices.append([])
            self._predictions[dataloader_idx].append(outputs)
            if indices is not None:
                self._batch_indices[dataloader_idx].append(indices)

    def on_predict_epoch_end(self, trainer: Any, module: Any) -> None:
        if not self.on_epoch:
            return
        predictions: list[Any] = self._predictions
        if len(predictions) == 1:
            predictions = predictions[0]
        self.write_on_epoch_end(trainer, module, predictions, self._batch_indices)
        self._predictions, self._batch_indices = [], []


class PredictionWriter(BasePredictionWriter):
    """Save every rank's predictions with ``torch.save`` into ``output_dir``.

    ``"epoch"``: one ``predictions_rank<r>.pt`` per rank holding ``{"predictions": [...],
    "batch_indices": [...]}`` (each batch's sample indices; one list per dataloader when there
    are several). ``"batch"``: one ``predictions_rank<r>_dl<d>_batch<i>.pt`` per batch.
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
        if len(batch_indices) == 1:  # one dataloader: flat, as the predictions
            batch_indices = batch_indices[0]
        self._save({"predictions": predictions, "batch_indices": batch_indices},
                   self._target(trainer, f"predictions_rank{trainer.global_rank}.pt"))
