"""Accelerator plugins for fulmen. Classes load on first access, so listing plugins stays cheap."""

from __future__ import annotations

from fulmen.lazy import lazy_exports

_EXPORTS = {
    "CPUAccelerator": "fulmen_accelerators.cpu.accelerator",
    "CUDAAccelerator": "fulmen_accelerators.cuda.accelerator",
    "MPSAccelerator": "fulmen_accelerators.mps.accelerator",
}
__all__ = list(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
