"""Lightning's layer synchronization plugins: ``LayerSync`` (the base: ``apply`` wraps layers
so they synchronize across processes, ``revert`` undoes it) and ``TorchSyncBatchNorm``
(``torch.nn.SyncBatchNorm``). fulmen's Trainer and Lite apply it with ``sync_batchnorm=True``;
``apply``/``revert`` also work on any module."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch

__all__ = ["LayerSync", "TorchSyncBatchNorm"]


class LayerSync(ABC):
    """Wraps layers of a model with synchronization logic for several processes."""

    @abstractmethod
    def apply(self, model: torch.nn.Module) -> torch.nn.Module:
        """The model with its layers synchronized."""

    @abstractmethod
    def revert(self, model: torch.nn.Module) -> torch.nn.Module:
        """The model with what :meth:`apply` did undone."""


class _BatchNormXd(torch.nn.modules.batchnorm._BatchNorm):
    """A batch norm of any dimension (what a reverted ``SyncBatchNorm`` becomes)."""

    def _check_input_dim(self, input: Any) -> None:
        return


class TorchSyncBatchNorm(LayerSync):
    """Every batch norm layer becomes ``torch.nn.SyncBatchNorm`` (no effect on one device)."""

    def apply(self, model: torch.nn.Module) -> torch.nn.Module:
        return torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)

    def revert(self, model: torch.nn.Module) -> torch.nn.Module:
        """``SyncBatchNorm`` layers back to plain batch norm layers (sharing their parameters
        and statistics)."""
        converted = model
        if isinstance(model, torch.nn.SyncBatchNorm):
            converted = _BatchNormXd(model.num_features, model.eps, model.momentum, model.affine,
                                     model.track_running_stats)
            if model.affine:
                with torch.no_grad():
                    converted.weight = model.weight
                    converted.bias = model.bias
            converted.running_mean = model.running_mean
            converted.running_var = model.running_var
            converted.num_batches_tracked = model.num_batches_tracked
            if hasattr(model, "qconfig"):
                converted.qconfig = model.qconfig
        for name, child in model.named_children():
            converted.add_module(name, self.revert(child))
        return converted
