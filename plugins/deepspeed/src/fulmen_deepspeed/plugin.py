"""The ``deepspeed`` plugin: one strategy class behind six names (ZeRO stages and offload)."""

from __future__ import annotations

import sys
from typing import Any

from fulmen import StrategySpec, hookimpl

_TARGET = "fulmen_deepspeed.strategy:DeepSpeedStrategy"
PRECISIONS = ["32-true", "16-mixed", "bf16-mixed"]
_VARIANTS: list[tuple[str, dict[str, object], str]] = [
    ("deepspeed", {}, "ZeRO stage 2 unless DeepSpeedStrategy(stage=...) or config= says other"),
    ("deepspeed_stage_1", {"stage": 1}, "ZeRO stage 1: optimizer state sharded"),
    ("deepspeed_stage_2", {"stage": 2}, "ZeRO stage 2: optimizer state and gradients sharded"),
    ("deepspeed_stage_2_offload", {"stage": 2, "offload_optimizer": True},
     "ZeRO stage 2, optimizer state and step on the CPU"),
    ("deepspeed_stage_3", {"stage": 3},
     "ZeRO stage 3: parameters, gradients and optimizer state sharded"),
    ("deepspeed_stage_3_offload",
     {"stage": 3, "offload_optimizer": True, "offload_parameters": True},
     "ZeRO stage 3, parameters and optimizer state offloaded to the CPU"),
]


@hookimpl
def fulmen_strategies() -> Any:
    for name, kwargs, description in _VARIANTS:
        yield StrategySpec(name=name, target=_TARGET, init_kwargs=kwargs,
                           accelerators=["cpu", "cuda"], precisions=PRECISIONS,
                           interactive=False, description=f"DeepSpeed {description}")


@hookimpl
def fulmen_check_selection(selection: Any) -> Any:
    """What only a composed selection shows: the config's precision against the Trainer's, and
    float16 on a CPU without float16 kernels."""
    module = sys.modules.get("fulmen_deepspeed.strategy")
    if module is None or not isinstance(selection.strategy, module.DeepSpeedStrategy):
        return None
    return selection.strategy.selection_problems(selection.precision.name,
                                                 selection.accelerator.name)
