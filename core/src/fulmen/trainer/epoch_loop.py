"""The training epoch loop: one epoch's batches, each run by the step
(:mod:`fulmen.trainer.step`), with what comes between them: the batch hooks, the step
schedulers, logging at the ``log_every_n_steps`` cadence, the preemption vote, validation
inside the epoch, and the stop conditions. :class:`TrainingEpochLoop` keeps the epoch's place
in the fit's counters (``trainer.run_state.progress``), so a checkpoint taken inside the epoch
resumes at the next batch.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fulmen.seed import rng_states, set_rng_states
from fulmen.trainer.batches import count_from, make_transfer, set_epoch
from fulmen.trainer.schedulers import check_scheduler_steps, step_schedulers
from fulmen.trainer.step import AutomaticStep, ManualStep
from fulmen.utilities.rank_zero import rank_zero_warn

if TYPE_CHECKING:
    from fulmen.trainer.evaluation_loop import EvaluationLoop
    from fulmen.trainer.fit_data import FitData
    from fulmen.trainer.loop_host import LoopHost


@dataclass
class PreparedEpoch:
    """An epoch's iterator made ahead of the epoch, with the random state it was made from."""

    loader: Any
    epoch_rng: Any
    iterator: Any


class TrainingEpochLoop:
    """Runs one training epoch (:meth:`run`); :attr:`total` counts the batches of every epoch
    of the fit (validation by batch count across epochs)."""

    def __init__(self, trainer: LoopHost, validation: EvaluationLoop) -> None:
        self.trainer, self.validation = trainer, validation
        self.total = 0

    def prepare(self, loader: Any) -> PreparedEpoch:
        """The iterator of the epoch ``trainer.current_epoch`` over ``loader``, made now (the
        fit's first epoch, before ``on_train_start``, as Lightning), with the random state it
        was made from (what a mid-epoch resume replays)."""
        set_epoch(loader, self.trainer.current_epoch)
        epoch_rng = rng_states()
        return PreparedEpoch(loader, epoch_rng, iter(loader))

    def run(self, fit_data: FitData, resume: dict[str, Any] | None, rng_at_save: Any,
            step: AutomaticStep | ManualStep, check_trainable: bool = False,
            prepared: PreparedEpoch | None = None) -> None:
        """Run the epoch ``trainer.current_epoch`` from its first batch, or (``resume``: the
        checkpoint's loop state) from the batch after the checkpoint's. ``prepared``: its
        iterator, made earlier by :meth:`prepare`."""
        loader, n_batches, val_every = fit_data.train, fit_data.n_batches, fit_data.val_every
        trainer = self.trainer
        module, hooks = trainer.module, trainer.hooks
        assert module is not None and hooks is not None
        results = trainer.metrics.new_results("train")
        trainer.metrics.train = trainer.metrics.current = results
        if resume is not None and "results" in resume:
            results.load_state_dict(resume["results"])
        set_epoch(loader, trainer.current_epoch)
        hooks("on_train_epoch_start")
        if check_trainable:
            _check_trainable(module)
        if prepared is not None:
            epoch_rng, iterator = prepared.epoch_rng, prepared.iterator
        else:
            epoch_rng = resume["epoch_rng"] if resume is not None else rng_states()
            if resume is not None:
                set_rng_states(epoch_rng)
            iterator = iter(loader)
        if n_batches == math.inf:  # unknown length: look one batch ahead to know the last one
            iterator = lookahead = Lookahead(iterator)
        else:
            lookahead = None
        progress = trainer.run_state.progress
        start = progress.batches.completed if resume is not None else 0
        if resume is not None:
            for _ in range(start):  # replay the sampler to where the checkpoint was taken
                next(iterator)
            set_rng_states(rng_at_save)
        progress.start_epoch(trainer.current_epoch, start)
        trainer.run_state.loop_state["epoch_rng"] = epoch_rng
        check_scheduler_steps(trainer)
        step.start_epoch(results)
        losses_before = step.losses

        transfer = make_transfer(trainer)
        automatic = module.automatic_optimization
        forward_only = automatic and trainer.skip_backward
        configs = trainer.lr_scheduler_configs
        # Lightning: step-interval plateau schedulers step after that batch's validation
        step_schedulers_due = any(c.interval == "step" and not c.needs_metric for c in configs)
        step_plateau = any(c.interval == "step" and c.needs_metric for c in configs)
        epoch_schedulers = any(c.interval == "epoch" and not c.needs_metric for c in configs)
        preemption = trainer.run_state.preemption
        preemption = preemption if preemption is not None and preemption.active else None
        has_start, has_end = hooks.has("on_train_batch_start"), hooks.has("on_train_batch_end")
        log_every, timed = trainer.log_every_n_steps, trainer.max_time is not None
        batches, run_state = progress.batches, trainer.run_state
        watch = step.watch
        batch_idx = start - 1
        exhausted = cut = False
        indices = range(start, int(n_batches)) if n_batches != math.inf else count_from(start)
        for batch_idx, batch in zip(indices, iterator):
            if transfer is not None:
                batch = transfer(batch, 0)
            results.batch = batch
            run_state.steps_before_batch = trainer.global_step
            last = batch_idx + 1 == n_batches if lookahead is None else lookahead.done
            if has_start and hooks("on_train_batch_start", batch, batch_idx) == -1:
                # Lightning: the batch ends the epoch, and the schedulers step as at a last one
                if not forward_only:
                    if step_schedulers_due:
                        step_schedulers(trainer, "step", plateau=False, index=batch_idx + 1)
                    if epoch_schedulers:
                        step_schedulers(trainer, "epoch", plateau=False)
                cut = True
                break
            batches.started += 1
            output, stepped = step.run(batch, batch_idx, last)
            if stepped and step_schedulers_due:
                step_schedulers(trainer, "step", plateau=False, index=batch_idx + 1)
            # Lightning: epoch schedulers step at the last batch, before its validation (not in
            # a forward-only epoch)
            if epoch_schedulers and last and not forward_only:
                step_schedulers(trainer, "epoch", plateau=False)
            batches.completed = batch_idx + 1
            ends_window = stepped or not automatic
            progress.uncounted = int(ends_window)
            if has_end:
                hooks("on_train_batch_end", output, batch, batch_idx)
            if ends_window and log_every and (
                    (progress.batches_that_stepped + 1) % log_every == 0 or trainer.should_stop):
                watch.check()  # the one host sync for non-finite losses, at the logging cadence
                if trainer.loggers:
                    trainer.metrics.log_step(results)
            if preemption is not None and ends_window and (action := preemption.poll()):
                raise preemption.act(action)  # between optimizer steps: nothing half-accumulated
            if val_every is not None and \
                    self._should_validate(batch_idx, n_batches, val_every, last):
                trainer.validating = True  # Lightning's stages around fit's validation
                module.on_validation_model_zero_grad()
                val_loaders, val_counts = fit_data.val()
                if val_loaders:
                    self.validation.run("validate", val_loaders, val_counts, during_fit=True)
                trainer.training = True
                trainer.metrics.current = results
            if stepped and step_plateau:
                step_schedulers(trainer, "step", plateau=True, index=batch_idx + 1)
            progress.batches_that_stepped += progress.uncounted
            progress.uncounted = 0
            self.total += 1
            if (0 <= trainer.max_steps <= trainer.global_step) or \
                    (timed and out_of_time(trainer)):
                trainer.should_stop = True
            if trainer.should_stop and minimum_reached(trainer):
                break
        else:  # no break: the batches ran out, or the loader did before them
            exhausted = batch_idx + 1 < n_batches
        ran_batches = batches.completed - start
        if automatic and ran_batches and step.losses == losses_before and not forward_only:
            warnings.warn(f"training_step returned None for every batch of epoch "
                          f"{trainer.current_epoch} ({ran_batches} batches): nothing was "
                          "trained. Return the loss (a tensor, or a dict with 'loss'); None "
                          "skips a batch", stacklevel=3)
        watch.check()
        # Lightning: epoch-interval plateau schedulers step only after a complete epoch
        self._end(results, complete=exhausted or cut or batches.completed >= n_batches)

    def _should_validate(self, batch_idx: int, n_batches: int | float,
                         every: int | float, last: bool) -> bool:
        """Lightning's ``_should_check_val_fx``."""
        trainer = self.trainer
        if trainer.check_val_every_n_epoch is not None and \
                (trainer.current_epoch + 1) % trainer.check_val_every_n_epoch:
            return False
        if last and n_batches == math.inf:
            return True  # the end of a loader of unknown length
        if trainer.should_stop and minimum_reached(trainer):
            return True  # a stop asked for mid-epoch validates at that batch
        if trainer.val_check_time_interval is not None:
            return time.monotonic() - trainer.run_state.last_val_time >= \
                trainer.val_check_time_interval
        if trainer.check_val_every_n_epoch is None:
            return (self.total + 1) % every == 0
        return (batch_idx + 1) % every == 0 if every < n_batches else last

    def _end(self, results: Any, complete: bool) -> None:
        trainer = self.trainer
        hooks = trainer.hooks
        assert hooks is not None
        progress = trainer.run_state.progress
        progress.batches_that_stepped -= 1  # Lightning: epoch values at the last batch's step
        trainer.metrics.finish(results)  # what training_step logged per epoch
        hooks.before_monitors("on_train_epoch_end")
        trainer.metrics.finish(results)  # what on_train_epoch_end logged
        progress.batches_that_stepped += 1
        progress.finish_epoch()
        hooks.monitors("on_train_epoch_end")
        # Lightning: epoch-interval plateau schedulers step after the monitoring callbacks'
        # on_train_epoch_end (a checkpoint saved there holds them unstepped), and only after a
        # complete epoch
        if complete:
            step_schedulers(trainer, "epoch", plateau=True)
        trainer.metrics.current = None


class Lookahead:
    """An iterator that fetches one item ahead, so :attr:`done` says whether the item just
    returned was the last (Lightning's prefetching data fetcher), for loaders of unknown
    length."""

    _END = object()

    def __init__(self, iterator: Any) -> None:
        self.iterator = iterator
        self.done = False
        self._next = next(iterator, self._END)

    def __iter__(self) -> Lookahead:
        return self

    def __next__(self) -> Any:
        item = self._next
        if item is self._END:
            raise StopIteration
        self._next = next(self.iterator, self._END)
        self.done = self._next is self._END
        return item


def _check_trainable(module: Any) -> None:
    """Warn, before the first step, of a module with nothing to train (Lightning runs it: a
    loss that needs a graph then fails in backward). Checked after the first
    ``on_train_epoch_start``, where fine-tuning callbacks unfreeze what they train."""
    if not any(p.requires_grad for p in module.parameters()):
        rank_zero_warn(
            f"{type(module).__name__} has no trainable parameters (none, or all with "
            "requires_grad=False): fit will change nothing. Unfreeze some (by "
            "on_train_epoch_start of the first epoch), or use trainer.validate/test/predict",
            category=RuntimeWarning)


def out_of_time(trainer: LoopHost) -> bool:
    """``max_time`` has passed since the stage started."""
    return trainer.max_time is not None and (
        time.monotonic() - trainer.run_state.start_time >= trainer.max_time)


def minimum_reached(trainer: LoopHost, epochs_done: int | None = None) -> bool:
    """Whether ``min_epochs`` and ``min_steps`` are met, ``epochs_done`` (default: the epochs
    completed before the running one) counting as trained (Lightning's ``_can_stop_early``)."""
    done = trainer.current_epoch if epochs_done is None else epochs_done
    return done >= trainer.min_epochs and trainer.global_step >= trainer.min_steps
