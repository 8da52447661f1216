"""The ``deepspeed`` plugin's records: one strategy class behind six names (ZeRO stages and
offload). The hook (``fulmen_deepspeed.plugin``) yields them and ``DeepSpeedStrategy`` reads its
name from them, so each name has one source. Nothing here imports torch or deepspeed."""

from __future__ import annotations

from fulmen import StrategySpec

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

#: the records, in the order the hook yields them (``deepspeed`` first)
RECORDS = tuple(StrategySpec(name=name, target=_TARGET, init_kwargs=kwargs,
                             accelerators=["cpu", "cuda"], precisions=PRECISIONS,
                             interactive=False, description=f"DeepSpeed {description}")
                for name, kwargs, description in _VARIANTS)
