"""Seed 002's Lite example under real multi-process strategies; per-rank JSON results."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from train import Indexed

import fulmen


def make_net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))


class SeedLite(fulmen.Lite):
    def run(self, out: str, fsdp: bool) -> dict[str, Any]:
        if fsdp:  # FSDP wraps the module before the optimizer is built
            model = self.setup_module(make_net())
            optimizer = self.setup_optimizers(torch.optim.SGD(model.parameters(), lr=0.5))
        else:
            model = make_net()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
            model, optimizer = self.setup(model, optimizer)
        dataloader = self.setup_dataloaders(DataLoader(Indexed(32), batch_size=4))
        seen: list[int] = []
        model.train()
        for _ in range(2):
            for x, y, idx in dataloader:
                seen.extend(int(i) for i in idx)
                optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)
                self.backward(loss)
                optimizer.step()
        self.print("printed once")
        gathered = self.all_gather(torch.tensor([float(self.global_rank)]))
        mean = self.all_reduce(torch.tensor(float(self.global_rank)), reduce_op="mean")
        shared = self.broadcast({"from": self.global_rank}, src=0)
        self.barrier()
        path = Path(out) / "state.ckpt"
        self.save(path, {"model": model, "optimizer": optimizer, "step": 16})
        restored = self.setup_module(make_net()) if fsdp else self.setup(make_net())
        rest = self.load(path, {"model": restored})
        state = model.state_dict()
        weights = [(v.full_tensor() if hasattr(v, "full_tensor") else v).flatten().tolist()
                   for v in state.values()]
        again = [(v.full_tensor() if hasattr(v, "full_tensor") else v).flatten().tolist()
                 for v in restored.state_dict().values()]
        result = {"rank": self.global_rank, "world_size": self.world_size, "seen": seen,
                  "weights": weights, "restored_equal": weights == again, "rest": rest,
                  "gathered": gathered.flatten().tolist(), "mean": float(mean),
                  "shared": shared}
        (Path(out) / f"rank{self.global_rank}.json").write_text(json.dumps(result))
        return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", default="ddp")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    lite = SeedLite(accelerator="cpu", devices=2, strategy=args.strategy)
    result = lite.run(args.out, args.strategy == "fsdp")
    if lite.global_rank == 0 or args.strategy == "ddp_spawn":
        (Path(args.out) / "main.json").write_text(json.dumps({"returned_rank": result["rank"]}))


if __name__ == "__main__":
    main()
