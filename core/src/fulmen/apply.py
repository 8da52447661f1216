"""Apply a function to every tensor in a nested batch (dicts, lists, tuples, namedtuples,
dataclasses), keeping the structure."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any


def apply_to_tensors(data: Any, fn: Callable[[Any], Any],
                     keep: Callable[[Any], bool] | None = None) -> Any:
    """``fn(t)`` for every ``torch.Tensor`` ``t`` in ``data`` for which ``keep(t)`` holds."""
    import torch

    def walk(obj: Any) -> Any:
        if isinstance(obj, torch.Tensor):
            return fn(obj) if keep is None or keep(obj) else obj
        if isinstance(obj, Mapping):
            return type(obj)({k: walk(v) for k, v in obj.items()})  # type: ignore[call-arg]
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
            return type(obj)(*(walk(v) for v in obj))
        if isinstance(obj, list | tuple):
            return type(obj)(walk(v) for v in obj)
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return dataclasses.replace(obj, **{f.name: walk(getattr(obj, f.name))
                                               for f in dataclasses.fields(obj) if f.init})
        return obj

    return walk(data)


def is_floating(tensor: Any) -> bool:
    return bool(tensor.is_floating_point())
