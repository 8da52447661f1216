"""``Checkpoint``: Lightning's base class of checkpointing callbacks. ``ModelCheckpoint`` and
``OnExceptionCheckpoint`` are ``Checkpoint``s (``isinstance`` says so); subclass it for a
checkpointing callback of your own."""

from __future__ import annotations

from abc import ABCMeta
from typing import Any

from fulmen.callbacks.base import Callback

__all__ = ["Checkpoint"]


class Checkpoint(Callback, metaclass=ABCMeta):
    """The base class of model checkpointing callbacks."""

    @classmethod
    def __subclasshook__(cls, other: type) -> Any:
        if cls is Checkpoint:
            from fulmen.callbacks.checkpoint import ModelCheckpoint
            from fulmen.callbacks.on_exception import OnExceptionCheckpoint

            if issubclass(other, ModelCheckpoint | OnExceptionCheckpoint):
                return True
        return NotImplemented
