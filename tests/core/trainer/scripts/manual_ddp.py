"""Manual optimization under 2-process data parallelism (gloo): each rank sees different data.

Writes ``<out>/rank<R>.json`` (final weights) from every process, at the end of fit inside the
process (so ``ddp_spawn`` workers write too); with ``--strategy single_device`` it trains on both
ranks' data at once (the averaged-gradient reference). ``--accumulate k``: backward every batch,
step every ``k`` batches, skipping the gradient reduction of the first ``k - 1`` backwards
(``opt.toggle_model(sync_grad=False)``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
from torch.distributed.tensor import DTensor
from torch.utils.data import DataLoader, Dataset

import fulmen


class PerRank(Dataset):
    """8 samples per rank; rank r's sample i is the same tensor on every run."""

    def __init__(self, ranks: list[int]) -> None:
        g = torch.Generator().manual_seed(1)
        data = torch.randn(2, 8, 4, generator=g)
        self.x = torch.cat([data[r] for r in ranks]) if len(ranks) > 1 else data[ranks[0]]
        self.width = len(ranks)

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> Any:
        if self.width == 1:
            return self.x[i]
        return torch.stack([self.x[i], self.x[8 + i]])


class Manual(fulmen.Module):
    def __init__(self, out: str, accumulate: int = 1) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Linear(4, 1)
        self.automatic_optimization = False
        self.out, self.accumulate = out, accumulate

    def training_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        opt = self.optimizers()
        loss = self.net(batch.reshape(-1, 4)).pow(2).mean()
        if self.accumulate == 1:
            opt.zero_grad()
            self.manual_backward(loss)
            opt.step()
            return
        last = (batch_idx + 1) % self.accumulate == 0
        with opt.toggle_model(sync_grad=last):
            self.manual_backward(loss / self.accumulate)
        if last:
            opt.step()
            opt.zero_grad()

    def on_fit_end(self) -> None:
        # FSDP2 leaves the parameters sharded (DTensor): gather them for the comparison.
        weights = [(p.full_tensor() if isinstance(p, DTensor) else p).detach().tolist()
                   for p in self.parameters()]
        Path(self.out, f"rank{self.global_rank}.json").write_text(json.dumps(
            {"weights": weights, "global_step": self.global_step}))

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.1)


class PerRankLoader(fulmen.DataModule):
    """Each process builds its own rank's data (under ``ddp_spawn`` too)."""

    def train_dataloader(self) -> DataLoader:
        trainer = self.trainer
        ranks = [trainer.global_rank] if trainer.world_size == 2 else [0, 1]
        return DataLoader(PerRank(ranks), batch_size=2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", default="ddp")
    parser.add_argument("--out", required=True)
    parser.add_argument("--accumulate", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(1)
    devices = 1 if args.strategy == "single_device" else 2
    trainer = fulmen.Trainer(accelerator="cpu", devices=devices, strategy=args.strategy,
                             max_epochs=1, logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False,
                             use_distributed_sampler=False)
    model = Manual(args.out, args.accumulate)
    trainer.fit(model, PerRankLoader())


if __name__ == "__main__":
    main()
