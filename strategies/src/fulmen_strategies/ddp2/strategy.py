"""``DDP2Strategy``: one process per node; DataParallel over that node's GPUs, and
DistributedDataParallel across nodes.

Each node loads one batch, splits it over its GPUs, and gradients are averaged across nodes:
the effective batch size is ``batch_size * num_nodes``. Useful when a metric needs every
sample of a node's batch at once (``*_step_end`` sees them all). Torch removed multi-device
modules from DDP's own options, so the per-node DataParallel sits inside DDP.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel

from fulmen_strategies.ddp2 import SPEC
from fulmen_strategies.dp.strategy import OneProcessPerNode, finish_step
from fulmen_strategies.parallel import ParallelStrategy


class DDP2Strategy(OneProcessPerNode, ParallelStrategy):

    name = SPEC.name  # the registered name, from the plugin's record
    def wrap_module(self, module: torch.nn.Module) -> torch.nn.Module:
        local = self.data_parallel(module)
        return DistributedDataParallel(local) if self.distributed else local

    def step(self, method: str, *args: Any, **kwargs: Any) -> Any:
        module, model = self.module, self.model
        assert module is not None and model is not None
        if method == "forward":  # Lite's call: through DDP and DataParallel, as it is
            return super().step(method, *args, **kwargs)
        if method == "predict_step" or (method != "training_step" and self.distributed):
            local = model.module if isinstance(model, DistributedDataParallel) else model
            with self.precision.forward_context():
                output = local(*args, fulmen_step=method, **kwargs)
        else:
            with self.precision.forward_context():
                output = model(*args, fulmen_step=method, **kwargs)
        return finish_step(module, method, output)
