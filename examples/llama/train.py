"""Train the tiny Llama with Lite: ``--devices 4 --dp 2 --tp 2`` on CPU processes (gloo), or
``--devices 1`` as the one-process reference. Prints (and with ``--out`` writes) the loss curve:
the mean over the data-parallel group of each step's loss.

    python examples/llama/train.py --devices 4 --dp 2 --tp 2 --steps 5
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from model import Llama, LlamaConfig, batches, init_scale, loss_fn  # this script's folder
from parallelize import parallelize

import fulmen


def run(lite: fulmen.Lite, args: argparse.Namespace) -> None:
    cfg = LlamaConfig()
    torch.manual_seed(0)  # the same initial weights on every rank and in the reference
    model = Llama(cfg)
    init_scale(model)
    model = lite.setup_module(model)
    optimizer = lite.setup_optimizers(torch.optim.AdamW(model.parameters(), lr=3e-3))
    dp = lite.strategy.mesh_shape()[0] if args.devices > 1 else 1
    dp_rank = lite.strategy.data_parallel_rank if args.devices > 1 else 0
    losses = []
    for tokens in batches(cfg, args.steps, args.batch_size):
        local = tokens.chunk(dp)[dp_rank]  # this data-parallel rank's share of the global batch
        loss = loss_fn(model(local[:, :-1]), local[:, 1:])
        optimizer.zero_grad()
        lite.backward(loss)
        optimizer.step()
        losses.append(float(lite.all_reduce(loss.detach(), reduce_op="mean")))
    lite.print("losses:", " ".join(f"{x:.4f}" for x in losses))
    if args.out and lite.is_global_zero:
        Path(args.out).write_text(json.dumps({"losses": losses}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--devices", type=int, default=4)
    parser.add_argument("--dp", type=int, default=2)
    parser.add_argument("--tp", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.devices == 1:
        lite = fulmen.Lite(accelerator="cpu", devices=1)
    else:
        from fulmen_strategies import ModelParallelStrategy

        strategy = ModelParallelStrategy(parallelize_fn=parallelize, data_parallel_size=args.dp,
                                         tensor_parallel_size=args.tp)
        lite = fulmen.Lite(accelerator="cpu", devices=args.devices, strategy=strategy)
    lite.launch(run, args)


if __name__ == "__main__":
    main()
