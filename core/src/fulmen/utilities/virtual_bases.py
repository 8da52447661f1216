"""A metaclass for Lightning base classes that fulmen's own classes stand for without
inheriting them: ``isinstance(fulmen.Module(), HyperparametersMixin)`` is True, as for a
``LightningModule``. A class using it lists, in its own ``__also__``, the fulmen classes
(``"module:Class"``, imported when first checked) that count as its subclasses; its own
subclasses list theirs (none by default)."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["AlsoMatches"]


def _load(target: str) -> type:
    module, _, name = target.partition(":")
    cls: type = getattr(importlib.import_module(module), name)
    return cls


class AlsoMatches(type):
    """``issubclass``/``isinstance`` also answer True for the classes in ``__also__``."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return cls.__subclasscheck__(type(instance))

    def __subclasscheck__(cls, other: type) -> bool:
        if type.__subclasscheck__(cls, other):
            return True
        also: tuple[str, ...] = cls.__dict__.get("__also__", ())
        return any(issubclass(other, _load(target)) for target in also)
