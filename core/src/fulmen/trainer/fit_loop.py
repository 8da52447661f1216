"""The fit loop: ``trainer.fit`` → :meth:`FitLoop.run` → one
:class:`~fulmen.trainer.epoch_loop.TrainingEpochLoop` run per epoch → one
:class:`~fulmen.trainer.step.AutomaticStep` or :class:`~fulmen.trainer.step.ManualStep` run per
batch. It owns the fit's counters (``trainer.run_state.progress``: epochs, batches, steps) and
what exact resume needs besides them (the sampler seed, the epoch's random state, the epoch's
logged values): :meth:`state_dict` for a checkpoint, the checkpoint's ``loops.fit`` read back at
the start of :meth:`run`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from fulmen.errors import ConfigurationError
from fulmen.seed import set_rng_states
from fulmen.status import configure_logging
from fulmen.trainer import data
from fulmen.trainer.batches import preserved_rng
from fulmen.trainer.epoch_loop import TrainingEpochLoop, minimum_reached, out_of_time
from fulmen.trainer.evaluation_loop import EvaluationLoop
from fulmen.trainer.finite import NonFiniteWatch
from fulmen.trainer.progress import Counter, FitProgress
from fulmen.trainer.step import AutomaticStep, ManualStep

if TYPE_CHECKING:
    from fulmen.trainer.trainer import Trainer


class FitLoop:
    """Epochs until ``max_epochs``/``max_steps``/``max_time`` or a stop, with the sanity check
    first and validation inside the epochs."""

    def __init__(self, trainer: Trainer, validation: EvaluationLoop) -> None:
        self.trainer, self.validation = trainer, validation
        self.epoch_loop = TrainingEpochLoop(trainer, validation)

    @property
    def progress(self) -> FitProgress:
        """The fit's counters (epochs, batches of the running epoch, optimizer steps)."""
        return self.trainer.run_state.progress

    def state_dict(self) -> dict[str, Any]:
        """Where the fit loop is, for a checkpoint (mid-epoch resume included)."""
        trainer = self.trainer
        progress = self.progress
        progress.steps.started = progress.steps.completed = trainer.global_step
        state = {**trainer.run_state.loop_state, "progress": progress.state_dict(),
                 # derived from the counters, for readers of older checkpoints
                 "epoch_done": not progress.in_epoch,
                 "batches_done": progress.batches.completed}
        if trainer.metrics.train is not None:
            state["results"] = trainer.metrics.train.state_dict()
        return state

    def run(self, loaders: dict[str, Any], trial: bool = False) -> None:
        """Fit. ``trial``: a tuner's trial run inside a fit (``fulmen.tuner.trial``): no
        ``on_fit_start``/``on_fit_end`` and no sanity check."""
        trainer = self.trainer
        module, hooks = trainer.module, trainer.hooks
        assert module is not None and hooks is not None
        restore = trainer.run_state.restore or {}
        loop_state = restore.get("loops", {}).get("fit", {})
        if restore:
            progress = FitProgress.from_state(loop_state.get("progress", loop_state),
                                              restore["epoch"])
            trainer.current_epoch = progress.epochs.completed
        else:
            progress = FitProgress(batches_that_stepped=self.progress.batches_that_stepped)
            progress.epochs = Counter(trainer.current_epoch, trainer.current_epoch)
        progress.steps = Counter(trainer.global_step, trainer.global_step)
        trainer.run_state.progress = progress
        mid_epoch = restore and progress.in_epoch
        module.train()
        if not trial:
            hooks("on_fit_start")
        # The data is set up after on_fit_start (as Lightning): a tuner may change the batch
        # size.
        train, n_batches, val, val_every = self._data(loaders)
        trainer.run_state.loop_state = {}
        _keep_sampler_seed(trainer, train, loop_state.get("sampler_seed"))
        if not trial and trainer.num_sanity_val_steps and val[0] and n_batches:
            self._sanity_check(val)
        hooks("on_train_start")
        check_trainable = module.automatic_optimization
        self.epoch_loop.total = trainer.current_epoch * (
            int(n_batches) if n_batches != math.inf else 0)
        watch = NonFiniteWatch(trainer.strategy, stop=trainer.detect_anomaly)
        step = (AutomaticStep if module.automatic_optimization else ManualStep)(trainer, watch)
        while not (trainer.should_stop and minimum_reached(trainer)) and n_batches:
            if trainer.max_epochs != -1 and trainer.current_epoch >= trainer.max_epochs:
                break
            if 0 <= trainer.max_steps <= trainer.global_step:
                break
            resume = loop_state if mid_epoch else None
            if restore and not mid_epoch and "rng_states" in restore:
                set_rng_states(restore["rng_states"])
            self.epoch_loop.run(train, n_batches, val, val_every, resume,
                                restore.get("rng_states"), step, check_trainable)
            check_trainable = False
            restore, loop_state, mid_epoch = {}, {}, False
            if trainer.should_stop and not minimum_reached(trainer, trainer.current_epoch + 1):
                # min_epochs/min_steps win over early stopping; should_stop stays set, so
                # training stops at the first batch where they are met (Lightning's semantics)
                configure_logging().info(
                    "Trainer was signaled to stop but the required `min_epochs=%s` or "
                    "`min_steps=%s` has not been met. Training will continue...",
                    trainer.min_epochs, trainer.min_steps)
            if out_of_time(trainer):
                trainer.should_stop = True
            trainer.current_epoch += 1
        hooks("on_train_end")
        if not trial:
            hooks("on_fit_end")

    def _data(self, loaders: dict[str, Any]) -> tuple[Any, int | float, Any, int | float | None]:
        """The training loader, its batch count, the validation loaders and the validation
        interval, checked."""
        trainer = self.trainer
        module, strategy = trainer.module, trainer.strategy
        assert module is not None
        train_loaders = data.resolve(loaders["train"], trainer.datamodule, module, "train")
        if not train_loaders:
            raise ConfigurationError("trainer.fit found no training data: pass "
                                     "train_dataloaders=, a datamodule with train_dataloader(), "
                                     "or define train_dataloader() on the module")
        if len(train_loaders) > 1:
            raise ConfigurationError(f"trainer.fit got {len(train_loaders)} training "
                                     "dataloaders; combine them into one (e.g. a ConcatDataset)")
        first = train_loaders[0]
        if trainer.overfit_batches:
            first = data.without_shuffle(first)
        train = strategy.process_dataloader(first, "train", trainer.use_distributed_sampler)
        data.seed_workers(train, trainer.global_rank)
        n_batches = data.num_batches(train, trainer.limit_train_batches, "train")
        trainer.num_training_batches = n_batches
        if n_batches == 0 and trainer.limit_train_batches != 0:
            raise ConfigurationError("the training dataloader is empty (0 batches): check the "
                                     "dataset length, batch_size and drop_last")
        val = self.validation.loaders("val", loaders.get("val"), during_fit=True)
        val_every = _val_interval(trainer, n_batches) if val[0] else None
        if not module.automatic_optimization:
            for flag, default in (("accumulate_grad_batches", 1), ("gradient_clip_val", None)):
                if getattr(trainer, flag) not in (default, 0):
                    raise ConfigurationError(
                        f"Trainer({flag}=...) applies to automatic optimization; with "
                        "automatic_optimization=False do it in training_step "
                        "(self.clip_gradients, stepping every n)")
        return train, n_batches, val, val_every

    def _sanity_check(self, val: Any) -> None:
        trainer = self.trainer
        hooks = trainer.hooks
        assert hooks is not None
        n = trainer.num_sanity_val_steps
        limits = [b if n == -1 else min(b, n) for b in val[1]]
        trainer.num_sanity_val_batches = limits
        trainer.sanity_checking = True
        hooks("on_sanity_check_start")
        with preserved_rng():
            self.validation.run("validate", val[0], limits, during_fit=True, sanity=True)
        hooks("on_sanity_check_end")
        trainer.sanity_checking = False


def _keep_sampler_seed(trainer: Trainer, loader: Any, saved: int | None) -> None:
    """A distributed sampler shuffles with its ``seed`` (the global seed when the run started):
    a resumed run takes the checkpoint's, so it draws the same order whatever it was seeded
    with; checkpoints record it."""
    from torch.utils.data import DistributedSampler

    sampler = getattr(loader, "sampler", None)
    if not isinstance(sampler, DistributedSampler):
        return
    if saved is not None:
        sampler.seed = saved
    trainer.run_state.loop_state["sampler_seed"] = sampler.seed


def _val_interval(trainer: Trainer, n_batches: int | float) -> int | float:
    interval = trainer.val_check_interval
    if interval is None or (isinstance(interval, float) and interval == 1.0):
        return n_batches  # 1.0: the whole epoch; the int 1 means every batch (Lightning)
    if isinstance(interval, float):
        if n_batches == math.inf:
            raise ConfigurationError(f"val_check_interval={interval} is a fraction of the "
                                     "epoch, but the training dataloader has no length; give a "
                                     "number of batches")
        return max(1, int(n_batches * interval))
    if interval > n_batches and trainer.check_val_every_n_epoch is not None:
        raise ConfigurationError(
            f"val_check_interval={interval} is larger than the epoch ({n_batches} training "
            "batches). Use a value <= the number of batches, a fraction like 0.5, or "
            "check_val_every_n_epoch=None to count batches across epochs")
    return interval
