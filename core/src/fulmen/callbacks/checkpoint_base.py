"""``Checkpoint``: Lightning's base class of checkpointing callbacks. ``ModelCheckpoint`` and
``OnExceptionCheckpoint`` are ``Checkpoint``s (``isinstance`` says so); subclass it for a
checkpointing callback of your own."""

from __future__ import annotations

from fulmen.callbacks.base import Callback
from fulmen.utilities.virtual_bases import AlsoMatches

__all__ = ["Checkpoint"]


class Checkpoint(Callback, AlsoMatches):
    """The base class of model checkpointing callbacks."""

    __also__ = ("fulmen.callbacks.checkpoint:ModelCheckpoint",
                "fulmen.callbacks.on_exception:OnExceptionCheckpoint")
