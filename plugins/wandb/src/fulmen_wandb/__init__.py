"""Weights & Biases for fulmen: ``WandbLogger`` (Lightning's name and arguments), the ``wandb``
logger. Importing this package imports neither torch nor the tracker's library."""

from __future__ import annotations

from fulmen.lazy import lazy_exports

_EXPORTS = {"WandbLogger": "fulmen_wandb.logger"}
__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
