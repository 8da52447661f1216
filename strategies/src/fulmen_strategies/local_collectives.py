"""Collectives of a strategy that runs one process in all: nothing to exchange with anyone."""

from __future__ import annotations

from typing import Any


class LocalCollectives:
    """``reduce``, ``all_gather``, ``broadcast`` and ``barrier`` when this process is the whole
    world (``single_device``, ``dp``): the value itself, with no new dimension (as in
    Lightning), and no wait."""

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
