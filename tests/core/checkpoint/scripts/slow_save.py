"""Trains with ModelCheckpoint saving every step; from the third save on, the checkpoint holds
an object whose pickling announces itself (``<out>/saving``) and then hangs, so the test can
SIGKILL this process while ``torch.save`` is writing (in the background with
``--async-save``)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from tiny_models import TinyModule, lean, loader

import fulmen
from fulmen.callbacks import ModelCheckpoint


class Hang:
    def __init__(self, flag: str) -> None:
        self.flag = flag

    def __reduce__(self) -> Any:
        Path(self.flag).write_text("saving")
        time.sleep(600)
        return (int, (0,))


class Model(TinyModule):
    def __init__(self, flag: str) -> None:
        super().__init__()
        self.flag = flag

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        if self.trainer.global_step >= 3:
            checkpoint["hang"] = Hang(self.flag)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--dirpath", required=True)
    parser.add_argument("--async-save", action="store_true")
    args = parser.parse_args()
    trainer = fulmen.Trainer(**{**lean(max_epochs=1), "enable_checkpointing": True},
                             callbacks=[ModelCheckpoint(dirpath=args.dirpath, save_top_k=-1,
                                                        every_n_train_steps=1,
                                                        async_save=args.async_save)])
    trainer.fit(Model(str(Path(args.out) / "saving")), loader(64))


if __name__ == "__main__":
    main()
