"""The Trainer's answer to stop notices: ``fit`` starts the notice sources, the epoch loop polls
between two batches (:class:`fulmen.fault_tolerance.preemption.Preemption`: every rank after the
same one), and :meth:`FitPreemption.act` writes one checkpoint, ``hpc_ckpt_<n>.ckpt`` in
``default_root_dir``, before the Trainer exits with the scheduler's convention."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from fulmen import storage
from fulmen.fault_tolerance.lost_work import Ledger
from fulmen.fault_tolerance.preemption import Preempted, Preemption

if TYPE_CHECKING:
    from fulmen.trainer.host import TrainerHost

__all__ = ["FitPreemption", "Preempted", "hpc_checkpoints", "next_hpc_path", "restartable"]

HPC_CHECKPOINT = re.compile(r"^hpc_ckpt_(\d+)\.ckpt$")


def restartable(trainer: TrainerHost, requested: Any) -> bool:
    """Whether a fit keeps the heartbeat: a scheduler started its processes (torchrun, SLURM,
    Kubeflow...), it watches notices passed in ``plugins=[...]``, or it asked for
    ``ckpt_path="last"`` (the restart-safe line). Other local runs write nothing beside their
    checkpoints (a resume still reads a heartbeat it finds)."""
    return (trainer.cluster_environment.creates_processes_externally
            or bool(trainer.preemption_notices) or requested == "last")


class FitPreemption(Preemption):
    """One ``fit``'s stop notices and lost-work ledger, as a context manager around the loop."""

    def __init__(self, trainer: TrainerHost, requested: Any = None) -> None:
        """``requested``: the ``ckpt_path`` the user gave ``fit``."""
        super().__init__(trainer, Ledger(trainer, trainer.default_root_dir,
                                         restartable(trainer, requested)))
        self.trainer = trainer

    @property
    def active(self) -> bool:
        """Whether the fit loop polls: a source is configured (on every rank alike), or a
        resumed run has its lost work to report after the first step."""
        return bool(self.sources) or self.ledger.resume is not None

    def __enter__(self) -> FitPreemption:
        trainer = self.trainer
        self.ledger.start(trainer.run_state.restore, trainer.ckpt_path)
        self.start()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.finish()
        self.stop()
        if exc_type is None:  # a fit that ended before the heartbeat saw its first step
            self.ledger.report()

    def act(self, action: str) -> Preempted:
        """Write the preemption checkpoint and wait until it is committed (an asynchronous
        save included), then :meth:`conclude`: the exception that ends the run."""
        trainer = self.trainer
        started = time.monotonic()
        path = trainer.strategy.broadcast(
            next_hpc_path(trainer.default_root_dir) if trainer.is_global_zero
            else None)
        self.reason = "preemption"
        try:
            trainer.save_checkpoint(path)
            trainer.strategy.checkpoint_io.teardown()  # an asynchronous save: wait for it
            trainer.strategy.barrier("preemption-committed")
        finally:
            self.reason = "periodic"
        return self.conclude(action, path, time.monotonic() - started)

    def resume_hint(self, path: str) -> str:
        return f"resume with ckpt_path={path!r} or ckpt_path='last'"


def hpc_checkpoints(root: str) -> list[tuple[int, str]]:
    """Preemption checkpoints in ``root`` (``hpc_ckpt_<n>.ckpt``; a folder or a URL) with their
    numbers, oldest first."""
    return sorted((int(m.group(1)), storage.join(root, name)) for name in storage.listdir(root)
                  if (m := HPC_CHECKPOINT.match(name)))


def next_hpc_path(root: str) -> str:
    existing = hpc_checkpoints(root)
    return storage.join(root, f"hpc_ckpt_{existing[-1][0] + 1 if existing else 1}.ckpt")
