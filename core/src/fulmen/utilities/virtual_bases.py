"""A base for Lightning base classes that fulmen's own classes stand for without
inheriting them: ``isinstance(fulmen.Module(), HyperparametersMixin)`` is True, as for a
``LightningModule``. A class using it lists, in its own ``__also__``, the fulmen classes
(``"module:Class"``, imported when first checked) that count as its subclasses; its own
subclasses list theirs (none by default)."""

from __future__ import annotations

import importlib
from abc import ABC
from typing import Any

__all__ = ["AlsoMatches"]


def _load(target: str) -> type:
    module, _, name = target.partition(":")
    cls: type = getattr(importlib.import_module(module), name)
    return cls


class AlsoMatches(ABC):  # noqa: B024 (no abstract methods: the ABC is for the hook)
    """A base class whose ``issubclass``/``isinstance`` also answer True for the classes in a
    class's own ``__also__`` (an ABC's subclass hook, not a metaclass of its own: a class may
    combine it with ``typing.Protocol`` or other ABCs, as a user's class combines Lightning's
    plain ``HyperparametersMixin`` with them)."""

    @classmethod
    def __subclasshook__(cls, other: type) -> Any:
        also: tuple[str, ...] = cls.__dict__.get("__also__", ())
        if any(issubclass(other, _load(target)) for target in also):
            return True
        return NotImplemented
