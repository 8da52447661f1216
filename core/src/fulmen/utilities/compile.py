"""Lightning's ``from_compiled`` / ``to_uncompiled``: a module back from ``torch.compile`` whose
``forward`` and step methods keep the compiled versions (``isinstance`` checks pass again), and
the way back. fulmen's Trainer and Lite also take ``torch.compile(model)`` or
``compile=True`` directly (see docs/performance.md)."""

from __future__ import annotations

import weakref
from typing import Any

from fulmen.compiling import unwrap

__all__ = ["from_compiled", "to_uncompiled"]

_METHODS = ("forward", "training_step", "validation_step", "test_step", "predict_step")
#: module -> its methods before :func:`from_compiled` replaced them
_ORIGINALS: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def _is_compiled(model: Any) -> bool:
    """Whether ``model`` is what ``torch.compile`` returned for a module."""
    from torch._dynamo import OptimizedModule

    return isinstance(model, OptimizedModule)


def from_compiled(model: Any) -> Any:
    """The module ``torch.compile`` wrapped, with ``forward`` and the ``*_step`` methods
    compiled by the same compiler context."""
    from fulmen.module import Module

    if not _is_compiled(model):
        raise ValueError("`model` is required to be a `OptimizedModule`. Found a "
                         f"`{type(model).__name__}` instead.")
    original = unwrap(model)[0]
    if not isinstance(original, Module):
        raise ValueError("`model` is expected to be a compiled LightningModule. Found a "
                         f"`{type(original).__name__}` instead")
    _ORIGINALS[original] = {name: getattr(original, name) for name in _METHODS}
    for name in _METHODS:
        method = getattr(original, name)
        if method is not None:
            setattr(original, name, model.dynamo_ctx(method))
    return original


def to_uncompiled(model: Any) -> Any:
    """The module without compilation: from ``torch.compile(module)`` or from
    :func:`from_compiled` (whose methods are restored in place)."""
    from fulmen.module import Module

    if _is_compiled(model):
        original = unwrap(model)[0]
        if not isinstance(original, Module):
            raise TypeError("Unexpected error, the wrapped model should be a LightningModule, "
                            f"found {type(model).__name__}")
    elif isinstance(model, Module):
        if model not in _ORIGINALS:
            raise ValueError("`model` is required to be a compiled LightningModule. Found a "
                             "non-compiled LightningModule instead.")
        original = model
    else:
        raise ValueError("`model` must either be an instance of OptimizedModule or "
                         "LightningModule")
    for name, method in _ORIGINALS.pop(original, {}).items():
        setattr(original, name, method)
    return original
