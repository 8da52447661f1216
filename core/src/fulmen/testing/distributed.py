"""The two-process run: ``Trainer`` then ``Lite`` with ``devices=2``, checked on every rank.

Each rank appends what it does and sees to ``rank<N>.jsonl`` in the run's folder, as it happens:
the kit's phase (``trainer: fit``, ``lite: collectives``...), every call of the strategy's
process-group members (``setup_environment``, ``barrier``, ``broadcast``, ``all_gather``,
``reduce``, ...: entered, returned or raised, with the time), the Trainer hooks it reached, and
the results. The runner (another process, which holds the timeout) turns those lines into
verdicts; a rank that never returns from a call is named with that call. Nothing here knows how
the strategy starts its processes: a script re-run, spawned workers and an external launcher
all work.

The kit observes the strategy through its public members only: each one is replaced on the
instance by a :class:`Spy` that notes the call and calls the class's own method.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from pathlib import Path
from typing import Any

import torch

import fulmen
from fulmen.checkpoint import service
from fulmen.testing import models
from fulmen.testing.checks import (
    collective_problems,
    plugin_roots,
    sync_problems,
    trainer_args,
)
from fulmen.testing.record import defined_at, describe, locate

FOLDER_VARIABLE = "FULMEN_TESTING_FOLDER"
#: the members of a strategy whose calls each rank notes (every place a rank waits for another)
SPIED = ("setup_environment", "setup_module", "setup_optimizers", "barrier", "broadcast",
         "all_gather", "reduce", "reduce_boolean_decision", "start_agreement",
         "module_state_dict", "optimizer_state", "checkpoint_template", "teardown")


def note(at_rank: int, **fields: Any) -> None:
    path = Path(os.environ[FOLDER_VARIABLE]) / f"rank{at_rank}.jsonl"
    with open(path, "a") as handle:
        handle.write(json.dumps({"t": time.time(), **fields}, default=str) + "\n")


def rank_of(strategy: Any) -> int:
    try:
        return int(strategy.global_rank)
    except Exception:  # before composition told the environment
        return int(os.environ.get("LOCAL_RANK", "0") or 0)


def short(value: Any, width: int = 60) -> str:
    """A one-line repr: modules and tensors by their type, the rest as repr."""
    if isinstance(value, tuple):
        return "(" + ", ".join(short(v, width // 2) for v in value) + ("," if len(value) == 1
                                                                      else "") + ")"
    if isinstance(value, torch.nn.Module | torch.Tensor) or callable(value):
        return f"<{type(value).__name__}>"
    text = " ".join(repr(value).split())
    return text if len(text) <= width else text[: width - 3] + "..."


class Spy:
    """Stands in for one public member on a strategy instance: notes each call (entered,
    returned or raised) in this rank's file and calls the class's method. Picklable (spawned
    workers get the strategy with its spies)."""

    def __init__(self, strategy: Any, member: str) -> None:
        self.strategy, self.member = strategy, member

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        strategy, member = self.strategy, self.member
        caller = traceback.extract_stack(limit=2)[0]  # who called the member
        rank = rank_of(strategy)
        note(rank, event="enter", call=member, args=short(args) if args else "",
             caller=f"{caller.filename}:{caller.lineno}")
        try:
            result = getattr(type(strategy), member)(strategy, *args, **kwargs)
        except BaseException as exc:
            note(rank_of(strategy), event="raise", call=member,
                 error=describe(exc, plugin_roots(strategy)),
                 where=locate(exc, plugin_roots(strategy)))
            raise
        extra: dict[str, Any] = {}
        if member == "setup_environment":  # did it leave a process group behind?
            extra["process_group"] = bool(torch.distributed.is_available()
                                          and torch.distributed.is_initialized())
            extra["world_size"] = strategy.world_size
        note(rank_of(strategy), event="return", call=member, result=short(result), **extra)
        return result


def spied(strategy: Any) -> Any:
    """``strategy`` with every member of :data:`SPIED` noted per call."""
    for member in SPIED:
        setattr(strategy, member, Spy(strategy, member))
    return strategy


def make_strategy(name: str) -> Any:
    entry = fulmen.get_plugin_manager().catalog().find("strategy", name)
    assert entry is not None, f"no active plugin registers the strategy {name!r}"
    return spied(entry.record.create())


class Noted(fulmen.Callback):
    """Notes the Trainer hooks each rank reaches (``setup`` runs after launching and joining)."""

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        note(trainer.global_rank, event="hook", hook="setup", phase="trainer")
        note(trainer.global_rank, phase="trainer", event="joined", rank=trainer.global_rank)

    def on_train_start(self, trainer: Any, module: Any) -> None:
        note(trainer.global_rank, event="hook", hook="on_train_start", phase="trainer")

    def on_train_batch_start(self, trainer: Any, module: Any, batch: Any, batch_idx: int
                             ) -> None:
        note(trainer.global_rank, event="hook", hook=f"on_train_batch_start({batch_idx})",
             phase="trainer")

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        note(trainer.global_rank, event="hook", hook=f"on_train_batch_end({batch_idx})",
             phase="trainer")

    def on_exception(self, trainer: Any, module: Any, exception: BaseException) -> None:
        strategy = trainer.strategy
        note(rank_of(strategy), event="error", phase="trainer",
             error=describe(exception, plugin_roots(strategy)),
             where=locate(exception, plugin_roots(strategy)))


def trainer_end(module: models.KitModule) -> None:
    """In every rank at the end of ``fit``: collectives, then a checkpoint saved and read back."""
    trainer = module.trainer
    strategy = trainer.strategy
    rank = strategy.global_rank
    note(rank, phase="trainer", event="trained", rank=rank, world_size=strategy.world_size,
         data_rank=strategy.data_parallel_rank, steps=module.steps, seen=module.seen,
         weights=models.flat(strategy.module_state_dict()))
    note(rank, event="phase", phase="trainer: collectives")
    note(rank, phase="trainer", event="collectives", problems=collective_problems(trainer))
    note(rank, event="phase", phase="trainer: checkpoint")
    path = Path(os.environ[FOLDER_VARIABLE]) / "fit.ckpt"  # KitModule saved it
    problem = ""
    try:
        strategy.barrier("fulmen-testing-saved")
        saved = service.load(strategy, path)
        weights = models.flat(strategy.module_state_dict())
        if not isinstance(saved, dict) or "state_dict" not in saved:
            problem = (f"fulmen.checkpoint.service.load returned {type(saved).__name__} "
                       "without 'state_dict'")
        # on every rank: gathering a sharded tensor (DTensor.full_tensor) is a collective
        elif not models.close(models.flat(saved["state_dict"]), weights) and rank == 0:
            # rank zero holds the full state (sharded strategies may gather it there only)
            problem = "the checkpoint's state_dict differs from module_state_dict()"
    except Exception as exc:
        problem = describe(exc, plugin_roots(strategy))
    note(rank, phase="trainer", event="checkpoint", problem=problem)
    note(rank, event="phase", phase="trainer: teardown")


def lite_run(lite: fulmen.Lite, folder: str) -> None:
    rank = lite.global_rank
    note(rank, phase="lite", event="started", rank=rank, world_size=lite.world_size)
    note(rank, event="phase", phase="lite: training loop")
    try:
        out = models.lite_train(lite, folder)
        note(rank, phase="lite", event="trained", rank=rank, world_size=lite.world_size,
             data_rank=lite.strategy.data_parallel_rank, steps=len(out["losses"]),
             seen=out["seen"], restored=models.close(out["restored"], out["weights"]),
             weights=out["full"])
        note(rank, event="phase", phase="lite: collectives")
        note(rank, phase="lite", event="collectives", problems=collective_problems(lite))
        note(rank, event="phase", phase="lite: no_backward_sync")
        note(rank, phase="lite", event="sync", **sync_problems(lite, out["mesh"]))
        note(rank, event="phase", phase="lite: done")
    except BaseException as exc:
        strategy = lite.strategy
        note(rank, event="error", phase="lite", error=describe(exc, plugin_roots(strategy)),
             where=locate(exc, plugin_roots(strategy)))
        raise


def main(name: str, accelerator: str, folder: str) -> None:
    rank = int(os.environ.get("LOCAL_RANK", "0") or 0)
    note(rank, event="phase", phase="trainer: composing Trainer(devices=2)")
    strategy = make_strategy(name)
    kind = type(strategy)
    own = [m for m in (*SPIED, "step", "no_backward_sync")
           if getattr(kind, m) is not getattr(fulmen.Strategy, m)]  # what the plugin overrides
    note(rank, event="members", defined={m: defined_at(getattr(kind, m)) for m in own})
    trainer = fulmen.Trainer(accelerator=accelerator, devices=2, strategy=strategy, max_steps=2,
                             callbacks=[Noted()], **trainer_args(Path(folder)))
    note(rank, event="phase", phase="trainer: fit (launching, process group, set-up, steps)")
    trainer.fit(models.KitModule(folder, "fit", at_train_end=trainer_end))
    note(rank_of(trainer.strategy), event="phase", phase="lite: composing Lite(devices=2)")
    lite = fulmen.Lite(accelerator=accelerator, devices=2, strategy=make_strategy(name))
    note(rank_of(lite.strategy), event="phase",
         phase="lite: launch (launching, process group)")
    lite.launch(lite_run, folder)
