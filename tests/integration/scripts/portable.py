"""Train with one strategy, checkpoint, resume with another: what the portability tests run.

Writes ``<out>/rank0.json``: per-step losses, the global step, the final weights, and (with
``--resume``) the model weights and optimizer state as restored, before the first step.
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

    def configure_optimizers(self) -> Any:
        return torch.optim.Adam(self.parameters(), lr=0.02)

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs
        self.losses.append(float(loss.detach()))

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
    trainer.fit(model, DataLoader(Indexed(32), batch_size=4), ckpt_path=args.resume)
    trainer.save_checkpoint(out / args.save)
    weights = full(trainer.strategy.module_state_dict())
    if trainer.is_global_zero:
        (out / "rank0.json").write_text(json.dumps({
            "losses": model.losses, "global_step": trainer.global_step, "weights": weights,
            "restored": model.restored, "strategy": trainer.strategy.name,
            "world_size": trainer.world_size}))


if __name__ == "__main__":
    main()
