"""One process (devices=1) under a DeepSpeed strategy: DeepSpeed still needs a process group.
Prints the global step and whether the engine ran in float16."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, TensorDataset

import fulmen


class Model(fulmen.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Linear(8, 2)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self) -> Any:
        return torch.optim.Adam(self.parameters(), lr=0.1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--strategy", default="deepspeed_stage_3")
    parser.add_argument("--precision", default="16-mixed")
    args = parser.parse_args()
    trainer = fulmen.Trainer(accelerator="cpu", devices=1, strategy=args.strategy,
                             precision=args.precision, max_epochs=1, logger=False,
                             enable_progress_bar=False, enable_checkpointing=False,
                             enable_model_summary=False)
    model = Model()
    data = TensorDataset(torch.randn(32, 8), torch.randint(0, 2, (32,)))
    trainer.fit(model, DataLoader(data, batch_size=8))
    engine = trainer.strategy.engine
    (Path(args.out) / "rank0.json").write_text(json.dumps({
        "global_step": trainer.global_step, "fp16": bool(engine.fp16_enabled()),
        "micro_batch": engine.train_micro_batch_size_per_gpu(),
        "world_size": trainer.world_size}))


if __name__ == "__main__":
    main()
