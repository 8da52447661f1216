"""FSDP on CPU processes: train, checkpoint (full or sharded), resume; per-rank results."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from torch.utils.data import DataLoader
from train import Indexed, Model

import fulmen
from fulmen.callbacks import ModelCheckpoint
from fulmen_strategies import FSDPStrategy


class AdamModel(Model):
    def configure_optimizers(self):  # type: ignore[no-untyped-def]
        return torch.optim.Adam(self.parameters(), lr=0.05)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--state-dict-type", default="full")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--resume", default=None)
    parser.add_argument("--strategy", default="fsdp")
    parser.add_argument("--precision", default="32-true")
    parser.add_argument("--adam", action="store_true")
    args = parser.parse_args()
    out = Path(args.out)
    strategy = args.strategy if args.strategy != "fsdp" else FSDPStrategy(
        auto_wrap_policy={torch.nn.Linear}, state_dict_type=args.state_dict_type)
    trainer = fulmen.Trainer(
        accelerator="cpu", devices=2, strategy=strategy, max_epochs=args.epochs,
        precision=args.precision, enable_progress_bar=False, enable_model_summary=False,
        logger=False, num_sanity_val_steps=0, default_root_dir=str(out),
        callbacks=[ModelCheckpoint(dirpath=out / "ckpt", save_top_k=-1)])
    model = AdamModel() if args.adam else Model()
    trainer.fit(model, DataLoader(Indexed(32), batch_size=4),
                DataLoader(Indexed(16), batch_size=4), ckpt_path=args.resume)
    trainer.save_checkpoint(out / "final.ckpt")  # every rank calls it: it may be collective
    full = trainer.strategy.module_state_dict()
    weights = {k: (v.full_tensor() if hasattr(v, "full_tensor") else v).flatten().tolist()
               for k, v in full.items()}
    params = sum(p.numel() * p.element_size() for p in model.parameters()
                 if not hasattr(p, "to_local")) + sum(
        p.to_local().numel() * p.element_size() for p in model.parameters()
        if hasattr(p, "to_local"))
    if trainer.is_global_zero:
        (out / "rank0.json").write_text(json.dumps({
            "weights": weights,
            "global_step": trainer.global_step, "param_bytes": params,
            "callback_metrics": {k: float(v) for k, v in trainer.callback_metrics.items()},
            "checkpoints": sorted(p.name for p in (out / "ckpt").iterdir())}))


if __name__ == "__main__":
    main()
