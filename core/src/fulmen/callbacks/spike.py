"""``SpikeDetection`` for the Trainer (Lightning's ``lightning.pytorch.callbacks.SpikeDetection``):
the loss ``training_step`` returned is checked after each batch; a spike stops training with
:class:`~fulmen.utilities.spike.TrainingSpikeException` after writing
``default_root_dir/skip_batches.json``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from fulmen.callbacks.base import Callback
from fulmen.utilities.spike import SpikeDetection as LiteSpikeDetection

__all__ = ["SpikeDetection"]


class SpikeDetection(LiteSpikeDetection, Callback):
    """See :class:`fulmen.utilities.spike.SpikeDetection` for the arguments."""

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any,  # type: ignore[override]
                           batch: Any, batch_idx: int) -> None:
        import torch

        if isinstance(outputs, torch.Tensor):
            loss = outputs.detach()
        elif isinstance(outputs, Mapping):
            loss = outputs["loss"].detach()
        else:
            raise TypeError("outputs have to be of type torch.Tensor or Mapping, got "
                            f"{type(outputs).__qualname__}")
        if self.exclude_batches_path is None:
            self.exclude_batches_path = os.path.join(trainer.default_root_dir, "skip_batches.json")
        LiteSpikeDetection.on_train_batch_end(self, trainer, loss, batch, batch_idx)
