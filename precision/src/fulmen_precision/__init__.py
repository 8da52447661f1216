"""Precision plugins for fulmen. Classes load on first access, so listing plugins stays cheap."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Precision32": "fulmen_precision.fp32.precision",
    "Precision64": "fulmen_precision.fp64.precision",
    "MixedPrecision": "fulmen_precision.mixed.precision",
    "HalfPrecision": "fulmen_precision.half.precision",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'fulmen_precision' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
