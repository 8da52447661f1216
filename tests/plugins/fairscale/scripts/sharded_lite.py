"""Lite with ddp_sharded on 2 processes: rank r trains on rows r*4..r*4+3 of each block of 8,
saves (consolidated optimizer state), trains on, then resumes a fresh copy from the file and
trains the same steps; writes rank<R>.json."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

import fulmen


def make_net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))


def data() -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(64, 8, generator=torch.Generator().manual_seed(0))
    return x, (x[:, 0] > 0).long()


def weights(model: torch.nn.Module) -> list[list[float]]:
    return [v.flatten().tolist() for v in model.state_dict().values()]


class ShardedLite(fulmen.Lite):
    def train(self, model: Any, optimizer: Any, steps: range) -> None:
        x, y = data()
        for step in steps:
            rows = slice(step * 8 + self.global_rank * 4, step * 8 + self.global_rank * 4 + 4)
            optimizer.zero_grad()
            self.backward(F.cross_entropy(model(x[rows]), y[rows]))
            optimizer.step()

    def run(self, out: str) -> None:
        net = make_net()
        model, optimizer = self.setup(net, torch.optim.Adam(net.parameters(), lr=0.05))
        self.train(model, optimizer, range(4))
        after4 = weights(model)
        path = Path(out) / "lite.ckpt"
        self.save(path, {"model": model, "optimizer": optimizer, "step": 4})
        self.train(model, optimizer, range(4, 8))
        fresh = make_net()
        again, again_opt = self.setup(fresh, torch.optim.Adam(fresh.parameters(), lr=0.05))
        rest = self.load(path, {"model": again, "optimizer": again_opt})
        self.train(again, again_opt, range(4, 8))
        (Path(out) / f"rank{self.global_rank}.json").write_text(json.dumps({
            "optimizer_type": type(optimizer.optimizer).__name__, "after4": after4,
            "after8": weights(model), "resumed8": weights(again), "rest": rest}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ShardedLite(accelerator="cpu", devices=2, strategy="ddp_sharded").run(args.out)


if __name__ == "__main__":
    main()
