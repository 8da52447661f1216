"""ModelCheckpoint and EarlyStopping under ``ddp`` on two CPU processes, where each rank logs
its own (unsynchronised) metric: every rank must take rank zero's decisions. Writes
``<out>/rank<R>.json`` from every process."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch
from boring import BoringModel

import fulmen
from fulmen.callbacks import EarlyStopping, ModelCheckpoint


class PerRank(BoringModel):
    """Rank 0 logs 5, 4, 3, 2, 1 ...; rank 1 logs the reverse: the ranks disagree on the best."""

    def on_validation_epoch_end(self) -> None:
        value = 5.0 - self.current_epoch if self.global_rank == 0 else 1.0 + self.current_epoch
        self.log("score", torch.tensor(value))
        # rank 0 diverges at epoch 3: EarlyStopping on rank 0 alone asks to stop
        self.log("div", torch.tensor(100.0 if self.global_rank == 0 and self.current_epoch == 3
                                     else 0.0))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    out = parser.parse_args().out
    torch.set_num_threads(1)
    ckpt = ModelCheckpoint(dirpath=out / "ckpt", filename="{epoch}-{score:.1f}", monitor="score",
                           save_top_k=2, save_last="link")
    stopper = EarlyStopping(monitor="div", divergence_threshold=50.0, patience=100)
    trainer = fulmen.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=8,
                             limit_train_batches=2, limit_val_batches=2, logger=False,
                             enable_progress_bar=False, enable_model_summary=False,
                             callbacks=[ckpt, stopper])
    trainer.fit(PerRank())
    rank = trainer.global_rank
    (out / f"rank{rank}.json").write_text(json.dumps({
        "best_model_path": ckpt.best_model_path, "best_k_models": sorted(ckpt.best_k_models),
        "best_model_score": float(ckpt.best_model_score), "last": ckpt.last_model_path,
        "kth": ckpt.kth_best_model_path, "stopped_epoch": stopper.stopped_epoch,
        "reason": stopper.stopping_reason.name, "epoch": trainer.current_epoch,
        "files": sorted(os.listdir(out / "ckpt")),
    }))


if __name__ == "__main__":
    main()
