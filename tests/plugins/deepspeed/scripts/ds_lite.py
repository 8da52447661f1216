"""Lite under a DeepSpeed strategy on 2 CPU processes: train, save (engine shards), train on;
then restore the save and train the same epoch again: the weights must match (optimizer state
and step restored). Rank 0 writes <out>/rank0.json."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from ds_train import Indexed
from torch.utils.data import DataLoader

import fulmen


def make_net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))


def weights(model: Any, lite: fulmen.Lite) -> list[float]:
    state = lite.strategy.module_state_dict()
    return [x for v in state.values() for x in v.float().flatten().tolist()]


class DeepSpeedLite(fulmen.Lite):
    def run(self, out: str) -> None:
        net = make_net()
        model, optimizer = self.setup(net, torch.optim.Adam(net.parameters(), lr=0.05))
        loader = self.setup_dataloaders(DataLoader(Indexed(32, with_index=False), batch_size=4))

        def epoch() -> None:
            for x, y in loader:
                optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)
                self.backward(loss)
                optimizer.step()

        epoch()
        path = Path(out) / "lite.ckpt"
        self.save(path, {"model": model, "optimizer": optimizer, "step": 8})
        epoch()
        after_two = weights(model, self)
        rest = self.load(path, {"model": model, "optimizer": optimizer})
        restored = weights(model, self)
        epoch()
        again = weights(model, self)
        if self.is_global_zero:
            (Path(out) / "rank0.json").write_text(json.dumps({
                "after_two": after_two, "again": again, "restored": restored, "rest": rest,
                "is_dir": path.is_dir(), "world_size": self.world_size}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--strategy", default="deepspeed_stage_3")
    parser.add_argument("--precision", default="32-true")
    args = parser.parse_args()
    DeepSpeedLite(accelerator="cpu", devices=2, strategy=args.strategy,
                  precision=args.precision).run(args.out)


if __name__ == "__main__":
    main()
