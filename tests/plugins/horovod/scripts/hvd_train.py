"""Trainer script for the Horovod tests: the same run under ``horovodrun`` (strategy horovod)
or fulmen's own ``ddp`` launcher; every rank writes ``<out>/rank<R>.json``."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from tiny_models import Indexed
from torch.utils.data import DataLoader

import fulmen
from fulmen.api.checkpoint_io import TorchCheckpointIO
from fulmen.callbacks import ModelCheckpoint


class RecordingIO(TorchCheckpointIO):
    """Writes as usual and notes which process wrote (the strategy decides who writes)."""

    def __init__(self, log: Path) -> None:
        self.log = log

    def save_checkpoint(self, checkpoint: Any, path: Any, storage_options: Any = None) -> None:
        rank = os.environ.get("HOROVOD_RANK", os.environ.get("RANK", "0"))
        with open(self.log, "a") as f:
            f.write(f"rank {rank} wrote {Path(path).name}\n")
        super().save_checkpoint(checkpoint, path, storage_options)


class Model(fulmen.Module):
    def __init__(self, momentum: float, scheduler: bool) -> None:
        super().__init__()
        torch.manual_seed(int(os.environ.get("HOROVOD_RANK", os.environ.get("RANK", "0"))))
        # Different initial weights per rank: the strategy must broadcast rank 0's.
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(),
                                       torch.nn.Linear(16, 2))
        self.momentum, self.scheduler = momentum, scheduler
        self.seen: list[int] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y, idx = batch
        self.seen.extend(int(i) for i in idx)
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y, _ = batch
        self.log("val_acc", (self(x).argmax(1) == y).float().mean(), sync_dist=True)

    def on_validation_epoch_end(self) -> None:
        gathered = self.all_gather(torch.tensor([float(self.global_rank)]))
        self.log("gathered_sum", gathered.sum(), rank_zero_only=True)

    def configure_optimizers(self) -> Any:
        optimizer = torch.optim.SGD(self.parameters(), lr=0.5, momentum=self.momentum)
        if not self.scheduler:
            return optimizer
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", default="horovod")
    parser.add_argument("--devices", default="1")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--accumulate", type=int, default=1)
    parser.add_argument("--clip", type=float, default=None)
    parser.add_argument("--momentum", type=float, default=0.0)
    parser.add_argument("--scheduler", action="store_true")
    parser.add_argument("--checkpoint", action="store_true")
    parser.add_argument("--resume", default=None)
    parser.add_argument("--sync-batchnorm", action="store_true")
    parser.add_argument("--passes", type=int, default=None,
                        help="pass HorovodStrategy(backward_passes_per_step=N) as an instance")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    out = Path(args.out)
    callbacks = [ModelCheckpoint(dirpath=str(out / "ckpt"), save_top_k=-1)] \
        if args.checkpoint else []
    # "legacy-accelerator": the seed's spelling, Trainer(accelerator="horovod").
    legacy = args.strategy == "legacy-accelerator"
    strategy: Any = "auto" if legacy else args.strategy
    if args.passes is not None:
        from fulmen_horovod.strategy import HorovodStrategy

        strategy = HorovodStrategy(backward_passes_per_step=args.passes)
    trainer = fulmen.Trainer(
        accelerator="horovod" if legacy else "cpu", devices=int(args.devices),
        strategy=strategy,
        max_epochs=args.epochs, accumulate_grad_batches=args.accumulate,
        gradient_clip_val=args.clip, callbacks=callbacks, sync_batchnorm=args.sync_batchnorm,
        enable_checkpointing=args.checkpoint, plugins=[RecordingIO(out / "writes.txt")],
        enable_progress_bar=False, enable_model_summary=False, logger=False,
        default_root_dir=str(out), num_sanity_val_steps=0)
    model = Model(args.momentum, args.scheduler)
    data = DataLoader(Indexed(40), batch_size=4, shuffle=True)
    val = DataLoader(Indexed(16), batch_size=4)
    trainer.fit(model, data, val, ckpt_path=args.resume)
    (out / f"rank{trainer.global_rank}.json").write_text(json.dumps({
        "rank": trainer.global_rank, "world_size": trainer.world_size,
        "local_rank": trainer.local_rank, "node_rank": trainer.node_rank,
        "strategy": trainer.strategy.name, "environment": trainer.cluster_environment.name,
        "weights": [p.detach().flatten().tolist() for p in model.parameters()],
        "global_step": trainer.global_step, "seen": model.seen,
        "lr": trainer.optimizers[0].param_groups[0]["lr"],
        "metrics": {k: float(v) for k, v in trainer.callback_metrics.items()},
        "env": {k: v for k, v in os.environ.items() if k.startswith("HOROVOD_")},
    }))


if __name__ == "__main__":
    main()
