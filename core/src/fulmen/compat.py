"""Names from PyTorch Lightning, so code written for it runs after changing its imports.

    from fulmen.compat import LightningModule, LightningDataModule, Trainer, seed_everything
"""

from __future__ import annotations

from typing import Any

from fulmen.callbacks import (
    Callback,
    EarlyStopping,
    LearningRateMonitor,
    ModelCheckpoint,
    ModelSummary,
    TQDMProgressBar,
)
from fulmen.datamodule import DataModule as LightningDataModule
from fulmen.module import Module as LightningModule
from fulmen.seed import seed_everything
from fulmen.trainer import Trainer

__all__ = ["Callback", "EarlyStopping", "LearningRateMonitor", "LightningDataModule",
           "LightningModule", "ModelCheckpoint", "ModelSummary",
           "TQDMProgressBar", "Trainer", "seed_everything"]


def __getattr__(name: str) -> Any:
    if name in ("LightningLite", "Fabric"):  # fulmen.Lite, imported when asked for
        from fulmen.lite import Lite

        return Lite
    raise AttributeError(f"module 'fulmen.compat' has no attribute {name!r}")
