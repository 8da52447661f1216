"""Where the fit loop is, as counters: epochs, batches (of the current epoch) and optimizer
steps, each ``started`` and ``completed``. The fit loop is the only writer; checkpoints store
``state_dict()`` and resuming reads it back, so a run continues exactly where it stopped."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Counter:
    started: int = 0
    completed: int = 0


@dataclass
class FitProgress:
    """``epochs.completed`` is the number of finished epochs (the next epoch to run when
    ``epochs.started == epochs.completed``); ``batches`` count within the running epoch."""

    epochs: Counter = field(default_factory=Counter)
    batches: Counter = field(default_factory=Counter)
    steps: Counter = field(default_factory=Counter)
    #: The loggers' step axis: batches that ended an accumulation window (every batch under
    #: manual optimization), over every fit of the Trainer (Lightning's _batches_that_stepped).
    batches_that_stepped: int = 0
    #: 1 while a batch that ended a window is not yet counted in ``batches_that_stepped``
    #: (Lightning counts it after validation): a checkpoint taken then counts it.
    uncounted: int = field(default=0, repr=False)

    @property
    def in_epoch(self) -> bool:
        """An epoch was started and not finished (a mid-epoch checkpoint)."""
        return self.epochs.started > self.epochs.completed

    def start_epoch(self, epoch: int, batches_done: int = 0) -> None:
        self.epochs.started, self.epochs.completed = epoch + 1, epoch
        self.batches.started = self.batches.completed = batches_done

    def finish_epoch(self) -> None:
        self.epochs.completed = self.epochs.started

    def state_dict(self) -> dict[str, Any]:
        state = asdict(self)
        state["batches_that_stepped"] += state.pop("uncounted")
        return state

    @classmethod
    def from_state(cls, state: dict[str, Any], epoch: int) -> FitProgress:
        """Read counters (or, from a checkpoint written before counters, ``epoch`` plus the
        ``epoch_done``/``batches_done`` flags)."""
        if "epochs" in state:
            steps = Counter(**state["steps"])
            return cls(Counter(**state["epochs"]), Counter(**state["batches"]), steps,
                       state.get("batches_that_stepped", steps.completed))
        progress = cls()
        progress.batches_that_stepped = state.get("global_step", 0)
        done = state.get("batches_done", 0)
        if state.get("epoch_done", True):
            progress.epochs = Counter(epoch + 1, epoch + 1)
        else:
            progress.start_epoch(epoch, done)
        return progress


@dataclass
class RunState:
    """Where a Trainer's running stage is (``trainer.run_state``). The loops own it; the
    Trainer sets it up at each stage start and puts it back after a trial."""

    #: the fit loop's counters (checkpointed)
    progress: FitProgress = field(default_factory=FitProgress)
    #: what the fit loop checkpoints besides the counters (sampler seed, epoch random state)
    loop_state: dict[str, Any] = field(default_factory=dict)
    #: the checkpoint the running fit resumes from (its ``loops`` entry); None: from scratch
    restore: dict[str, Any] | None = None
    #: the preemption handler of the running fit (``fulmen.trainer.preemption.FitPreemption``)
    preemption: Any = None
    #: ``time.monotonic()`` when the running stage started (``max_time``)
    start_time: float = 0.0
    #: ``time.monotonic()`` when the last evaluation ended, or training started (validation
    #: every ``val_check_time_interval`` seconds)
    last_val_time: float = 0.0
    #: ``global_step`` when the current training batch began
    steps_before_batch: int = 0
    #: the dataloaders the running stage was given (None: from the module or datamodule)
    stage_loaders: dict[str, Any] = field(default_factory=dict)
    #: trials run in this stage (``Trainer.run_trial``); evaluation and predict set their data
    #: up again when it grew since they last did
    trials: int = 0
    #: ``trials`` when evaluation/predict last set their data up
    trials_seen: int = 0
    #: the running fit's dataloaders (``fulmen.trainer.fit_data.FitData``), once requested:
    #: by the fit loop, or earlier by ``trainer.estimated_stepping_batches``
    fit_data: Any = None
    #: the dataloaders each kind (``"train"``, ``"val"``, ``"test"``, ``"predict"``) last ran
    #: with, as the strategy prepared them (``trainer.train_dataloader``...)
    dataloaders: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def data_changed(self) -> bool:
        """A trial ran since evaluation/predict last set their data up."""
        return self.trials != self.trials_seen


def rescale(checkpoint: dict[str, Any], world_size: int, rank: int = 0) -> dict[str, Any]:
    """``checkpoint`` (a loaded one) with its position inside an interrupted epoch expressed for
    ``world_size`` data-parallel replicas instead of those that wrote it (its manifest's
    ``data_parallel_size``; its ``world_size`` for checkpoints that predate it).

    Each replica counts the batches it ran; ``n`` of them on ``W`` replicas consumed the first
    ``n * W`` batches of the epoch's (distributed-sampler) order, so on ``V`` replicas the epoch
    goes on after ``n * W // V`` batches per replica. When ``n * W`` is not a multiple of ``V``
    the few batches over the last whole round are run again (never skipped), with a log line
    (from rank 0; ``rank`` is this process's). Epoch-boundary checkpoints and those without
    a manifest are returned as they are."""
    from fulmen.checkpoint import manifest

    facts = checkpoint.get(manifest.KEY)
    saved = facts.get("data_parallel_size", facts.get("world_size")) \
        if isinstance(facts, dict) else None
    loops = checkpoint.get("loops")
    fit = loops.get("fit") if isinstance(loops, dict) else None
    if not isinstance(saved, int) or saved == world_size or saved < 1 or \
            not isinstance(fit, dict) or not isinstance(fit.get("progress"), dict):
        return checkpoint
    progress = fit["progress"]
    epochs, batches = progress.get("epochs", {}), progress.get("batches", {})
    if not epochs.get("started", 0) > epochs.get("completed", 0):
        return checkpoint  # not inside an epoch
    done = int(batches.get("completed", 0))
    if (saved == 1) != (world_size == 1) and rank == 0:
        import warnings

        warnings.warn(
            f"the checkpoint was taken inside an epoch ({done} batches) on {saved} data-parallel "
            f"process(es) and resumes on {world_size}: one process reads the training loader in "
            "its own order, several shard it with a seeded shuffling distributed sampler (as "
            "Lightning), so the rest of this epoch is not exactly the samples not yet seen. For "
            "an exact continuation, resume on one process from a one-process checkpoint and on "
            "several from a several-process one, or checkpoint at an epoch end", stacklevel=2)
    start, over = divmod(done * saved, world_size)
    if over and rank == 0:
        import logging

        logging.getLogger("fulmen").info(
            "the checkpoint was taken after %d batches of the epoch on each of %d processes; on "
            "%d processes each continues after %d batches, and %d batch(es) of the epoch run "
            "again", done, saved, world_size, start, over)
    progress["batches"] = {**batches, "started": start, "completed": start}
    fit["batches_done"] = start
    return checkpoint
