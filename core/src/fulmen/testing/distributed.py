"""The two-process run: ``Trainer`` then ``Lite`` with ``devices=2``, checked on every rank.

Each rank appends what it saw to ``rank<N>.jsonl`` in the run's folder; the runner (another
process, which also holds the timeout) turns those lines into verdicts. Nothing here knows how
the strategy starts its processes: a script re-run, spawned workers and an external launcher
all work.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import fulmen
from fulmen.testing import models
from fulmen.testing.checks import collective_problems, trainer_args

FOLDER_VARIABLE = "FULMEN_TESTING_FOLDER"


def note(at_rank: int, **fields: Any) -> None:
    path = Path(os.environ[FOLDER_VARIABLE]) / f"rank{at_rank}.jsonl"
    with open(path, "a") as handle:
        handle.write(json.dumps(fields, default=str) + "\n")


class Joined(fulmen.Callback):
    """Notes that this rank got past launching and joining (``setup`` runs after both)."""

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        note(trainer.global_rank, phase="trainer", event="joined", rank=trainer.global_rank)


def trainer_end(module: models.KitModule) -> None:
    """In every rank at the end of ``fit``: collectives, then a checkpoint saved and read back."""
    trainer = module.trainer
    strategy = trainer.strategy
    rank = strategy.global_rank
    note(rank, phase="trainer", event="trained", rank=rank, world_size=strategy.world_size,
         data_rank=strategy.data_parallel_rank, steps=module.steps, seen=module.seen)
    note(rank, phase="trainer", event="collectives", problems=collective_problems(trainer))
    path = Path(os.environ[FOLDER_VARIABLE]) / "fit.ckpt"  # KitModule saved it
    problem = ""
    try:
        strategy.barrier("fulmen-testing-saved")
        saved = strategy.load_checkpoint(path)
        weights = models.flat(strategy.module_state_dict())
        if not isinstance(saved, dict) or "state_dict" not in saved:
            problem = (f"load_checkpoint returned {type(saved).__name__} without 'state_dict'")
        # on every rank: gathering a sharded tensor (DTensor.full_tensor) is a collective
        elif not models.close(models.flat(saved["state_dict"]), weights) and rank == 0:
            # rank zero holds the full state (sharded strategies may gather it there only)
            problem = "the checkpoint's state_dict differs from module_state_dict()"
    except Exception as exc:
        problem = f"{type(exc).__name__}: {exc}"
    note(rank, phase="trainer", event="checkpoint", problem=problem)


def lite_run(lite: fulmen.Lite, folder: str) -> None:
    rank = lite.global_rank
    note(rank, phase="lite", event="started", rank=rank, world_size=lite.world_size)
    out = models.lite_train(lite, folder)
    note(rank, phase="lite", event="trained", rank=rank, world_size=lite.world_size,
         data_rank=lite.strategy.data_parallel_rank, steps=len(out["losses"]), seen=out["seen"],
         restored=models.close(out["restored"], out["weights"]))
    note(rank, phase="lite", event="collectives", problems=collective_problems(lite))


def main(name: str, accelerator: str, folder: str) -> None:
    trainer = fulmen.Trainer(accelerator=accelerator, devices=2, strategy=name, max_steps=2,
                             callbacks=[Joined()], **trainer_args(Path(folder)))
    trainer.fit(models.KitModule(folder, "fit", at_train_end=trainer_end))
    lite = fulmen.Lite(accelerator=accelerator, devices=2, strategy=name)
    lite.launch(lite_run, folder)
