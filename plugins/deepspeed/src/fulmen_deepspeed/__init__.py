"""DeepSpeed ZeRO strategies for fulmen. Names load on first access: listing plugins imports
neither torch nor deepspeed."""

from __future__ import annotations

from fulmen.lazy import lazy_exports

_EXPORTS = {
    "DeepSpeedStrategy": "fulmen_deepspeed.strategy",
    "DeepSpeedConfig": "fulmen_deepspeed.config",
    "consolidate": "fulmen_deepspeed.consolidation",
}
__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
