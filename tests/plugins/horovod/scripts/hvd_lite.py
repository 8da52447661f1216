"""A Lite loop under ``horovodrun`` (or fulmen's ddp, for comparison): accumulation with
no_backward_sync, clipping, collectives, save and load; every rank writes ``rank<R>.json``."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from hvd_train import Indexed
from torch.utils.data import DataLoader

import fulmen


def make_net() -> torch.nn.Module:
    torch.manual_seed(int(os.environ.get("HOROVOD_RANK", os.environ.get("RANK", "0"))))
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))


class AccumulatingLite(fulmen.Lite):
    def run(self, out: str) -> dict[str, Any]:
        model = make_net()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
        model, optimizer = self.setup(model, optimizer)
        loader = self.setup_dataloaders(DataLoader(Indexed(48), batch_size=4, shuffle=True))
        model.train()
        for _ in range(2):
            for i, (x, y, _) in enumerate(loader):
                last = i % 3 == 2
                with self.no_backward_sync(model, enabled=not last):
                    self.backward(F.cross_entropy(model(x), y) / 3)
                if last:
                    self.clip_gradients(model, optimizer, max_norm=0.5)
                    optimizer.step()
                    optimizer.zero_grad()
        gathered = self.all_gather(torch.tensor([float(self.global_rank)]))
        mean = self.all_reduce(torch.tensor(float(self.global_rank)), reduce_op="mean")
        biggest = self.all_reduce(torch.tensor(float(self.global_rank)), reduce_op="max")
        shared = self.broadcast({"from": self.global_rank}, src=0)
        self.barrier()
        path = Path(out) / "lite.ckpt"
        self.save(path, {"model": model, "optimizer": optimizer, "step": 8})
        restored = self.setup(make_net())
        rest = self.load(path, {"model": restored})
        weights = [v.flatten().tolist() for v in model.state_dict().values()]
        again = [v.flatten().tolist() for v in restored.state_dict().values()]
        result = {"rank": self.global_rank, "world_size": self.world_size, "weights": weights,
                  "restored_equal": weights == again, "rest_keys": sorted(rest),
                  "step": rest["step"], "momentum_saved": bool(rest["optimizer"]["state"]),
                  "gathered": gathered.flatten().tolist(), "mean": float(mean),
                  "max": float(biggest), "shared": shared,
                  "files": sorted(p.name for p in Path(out).iterdir())}
        (Path(out) / f"rank{self.global_rank}.json").write_text(json.dumps(result))
        return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", default="horovod")
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    AccumulatingLite(accelerator="cpu", devices=args.devices, strategy=args.strategy).run(args.out)


if __name__ == "__main__":
    main()
