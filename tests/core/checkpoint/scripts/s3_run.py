"""Trains on s3:// (endpoint and credentials from the environment, as a user sets them):
checkpoints every 2 steps into ``--dirpath`` with ``last``; ``--kill-at N`` SIGKILLs this
process in training step N; ``--resume`` resumes from ``ckpt_path="last"``. Prints the step it
started from and the step it ended at."""

from __future__ import annotations

import argparse
import os
import signal
from typing import Any

import torch
from tiny_models import TinyModule, lean, loader

import fulmen
from fulmen.callbacks import ModelCheckpoint


class Model(TinyModule):
    def __init__(self, kill_at: int) -> None:
        super().__init__()
        self.kill_at = kill_at

    def on_train_start(self) -> None:
        print("start", self.trainer.global_step, flush=True)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        if self.trainer.global_step == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().training_step(batch, batch_idx)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dirpath", required=True)
    parser.add_argument("--kill-at", type=int, default=-1)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--async-save", action="store_true")
    args = parser.parse_args()
    checkpoint = ModelCheckpoint(dirpath=args.dirpath, every_n_train_steps=2, save_top_k=2,
                                 monitor="step", mode="max", save_last=True,
                                 async_save=args.async_save)
    trainer = fulmen.Trainer(**{**lean(max_epochs=2), "enable_checkpointing": True},
                             callbacks=[checkpoint])
    torch.manual_seed(0)
    trainer.fit(Model(args.kill_at), loader(64), ckpt_path="last" if args.resume else None)
    print("end", trainer.global_step, flush=True)


if __name__ == "__main__":
    main()
