"""Training that a 2-process ddp resume must reproduce bit for bit: shuffled data
(DistributedSampler), dropout, gradient accumulation, Adam and a step-interval scheduler.

``--every n`` saves a checkpoint every ``n`` optimizer steps into ``<out>/ck``; ``--resume
PATH`` continues from one. ``--rank-seeds``: each rank seeds its own random numbers
(``seed + rank``), so the ranks' dropout differs. Writes ``<out>/rank<R>.json`` (final weights).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import fulmen
from fulmen.callbacks import ModelCheckpoint


class Noisy(Dataset):
    """64 seeded samples; ``__getitem__`` adds torch noise (an augmentation)."""

    def __init__(self) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(64, 8, generator=g)
        self.y = (self.x[:, 0] > 0).long()

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> Any:
        return self.x[i] + 0.1 * torch.randn(8), self.y[i]


class Model(fulmen.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                       torch.nn.Dropout(0.3), torch.nn.Linear(16, 2))

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return F.cross_entropy(self.net(x), y)

    def configure_optimizers(self) -> Any:
        optimizer = torch.optim.Adam(self.parameters(), lr=0.05)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.7)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler,
                                                         "interval": "step"}}


class SeedRanks(fulmen.Callback):
    """Seeds each rank differently once the processes exist (dropout masks then differ)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        fulmen.seed_everything(self.seed + trainer.global_rank)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--every", type=int, default=0)
    parser.add_argument("--resume", default=None)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--rank-seeds", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    out = Path(args.out)
    fulmen.seed_everything(args.seed)
    model = Model()
    callbacks: list[Any] = [SeedRanks(args.seed)] if args.rank_seeds else []
    if args.every:
        callbacks.append(ModelCheckpoint(dirpath=out / "ck", every_n_train_steps=args.every,
                                         save_top_k=-1))
    trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy="ddp",
                             max_epochs=args.epochs, accumulate_grad_batches=2,
                             logger=False, enable_checkpointing=bool(args.every),
                             enable_progress_bar=False, enable_model_summary=False,
                             callbacks=callbacks, default_root_dir=str(out))
    trainer.fit(model, DataLoader(Noisy(), batch_size=4, shuffle=True), ckpt_path=args.resume)
    weights = {k: v.flatten().tolist() for k, v in model.state_dict().items()}
    (out / f"rank{trainer.global_rank}.json").write_text(json.dumps(
        {"weights": weights, "global_step": trainer.global_step,
         "epoch": trainer.current_epoch}))


if __name__ == "__main__":
    main()
