"""One process on one device: collectives are identities."""

from __future__ import annotations

from typing import Any

import torch

from fulmen import Strategy


class SingleDeviceStrategy(Strategy):
    """Trains in the current process on ``parallel_devices[0]``."""

    name = "single_device"

    @property
    def processes_per_node(self) -> int:
        return 1

    @property
    def root_device(self) -> torch.device:
        return self.parallel_devices[0] if self.parallel_devices else torch.device("cpu")

    def reduce(self, tensor: Any, reduce_op: str = "mean") -> Any:
        """Nothing to reduce across: the value itself."""
        return tensor

    def all_gather(self, tensor: Any, sync_grads: bool = False) -> Any:
        """Nothing to gather from: the tensor itself (no new dimension, as in Lightning)."""
        return tensor

    def broadcast(self, obj: Any, src: int = 0) -> Any:
        return obj

    def barrier(self, name: str | None = None) -> None:
        return None
