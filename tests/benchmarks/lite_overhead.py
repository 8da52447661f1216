"""Benchmark: a Lite loop against the same plain PyTorch loop, one process, same run.

Tiny MLP 32 -> 64 -> 2, batch 64, 3000 steps, torch.set_num_threads(1), SGD; the loop body is
identical except for the five Lite changes, and steps WARMUP to STEPS are timed in both alike.
Goal: Lite <= 1.01x the plain loop's time per step (2 processes under ddp are measured by
startup.py).

    .venv/bin/python tests/benchmarks/lite_overhead.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from trainer_overhead import STEPS, WARMUP, Window, make_loader, make_net, plain

import fulmen

REPEATS = 12


class Loop(fulmen.Lite):
    def run(self, loader: torch.utils.data.DataLoader) -> float:
        model = make_net()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model, optimizer = self.setup(model, optimizer)
        loader = self.setup_dataloaders(loader)
        window, step = Window(), 0
        while step < STEPS:
            for x, y in loader:
                window.tick()
                loss = torch.nn.functional.cross_entropy(model(x), y)
                optimizer.zero_grad()
                self.backward(loss)
                optimizer.step()
                step += 1
                if step == STEPS:
                    break
        return window.per_step()


def main() -> None:
    torch.set_num_threads(1)
    loader = make_loader()
    plain(loader)
    rows: dict[str, list[float]] = {"plain": [], "lite": []}
    runs = {"plain": lambda: plain(loader), "lite": lambda: Loop(accelerator="cpu").run(loader)}
    for i in range(REPEATS):  # every other round in the reverse order: no side goes first always
        for name in list(runs) if i % 2 == 0 else reversed(list(runs)):
            rows[name].append(runs[name]())
    base = statistics.median(rows["plain"])
    lite = statistics.median(rows["lite"])
    ratio = statistics.median(r / p for r, p in zip(rows["lite"], rows["plain"]))
    print(f"tiny MLP, {STEPS} steps (timed: {WARMUP} to {STEPS}), batch 64, 1 thread; ratio: "
          f"median over {REPEATS} rounds of each round's Lite time / that round's plain loop")
    print(f"  plain  {base * 1e6:7.1f} us/step  1.000x")
    print(f"  lite   {lite * 1e6:7.1f} us/step  {ratio:5.3f}x (goal <= 1.01x)")


if __name__ == "__main__":
    main()
