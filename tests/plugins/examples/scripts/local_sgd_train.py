"""local_sgd (fulmen-examples) on 2 CPU processes: Trainer.fit, then a Lite loop; per-rank JSON."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import fulmen


class Indexed(Dataset):
    def __init__(self, n: int = 32) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 8, generator=g)
        self.y = (self.x[:, 0] > 0).long()

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> Any:
        return self.x[i], self.y[i], i


def net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Linear(8, 2)


def weights(module: torch.nn.Module) -> list[float]:
    return [v for p in module.parameters() for v in p.detach().flatten().tolist()]


class Model(fulmen.Module):
    def __init__(self, out: str) -> None:
        super().__init__()
        self.net, self.out, self.seen = net(), out, []

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y, idx = batch
        self.seen.extend(int(i) for i in idx)
        return F.cross_entropy(self.net(x), y)

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.5)

    def on_train_end(self) -> None:
        rank = self.trainer.global_rank
        Path(self.out, f"fit{rank}.json").write_text(json.dumps(
            {"world_size": self.trainer.world_size, "seen": self.seen,
             "weights": weights(self.net), "strategy": type(self.trainer.strategy).__name__}))


def lite_loop(lite: fulmen.Lite, out: str) -> int:
    model = lite.setup_module(net())
    optimizer = lite.setup_optimizers(torch.optim.SGD(model.parameters(), lr=0.5))
    seen: list[int] = []
    for x, y, idx in lite.setup_dataloaders(DataLoader(Indexed(), batch_size=4)):
        seen.extend(int(i) for i in idx)
        optimizer.zero_grad()
        lite.backward(F.cross_entropy(model(x), y))
        optimizer.step()  # 4 steps per rank: averaged after steps 2 and 4 (sync_every=2)
    Path(out, f"lite{lite.global_rank}.json").write_text(json.dumps(
        {"world_size": lite.world_size, "seen": seen, "weights": weights(model)}))
    return lite.global_rank


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", default="local_sgd")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy=args.strategy, max_epochs=1,
                             logger=False, enable_checkpointing=False, enable_progress_bar=False,
                             enable_model_summary=False)
    trainer.fit(Model(args.out), DataLoader(Indexed(), batch_size=4))
    lite = fulmen.Lite(accelerator="cpu", devices=2, strategy=args.strategy)
    returned = lite.launch(lite_loop, args.out)
    if os.environ.get("RANK", "0") == "0":
        Path(args.out, "main.json").write_text(json.dumps({"returned": returned}))


if __name__ == "__main__":
    main()
