"""A 2-process fit (gloo) whose training step calls a function decorated with
``lightning_utilities``' ``rank_zero_only``, as libraries of the Lightning ecosystem decorate
theirs: it must run on global rank 0 only. Every rank writes ``<out>/rank<R>.json`` (the rank
``rank_zero_only`` had once fulmen was imported, and during the fit) at the end of the fit;
the decorated function touches ``<out>/ran-on-rank<R>`` wherever it runs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
from lightning_utilities.core.rank_zero import rank_zero_only
from torch.utils.data import DataLoader

import fulmen
import fulmen.utilities.rank_zero
from fulmen.demos.boring_classes import BoringModel, RandomDataset

RANK_AT_IMPORT = rank_zero_only.rank  # set by importing fulmen's rank-zero utilities


@rank_zero_only
def mark(out: str, rank: int) -> None:
    Path(out, f"ran-on-rank{rank}").touch()


class Model(BoringModel):
    def __init__(self, out: str) -> None:
        super().__init__()
        self.out = out
        self.ranks_in_steps: list[int] = []

    def train_dataloader(self) -> Any:
        return DataLoader(RandomDataset(32, 8), batch_size=2)

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        mark(self.out, self.global_rank)
        self.ranks_in_steps.append(rank_zero_only.rank)
        return super().training_step(batch, batch_idx)

    def on_train_end(self) -> None:
        Path(self.out, f"rank{self.global_rank}.json").write_text(json.dumps({
            "rank_at_import": RANK_AT_IMPORT, "ranks_in_steps": self.ranks_in_steps,
            "shared": fulmen.utilities.rank_zero.rank_zero_only is rank_zero_only}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", default="ddp")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy=args.strategy, max_steps=2,
                             logger=False, enable_checkpointing=False, enable_progress_bar=False,
                             enable_model_summary=False)
    trainer.fit(Model(args.out))


if __name__ == "__main__":
    main()
