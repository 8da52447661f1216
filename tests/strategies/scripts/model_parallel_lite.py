"""Lite + ModelParallelStrategy: tensor parallel (Colwise/Rowwise) + FSDP2 on a 2-D mesh, or the
same MLP trained by one plain process (the reference). Writes rank<r>.json with the full
weights, the samples each rank saw, and collective results."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import torch.nn.functional as F
from tiny_models import Indexed
from torch.utils.data import DataLoader

import fulmen


class Counting(torch.nn.Linear):
    calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        Counting.calls += 1
        return super().forward(x)


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w1 = Counting(8, 16)
        self.w2 = torch.nn.Linear(16, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(torch.tanh(self.w1(x)))


def parallelize(model: torch.nn.Module, mesh, mp_policy=None) -> torch.nn.Module:
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    if mesh["tensor_parallel"].size() > 1:
        parallelize_module(model, mesh["tensor_parallel"], {"w1": ColwiseParallel(),
                                                           "w2": RowwiseParallel()})
    if mesh["data_parallel"].size() > 1:
        fully_shard(model, mesh=mesh["data_parallel"], **(
            {"mp_policy": mp_policy} if mp_policy is not None else {}))
    return model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--dp", default="auto")
    parser.add_argument("--tp", default="auto")
    parser.add_argument("--meta", action="store_true")
    parser.add_argument("--ac", action="store_true")
    parser.add_argument("--precision", default="32-true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.devices == 1:
        lite = fulmen.Lite(accelerator="cpu", devices=1, precision=args.precision)
    else:
        strategy = fulmen_strategy(size(args.dp), size(args.tp), args.ac)
        # FSDP2's mixed precision from the Lite's precision, through the strategy
        strategy.parallelize_fn = lambda model, mesh: parallelize(
            model, mesh, strategy.mixed_precision_policy())
        lite = fulmen.Lite(accelerator="cpu", devices=args.devices, strategy=strategy,
                           precision=args.precision)
    lite.launch(run, args)


def size(value: str) -> int | str:
    return value if value == "auto" else int(value)


def fulmen_strategy(dp, tp, checkpointing):
    from fulmen_strategies import ModelParallelStrategy

    return ModelParallelStrategy(parallelize_fn=parallelize, data_parallel_size=dp,
                                 tensor_parallel_size=tp, activation_checkpointing_policy={
                                     Counting} if checkpointing else None)


def run(lite: fulmen.Lite, args) -> None:
    torch.manual_seed(0)
    if args.meta:
        with torch.device("meta"):
            model = MLP()
    else:
        model = MLP()
    model = lite.setup_module(model)
    optimizer = lite.setup_optimizers(torch.optim.SGD(model.parameters(), lr=0.5))
    dp = lite.strategy.mesh_shape()[0] if args.devices > 1 else 1
    loader = lite.setup_dataloaders(DataLoader(Indexed(32), batch_size=8 // dp))
    seen: list[int] = []
    losses: list[float] = []
    for _ in range(2):
        for x, y, idx in loader:
            seen.extend(int(i) for i in idx)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x).float(), y)
            losses.append(float(loss))
            lite.backward(loss)
            optimizer.step()
    if args.devices > 1:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    else:
        state = model.state_dict()
    rank = lite.global_rank
    mean = lite.all_reduce(torch.tensor(float(rank)), reduce_op="mean")
    total = lite.all_reduce(torch.tensor(1.0), reduce_op="sum")
    Path(args.out, f"rank{rank}.json").write_text(json.dumps({
        "weights": {k: v.float().tolist() for k, v in state.items()}, "seen": seen,
        "losses": losses, "param_dtypes": sorted({str(p.dtype) for p in model.parameters()}),
        "mean": float(mean), "sum": float(total), "w1_forward_calls": Counting.calls,
        "meta_params": sum(p.is_meta for p in model.parameters())}))


if __name__ == "__main__":
    main()
