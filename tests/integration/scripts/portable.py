"""Train with one strategy, checkpoint, resume with another: what the portability tests run.

Writes ``<out>/rank0.json``: per-step losses, the global step, the final weights, and (with
``--resume``) the model weights and optimizer state as restored, before the first step; and
``<out>/seen<R>.json`` for each rank: ``[epoch, batch_idx, sample indices]`` of every batch it
trained on. ``--save-at N`` also writes ``<out>/mid.ckpt`` after optimizer step ``N`` (inside
an epoch).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader
from train import Indexed, Model

import fulmen


def full(value: Any) -> Any:
    """Nested state with DTensors gathered, tensors as lists."""
    if hasattr(value, "full_tensor"):
        value = value.full_tensor()
    if isinstance(value, torch.Tensor):
        return value.detach().float().flatten().tolist()
    if isinstance(value, dict):
        return {str(k): full(v) for k, v in value.items()}
    return value


class Portable(Model):
    def __init__(self) -> None:
        super().__init__()
        self.losses: list[float] = []
        self.restored: dict[str, Any] = {}
        self.batches: list[list[Any]] = []
        self.save_at: tuple[int, Path] | None = None

    def configure_optimizers(self) -> Any:
        return torch.optim.Adam(self.parameters(), lr=0.02)

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
        self.batches.append([self.current_epoch, batch_idx, [int(i) for i in batch[2]]])

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs
        self.losses.append(float(loss.detach()))
        if self.save_at is not None and self.trainer.global_step == self.save_at[0]:
            self.trainer.save_checkpoint(self.save_at[1])  # every rank

    def on_train_start(self) -> None:
        strategy = self.trainer.strategy  # every rank: gathering may be collective
        weights = full(strategy.module_state_dict())
        optimizer = full(strategy.optimizer_state(self.trainer.optimizers[0]))
        self.restored = {"weights": weights, "optimizer": optimizer.get("state", {})}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--strategy", default="ddp")
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--resume", default=None)
    parser.add_argument("--save", default="final.ckpt")
    parser.add_argument("--save-at", type=int, default=0)
    args = parser.parse_args()
    out = Path(args.out)
    strategy: Any = args.strategy
    if args.strategy == "fsdp_sharded":
        from fulmen_strategies import FSDPStrategy

        strategy = FSDPStrategy(state_dict_type="sharded")
    trainer = fulmen.Trainer(
        accelerator="cpu", devices=args.devices, strategy=strategy, max_epochs=args.epochs,
        enable_progress_bar=False, enable_model_summary=False, logger=False,
        enable_checkpointing=False, num_sanity_val_steps=0, default_root_dir=str(out))
    model = Portable()
    if args.save_at:
        model.save_at = (args.save_at, out / "mid.ckpt")
    trainer.fit(model, DataLoader(Indexed(32), batch_size=4), ckpt_path=args.resume)
    trainer.save_checkpoint(out / args.save)
    weights = full(trainer.strategy.module_state_dict())
    (out / f"seen{trainer.global_rank}.json").write_text(json.dumps(model.batches))
    if trainer.is_global_zero:
        (out / "rank0.json").write_text(json.dumps({
            "losses": model.losses, "global_step": trainer.global_step, "weights": weights,
            "restored": model.restored, "strategy": trainer.strategy.name,
            "world_size": trainer.world_size}))


if __name__ == "__main__":
    main()
