"""A training script run by the integration tests under real multi-process strategies.

Writes ``<out>/rank<R>.json`` from every process (what it saw and its final weights) and
``<out>/main.json`` from the process that started the run (what the caller got back).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import sys
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from tiny_models import Indexed
from torch.utils.data import DataLoader

import fulmen


class Model(fulmen.Module):
    def __init__(self, crash_rank: int = -1, log_rank: bool = False, diverge: bool = False,
                 lam: bool = False) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(),
                                       torch.nn.Linear(16, 2))
        self.crash_rank, self.log_rank, self.diverge = crash_rank, log_rank, diverge
        self.abort_rank = -1
        self.seen: list[int] = []
        self.out: Path | None = None  # where on_train_batch_end marks that training runs
        self.val_seen: list[int] = []
        if lam:
            self.fn = lambda x: x  # cannot be pickled

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y, idx = batch
        self.seen.extend(int(i) for i in idx)
        if self.global_rank == self.crash_rank and self.global_step == 2:
            raise RuntimeError(f"rank {self.global_rank} crashes on purpose")
        if self.global_rank == self.abort_rank and self.global_step == 2:
            os.abort()
        if self.diverge and self.global_rank == 1:
            self.trainer.strategy.broadcast("only rank 1 calls this")
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self.out is not None and self.global_step == 1:
            (self.out / f"training-rank{self.global_rank}").touch()

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y, idx = batch
        self.val_seen.extend(int(i) for i in idx)
        self.log("val_acc", (self(x).argmax(1) == y).float().mean(), sync_dist=True)
        if self.log_rank:
            self.log("rank_synced", float(self.global_rank), sync_dist=True)
            self.log("rank_local", float(self.global_rank))

    def test_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y, _ = batch
        acc = (self(x).argmax(1) == y).float().mean()
        self.log("test_acc", acc, sync_dist=True)
        return acc

    def on_test_epoch_end(self) -> None:
        gathered = self.all_gather(torch.tensor([float(self.global_rank)]))
        if self.trainer.is_global_zero:
            self.log("gathered_sum", gathered.sum(), rank_zero_only=True)

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.5)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", default="ddp")
    parser.add_argument("--devices", default="2")
    parser.add_argument("--num-nodes", type=int, default=1)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--samples", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--out", required=True)
    parser.add_argument("--crash-rank", type=int, default=-1)
    parser.add_argument("--no-sampler", action="store_true")
    parser.add_argument("--log-rank", action="store_true")
    parser.add_argument("--diverge", action="store_true")
    parser.add_argument("--lambda", dest="lam", action="store_true")
    parser.add_argument("--test", action="store_true")
    parser.add_argument("--abort-at-exit", type=int, default=-1,
                        help="this rank aborts (SIGABRT) after its script has finished")
    parser.add_argument("--abort-in-step", type=int, default=-1,
                        help="this rank aborts (SIGABRT) at its third step")
    args = parser.parse_args()
    if os.environ.get("RANK") == str(args.abort_at_exit):  # registered first: runs last
        atexit.register(os.abort)

    out = Path(args.out)
    devices: Any = int(args.devices) if args.devices.isdigit() else args.devices
    trainer = fulmen.Trainer(
        accelerator="cpu", devices=devices, strategy=args.strategy, max_epochs=args.epochs,
        num_nodes=args.num_nodes,
        enable_progress_bar=False, enable_model_summary=False, logger=False,
        default_root_dir=str(out), num_sanity_val_steps=0,
        use_distributed_sampler=not args.no_sampler)
    model = Model(args.crash_rank, args.log_rank, args.diverge, args.lam)
    model.out = out
    model.abort_rank = args.abort_in_step
    data = DataLoader(Indexed(args.samples), batch_size=args.batch)
    val = DataLoader(Indexed(args.samples // 2), batch_size=args.batch)
    trainer.fit(model, data, val)
    results = trainer.test(model, val, verbose=False) if args.test else None

    def dump(path: Path, extra: dict[str, Any]) -> None:
        path.write_text(json.dumps({
            "world_size": trainer.world_size, "strategy": trainer.strategy.name,
            "weights": [p.detach().flatten().tolist() for p in model.parameters()],
            "callback_metrics": {k: float(v) for k, v in trainer.callback_metrics.items()},
            "global_step": trainer.global_step, "results": results,
            "best_model_path": trainer.checkpoint_callback.best_model_path
            if trainer.checkpoint_callback else None, **extra}))

    if int(os.environ.get("RANK", "-1")) >= 0 or args.strategy in ("ddp",):
        rank = trainer.global_rank
        extra_env = {"environment": trainer.cluster_environment.name}
        dump(out / f"rank{rank}.json", {"rank": rank, "seen": model.seen,
                                        "val_seen": model.val_seen, **extra_env})
    if os.environ.get("LOCAL_RANK", "0") == "0":
        dump(out / "main.json", {"pid": os.getpid(), "argv0": sys.argv[0]})


if __name__ == "__main__":
    main()
