"""Trains a tiny model with the strategy given (ddp_sharded, ddp_sharded_spawn or ddp for
comparison), checkpoints every epoch, optionally resumes and tests; writes rank<R>.json."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
from tiny_models import Classifier, Indexed
from torch.utils.data import DataLoader

import fulmen
from fulmen.callbacks import ModelCheckpoint


class Model(Classifier):
    def configure_optimizers(self) -> Any:
        optimizer = torch.optim.Adam(self.parameters(), lr=0.05)
        # The scheduler holds the user's optimizer; the sharded one must follow its lr.
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler,
                                                         "interval": "step"}}


def local_state_bytes(optimizer: Any) -> int:
    inner = getattr(optimizer, "optim", optimizer)  # OSS keeps this rank's shard in .optim
    return sum(v.numel() * v.element_size() for s in inner.state.values()
               for v in s.values() if torch.is_tensor(v) and v.dim() > 0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", default="ddp_sharded")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--resume", default=None)
    parser.add_argument("--clip", type=float, default=None)
    parser.add_argument("--precision", default="32-true")
    parser.add_argument("--test", action="store_true")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = Path(args.out)
    trainer = fulmen.Trainer(
        accelerator="cpu", devices=2, strategy=args.strategy, max_epochs=args.epochs,
        gradient_clip_val=args.clip, precision=args.precision, enable_progress_bar=False,
        enable_model_summary=False, logger=False, num_sanity_val_steps=0, default_root_dir=str(out),
        callbacks=[ModelCheckpoint(dirpath=out / "ckpt", save_top_k=-1)])
    model = Model()
    val = DataLoader(Indexed(16, with_index=False), batch_size=4)
    data = DataLoader(Indexed(32, with_index=False), batch_size=4)
    trainer.fit(model, data, val, ckpt_path=args.resume)
    state_bytes = local_state_bytes(trainer.optimizers[0]) if trainer.optimizers else None
    optimizer_type = type(trainer.optimizers[0]).__name__ if trainer.optimizers else None
    results = trainer.test(model, val, verbose=False) if args.test else None
    (out / f"rank{trainer.global_rank}.json").write_text(json.dumps({
        "strategy": trainer.strategy.name, "world_size": trainer.world_size,
        "weights": {k: v.flatten().tolist() for k, v in model.state_dict().items()},
        "global_step": trainer.global_step, "optimizer_state_bytes": state_bytes,
        "optimizer_type": optimizer_type, "results": results,
        "checkpoints": sorted(p.name for p in (out / "ckpt").iterdir())}))


if __name__ == "__main__":
    main()
