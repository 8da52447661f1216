"""The tensor-parallel plan of the tiny Llama (torchtitan's layout without sequence
parallelism), then FSDP2 over the data-parallel dimension. This is the template
docs/model-parallel.md shows.

Per block: the attention's q/k/v projections are split by output features (heads) and ``wo`` by
input features, so each rank computes its own heads and one all-reduce joins them; the MLP's
``w1``/``w3`` are split by output features and ``w2`` by input features (one all-reduce). The
embedding is split by vocabulary rows, the output projection by vocabulary columns and its
logits gathered. RMSNorm weights stay whole on the tensor-parallel ranks.
"""

from __future__ import annotations

from typing import Any

from torch import nn
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import Replicate
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

from fulmen_strategies import parallelize_module  # torch's, refusing keys that match nothing

BLOCK_PLAN = {
    "attention.wq": ColwiseParallel(),
    "attention.wk": ColwiseParallel(),
    "attention.wv": ColwiseParallel(),
    "attention.wo": RowwiseParallel(),
    "feed_forward.w1": ColwiseParallel(),
    "feed_forward.w3": ColwiseParallel(),
    "feed_forward.w2": RowwiseParallel(),
}
MODEL_PLAN = {
    "tok_embeddings": RowwiseParallel(input_layouts=Replicate()),
    "output": ColwiseParallel(output_layouts=Replicate()),
}


def parallelize(model: nn.Module, device_mesh: Any, mp_policy: Any = None) -> nn.Module:
    """Tensor parallelism over ``device_mesh["tensor_parallel"]``, then ``fully_shard`` of every
    block and of the root over ``device_mesh["data_parallel"]``."""
    tp, dp = device_mesh["tensor_parallel"], device_mesh["data_parallel"]
    if tp.size() > 1:
        parallelize_module(model, tp, MODEL_PLAN)
        for block in model.layers:  # type: ignore[union-attr]
            parallelize_module(block, tp, BLOCK_PLAN)
    if dp.size() > 1:
        options = {"mesh": dp} if mp_policy is None else {"mesh": dp, "mp_policy": mp_policy}
        for block in model.layers:  # type: ignore[union-attr]
            fully_shard(block, **options)
        fully_shard(model, **options)
    return model
