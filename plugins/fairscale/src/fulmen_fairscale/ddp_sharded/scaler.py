"""A loss scaler for sharded gradients: every rank holds only its shard, so the inf/nan found
while unscaling is summed over the ranks before the step is taken or skipped (all ranks agree).
FairScale's own ``ShardedGradScaler`` disables itself without CUDA; this one runs on any device."""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist


class ShardedGradScaler(torch.amp.GradScaler):
    def unscale_(self, optimizer: Any) -> None:
        if not self.is_enabled():
            return
        super().unscale_(optimizer)
        found = self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
        for value in found.values():
            dist.all_reduce(value)


def sharded_copy(scaler: Any, device_type: str) -> ShardedGradScaler:
    """A ``ShardedGradScaler`` with ``scaler``'s settings and current scale."""
    sharded = ShardedGradScaler(device_type, enabled=scaler.is_enabled())
    state = scaler.state_dict()
    if state:
        sharded.load_state_dict(state)
    return sharded
