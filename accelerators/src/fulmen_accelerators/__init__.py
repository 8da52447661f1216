"""Accelerator plugins for fulmen. Classes load on first access, so listing plugins stays cheap."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CPUAccelerator": "fulmen_accelerators.cpu.accelerator",
    "CUDAAccelerator": "fulmen_accelerators.cuda.accelerator",
    "MPSAccelerator": "fulmen_accelerators.mps.accelerator",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'fulmen_accelerators' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
