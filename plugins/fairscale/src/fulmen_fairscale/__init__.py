"""fulmen-fairscale: sharded DDP (``ddp_sharded``, ``ddp_sharded_spawn``) and sequential model
parallelism (``pipe``) through FairScale.

Importing this package imports neither torch nor fairscale: the strategy classes load on first
use (``fulmen_fairscale.ShardedDDPStrategy``, ``fulmen_fairscale.PipeStrategy``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fulmen_fairscale.ddp_sharded.strategy import ShardedDDPStrategy
    from fulmen_fairscale.pipe.strategy import PipeStrategy

__all__ = ["PipeStrategy", "ShardedDDPStrategy"]

_LAZY = {
    "ShardedDDPStrategy": "fulmen_fairscale.ddp_sharded.strategy",
    "PipeStrategy": "fulmen_fairscale.pipe.strategy",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'fulmen_fairscale' has no attribute {name!r}")
