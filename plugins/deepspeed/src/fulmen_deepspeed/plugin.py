"""The ``deepspeed`` plugin: one strategy class behind six names (ZeRO stages and offload)."""

from __future__ import annotations

from typing import Any

from fulmen import hookimpl
from fulmen_deepspeed.records import RECORDS


@hookimpl
def fulmen_strategies() -> Any:
    yield from RECORDS


@hookimpl
def fulmen_checkpoint_layouts() -> Any:
    """DeepSpeed's own checkpoint directory, for ``fulmen checkpoint inspect|convert``."""
    from fulmen_deepspeed.layout import DeepSpeedLayout

    yield DeepSpeedLayout()
