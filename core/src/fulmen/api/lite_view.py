"""``LiteView``: a ``fulmen.Lite`` as a ``fulmen.Module`` it set up sees it (``module.lite``).

``lite.setup(module, ...)`` attaches itself to a ``fulmen.Module`` (as Fabric does to a
``LightningModule``): the module's ``self.log``/``log_dict``, ``logger``/``loggers``,
``optimizers()``, ``backward``/``manual_backward``, ``clip_gradients``, ``all_gather`` and its
ranks then go through these documented public members of ``Lite``, so the module never imports
the ``Lite`` class. ``fulmen.Lite`` satisfies this protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from fulmen.api.ranks import Ranks

if TYPE_CHECKING:
    import torch


class LiteView(Ranks, Protocol):
    """The public members of ``fulmen.Lite`` that a ``Module`` it set up uses."""

    @property
    def logger(self) -> Any:
        """The first logger (None without one)."""
        ...

    @property
    def loggers(self) -> list[Any]:
        ...

    def log_dict(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """Send metrics to every logger (from rank zero)."""
        ...

    def backward(self, tensor: torch.Tensor, *args: Any, model: Any = None,
                 **kwargs: Any) -> None:
        """Backward through the strategy and precision."""
        ...

    def clip_gradients(self, module: Any, optimizer: Any, clip_val: float | None = None,
                       max_norm: float | None = None, norm_type: float = 2.0,
                       error_if_nonfinite: bool = True) -> Any:
        ...

    def all_gather(self, data: Any, sync_grads: bool = False) -> Any:
        ...
