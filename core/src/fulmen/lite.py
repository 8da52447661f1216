"""``Lite``: scale a raw PyTorch loop with the same plugins and composition as the Trainer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fulmen.connector import SelectionReport, select

if TYPE_CHECKING:
    import torch


class Lite(SelectionReport):
    """Subclass and override ``run()``, or call ``lite.launch(fn)``.

    Takes the selection arguments of the ``Trainer`` (legacy ``gpus=`` and ``tpu_cores=``
    included) and composes the same plugins the same way.
    """

    def __init__(
        self,
        accelerator: Any = "auto",
        strategy: Any = "auto",
        devices: Any = "auto",
        num_nodes: int = 1,
        precision: Any = "32-true",
        plugins: Sequence[Any] | Any | None = None,
        gpus: Any = None,
        tpu_cores: Any = None,
    ) -> None:
        self._selection = select("Lite", accelerator=accelerator, strategy=strategy,
                                 devices=devices, num_nodes=num_nodes, precision=precision,
                                 plugins=plugins, gpus=gpus, tpu_cores=tpu_cores)

    @property
    def device(self) -> torch.device:
        """The device this process computes on."""
        return self.strategy.root_device
