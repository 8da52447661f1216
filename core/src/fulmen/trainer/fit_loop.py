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

from fulmen.errors import ConfigurationError, FulmenError
from fulmen.seed import set_rng_states
from fulmen.status import configure_logging
from fulmen.trainer.batches import preserved_rng
from fulmen.trainer.epoch_loop import TrainingEpochLoop, minimum_reached, out_of_time
from fulmen.trainer.evaluation_loop import EvaluationLoop
from fulmen.trainer.finite import NonFiniteWatch
from fulmen.trainer.fit_data import FitData
from fulmen.trainer.progress import Counter, FitProgress
from fulmen.trainer.states import TrainerFn
from fulmen.trainer.step import AutomaticStep, ManualStep

if TYPE_CHECKING:
    from fulmen.trainer.loop_host import LoopHost


class FitLoop:
    """Epochs until ``max_epochs``/``max_steps``/``max_time`` or a stop, with the sanity check
    first and validation inside the epochs."""

    def __init__(self, trainer: LoopHost, validation: EvaluationLoop) -> None:
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
        _check_manual_flags(trainer)
        # The data is requested after on_fit_start (as in Lightning: a tuner may change the
        # batch size), the validation loaders first when a sanity check runs.
        run = trainer.run_state
        if trial or run.fit_data is None or run.trials:  # after a trial: its data may differ
            fit_data = FitData(trainer, self.validation, loaders)
        else:  # requested already (trainer.estimated_stepping_batches)
            fit_data = run.fit_data
        if not trial:
            run.fit_data = fit_data
        trainer.run_state.loop_state = {}
        # Lightning: no sanity check when resuming (it would disturb the restored state)
        if not trial and trainer.num_sanity_val_steps and fit_data.validates and not restore:
            self._sanity_check(fit_data)
        if fit_data.train_due:
            fit_data.setup_train()
        train, n_batches = fit_data.train, fit_data.n_batches
        _keep_sampler_seed(trainer, train, loop_state.get("sampler_seed"))
        if not n_batches or _limit_reached(trainer):
            # Lightning's FitLoop.skip: no training at all, so no on_train_start/on_train_end
            if not trial:
                hooks("on_fit_end")
            return
        if fit_data.epoch_validates() and not fit_data.val_loaded:
            trainer.validating = True  # Lightning requests them here too, before
            fit_data.val()  # on_train_start, in the validating stage
            trainer.training = True
        # Lightning creates the first epoch's iterator before on_train_start (FitLoop.setup_data):
        # its base seed comes from torch's generator, before whatever that hook draws
        if restore and not mid_epoch and "rng_states" in restore:
            set_rng_states(restore["rng_states"])  # (as Lightning: restored before the iterator)
        first = None if mid_epoch else self.epoch_loop.prepare(train)
        hooks("on_train_start")
        check_trainable = module.automatic_optimization
        self.epoch_loop.total = trainer.current_epoch * (
            int(n_batches) if n_batches != math.inf else 0)
        watch = NonFiniteWatch(trainer.strategy, stop=trainer.detect_anomaly)
        step = (AutomaticStep if module.automatic_optimization else ManualStep)(trainer, watch)
        while not (trainer.should_stop and minimum_reached(trainer)) and fit_data.n_batches:
            if _limit_reached(trainer):
                break
            if fit_data.train_due:  # reload_dataloaders_every_n_epochs
                fit_data.setup_train()
                _keep_sampler_seed(trainer, fit_data.train,
                                   trainer.run_state.loop_state.get("sampler_seed"))
                if not fit_data.n_batches:
                    break
            resume = loop_state if mid_epoch else None
            self.epoch_loop.run(fit_data, resume, restore.get("rng_states"), step,
                                check_trainable,
                                first if first is not None and first.loader is fit_data.train
                                else None)
            check_trainable, first = False, None
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

    def training_data(self) -> FitData:
        """The running fit's dataloaders, the training one requested now if it was not yet
        (``trainer.estimated_stepping_batches`` in ``configure_optimizers``)."""
        trainer = self.trainer
        run = trainer.run_state
        if trainer.state.fn != TrainerFn.FITTING or trainer.module is None:
            raise FulmenError("the training dataloader is known inside trainer.fit only (read "
                              "trainer.estimated_stepping_batches in configure_optimizers or a "
                              "hook of fit)")
        if run.fit_data is None:
            run.fit_data = FitData(trainer, self.validation, run.stage_loaders)
        if run.fit_data.train is None:
            run.fit_data.setup_train()
        return run.fit_data

    def _sanity_check(self, fit_data: FitData) -> None:
        """Lightning's sanity check: ``on_sanity_check_start``, the validation loaders
        requested, a few batches of each, ``on_sanity_check_end``; the random state as before."""
        trainer = self.trainer
        hooks = trainer.hooks
        assert hooks is not None
        n = trainer.num_sanity_val_steps
        stage = trainer.state.stage
        trainer.sanity_checking = True
        with preserved_rng():
            hooks("on_sanity_check_start")
            loaders, counts = fit_data.val(sanity=True)
            limits = [b if n == -1 else min(b, n) for b in counts]
            trainer.num_sanity_val_batches = limits
            if loaders and any(limits):
                self.validation.run("validate", loaders, limits, during_fit=True, sanity=True)
            hooks("on_sanity_check_end")
        trainer.state.stage = stage  # Lightning: back to the stage before the check


def _limit_reached(trainer: LoopHost) -> bool:
    """``max_epochs`` or ``max_steps`` is reached."""
    return (trainer.max_epochs != -1 and trainer.current_epoch >= trainer.max_epochs) or \
        0 <= trainer.max_steps <= trainer.global_step


def _check_manual_flags(trainer: LoopHost) -> None:
    module = trainer.module
    assert module is not None
    if not module.automatic_optimization:
        for flag, default in (("accumulate_grad_batches", 1), ("gradient_clip_val", None)):
            if getattr(trainer, flag) not in (default, 0):
                raise ConfigurationError(
                    f"Trainer({flag}=...) applies to automatic optimization; with "
                    "automatic_optimization=False do it in training_step "
                    "(self.clip_gradients, stepping every n)")


def _keep_sampler_seed(trainer: LoopHost, loader: Any, saved: int | None) -> None:
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
