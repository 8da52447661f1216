"""Precision plugins for fulmen. Classes load on first access, so listing plugins stays cheap."""

from __future__ import annotations

from fulmen.lazy import lazy_exports

_EXPORTS = {
    "Precision32": "fulmen_precision.fp32.precision",
    "Precision64": "fulmen_precision.fp64.precision",
    "MixedPrecision": "fulmen_precision.mixed.precision",
    "HalfPrecision": "fulmen_precision.half.precision",
}
__all__ = list(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
