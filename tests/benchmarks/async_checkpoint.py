"""Benchmark: how long training is blocked by ``async_save`` against a synchronous save.

A state of ``--mb`` MiB (float32 tensors of 16 MiB, like a model's weights plus Adam's two
moments) is saved to a local file (1) synchronously with ``TorchCheckpointIO`` and (2) with
``AsyncCheckpointIO`` while a CPU training loop (an MLP, one thread) runs. Reported per
repeat, median of ``--repeats``:

- sync: the save's wall time (training stands still for all of it);
- staged: how long ``save_checkpoint`` blocks the caller (the copy to CPU);
- blocked: staged + how much longer the same training steps took while the write ran in the
  background (the writer thread competes for the cores and the GIL).

Goal: blocked <= 15% of sync. On a machine shared with other work the numbers move a lot.

    .venv/bin/python tests/benchmarks/async_checkpoint.py [--mb 1024] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from fulmen.api import AsyncCheckpointIO, TorchCheckpointIO


def make_state(mib: int) -> dict[str, dict[str, torch.Tensor]]:
    n = max(1, mib // 16)
    return {"state_dict": {f"layer{i}.weight": torch.randn(2048, 2048) for i in range(n)}}


def train_steps(model: torch.nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor,
                steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        loss = model(x).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    state = make_state(args.mb)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 256))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 256)
    step_time = train_steps(model, optimizer, x, 50) / 50
    rows: dict[str, list[float]] = {"sync": [], "staged": [], "blocked": []}
    writer = AsyncCheckpointIO()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "state.ckpt"
        for _ in range(args.repeats):
            start = time.perf_counter()
            TorchCheckpointIO().save_checkpoint(state, path)
            sync = time.perf_counter() - start
            steps = max(20, int(2 * sync / step_time))
            alone = train_steps(model, optimizer, x, steps)
            start = time.perf_counter()
            writer.save_checkpoint(state, path)
            staged = time.perf_counter() - start
            with_write = train_steps(model, optimizer, x, steps)
            writer.wait()  # a write outlasting the steps would not have blocked training
            rows["sync"].append(sync)
            rows["staged"].append(staged)
            rows["blocked"].append(staged + max(0.0, with_write - alone))
    writer.teardown()
    sync, staged, blocked = (statistics.median(rows[k]) for k in ("sync", "staged", "blocked"))
    print(f"state {args.mb} MiB, median of {args.repeats}, training on 1 thread")
    print(f"  synchronous save      {sync:7.3f} s  1.000")
    print(f"  async: save() blocks  {staged:7.3f} s  {staged / sync:5.3f}")
    print(f"  async: training lost  {blocked:7.3f} s  {blocked / sync:5.3f} (goal <= 0.15)")


if __name__ == "__main__":
    main()
