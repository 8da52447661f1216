"""The fit, evaluation and predict loops, written only against the Strategy base class.

Hot-path rules: no hook call for hooks nobody overrides, no ``.item()`` or device sync the user
did not ask for, no dict rebuilt per step. As in Lightning, only the sanity check runs with the
random state saved and restored; validation inside fit draws from the same generators as training
(a validation DataLoader's ``iter()`` takes a seed from torch's), so same-seed runs give
Lightning's numbers.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import time
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch

from fulmen import compiling
from fulmen.api.precision import Precision
from fulmen.direct import closure_first, direct_backward, direct_optimizer_step, direct_step
from fulmen.errors import ConfigurationError
from fulmen.module import Module
from fulmen.seed import rng_states, set_rng_states
from fulmen.status import configure_logging
from fulmen.trainer import data
from fulmen.trainer.finite import NonFiniteWatch, loss_of_output
from fulmen.trainer.progress import Counter, FitProgress

if TYPE_CHECKING:
    from fulmen.trainer.trainer import Trainer

#: The Trainer flags a trial (``Trainer.run_trial``) changes, per stage (the first one is the
#: stage's batch limit).
STAGE_LIMITS = {
    "fit": ("max_steps", "max_time", "min_steps", "min_epochs", "limit_val_batches"),
    "validate": ("limit_val_batches",),
    "test": ("limit_test_batches",),
    "predict": ("limit_predict_batches",),
}

_TRANSFER_HOOKS = ("on_before_batch_transfer", "transfer_batch_to_device",
                   "on_after_batch_transfer")


@contextlib.contextmanager
def preserved_rng() -> Iterator[None]:
    state = rng_states()
    try:
        yield
    finally:
        set_rng_states(state)


def make_transfer(trainer: Trainer) -> Callable[[Any, int], Any] | None:
    """The batch-transfer function, or None when batches need nothing (CPU, no hooks).

    Each of the three transfer hooks comes from the DataModule when it overrides it, else
    from the module (Lightning's rule)."""
    from fulmen.datamodule import DataModule

    module, strategy, datamodule = trainer.module, trainer.strategy, trainer.datamodule
    assert module is not None
    owners: list[Any] = []
    for name in _TRANSFER_HOOKS:
        dm_over = datamodule is not None and \
            getattr(type(datamodule), name) is not getattr(DataModule, name)
        if dm_over and getattr(type(module), name) is not getattr(Module, name):
            warnings.warn(f"{name} is overridden in both the module and the DataModule; the "
                          "DataModule's is used", stacklevel=3)
        owners.append(datamodule if dm_over else module)
    hooks = any(getattr(type(module), h) is not getattr(Module, h) for h in _TRANSFER_HOOKS) \
        or any(o is datamodule for o in owners)
    precision = strategy.precision
    converts = type(precision).convert_input is not Precision.convert_input
    device = strategy.root_device
    if not hooks and not converts and device.type == "cpu":
        return None
    before, move, after = (getattr(o, n) for o, n in zip(owners, _TRANSFER_HOOKS))

    def transfer(batch: Any, dataloader_idx: int = 0) -> Any:
        batch = before(batch, dataloader_idx)
        batch = move(batch, device, dataloader_idx)
        batch = after(batch, dataloader_idx)
        return precision.convert_input(batch)

    return transfer


def _set_epoch(loader: Any, epoch: int) -> None:
    for holder in (loader, getattr(loader, "sampler", None),
                   getattr(getattr(loader, "batch_sampler", None), "sampler", None)):
        if holder is not None and callable(getattr(holder, "set_epoch", None)):
            holder.set_epoch(epoch)


def _loss_of(output: Any) -> torch.Tensor | None:
    loss = output.get("loss") if isinstance(output, dict) else output
    if isinstance(output, dict) and "loss" not in output:
        raise ConfigurationError(f"training_step returned a dict without 'loss' (keys: "
                                 f"{sorted(output)}); put the loss under 'loss'")
    if loss is None or type(loss) is torch.Tensor or isinstance(loss, torch.Tensor):
        if loss is not None and loss.numel() != 1:
            raise ConfigurationError(f"training_step returned a loss of shape "
                                     f"{tuple(loss.shape)}; the loss must be a scalar (reduce "
                                     "it, e.g. .mean())")
        if loss is not None and (not loss.requires_grad or loss.grad_fn is None):
            what = "does not require grad" if not loss.requires_grad else "has no grad_fn (a " \
                "leaf tensor, not computed from the model's parameters)"
            raise ConfigurationError(f"training_step returned a loss that {what}: was it "
                                     "detached, rebuilt with torch.tensor(), or computed under "
                                     "torch.no_grad()?")
        return loss
    raise ConfigurationError(f"training_step returned a {type(loss).__name__}; return the loss "
                             "tensor, a dict with 'loss', or None to skip the batch")


# ====================================================================== fit


def fit_state(trainer: Trainer) -> dict[str, Any]:
    """Where the fit loop is, for a checkpoint (mid-epoch resume included)."""
    progress = trainer.run_state.progress
    progress.steps.started = progress.steps.completed = trainer.global_step
    state = {**trainer.run_state.loop_state, "progress": progress.state_dict(),
             # derived from the counters, for readers of older checkpoints
             "epoch_done": not progress.in_epoch, "batches_done": progress.batches.completed}
    if trainer.metrics.train is not None:
        state["results"] = trainer.metrics.train.state_dict()
    return state


def fit(trainer: Trainer, loaders: dict[str, Any], trial: bool = False) -> None:
    """The fit loop. ``trial``: a tuner's trial run inside a fit (``Trainer.run_trial``): no
    ``on_fit_start``/``on_fit_end`` and no sanity check."""
    module, hooks = trainer.module, trainer.hooks
    assert module is not None and hooks is not None
    restore = trainer.run_state.restore or {}
    loop_state = restore.get("loops", {}).get("fit", {})
    if restore:
        progress = FitProgress.from_state(loop_state.get("progress", loop_state),
                                          restore["epoch"])
        trainer.current_epoch = progress.epochs.completed
    else:
        progress = FitProgress(batches_that_stepped=trainer.run_state.progress.batches_that_stepped)
        progress.epochs = Counter(trainer.current_epoch, trainer.current_epoch)
    progress.steps = Counter(trainer.global_step, trainer.global_step)
    trainer.run_state.progress = progress
    mid_epoch = restore and progress.in_epoch
    module.train()
    if not trial:
        hooks("on_fit_start")
    # The data is set up after on_fit_start (as Lightning): a tuner may change the batch size.
    train, n_batches, val, val_every = _fit_data(trainer, loaders)
    trainer.run_state.loop_state = {}
    _keep_sampler_seed(trainer, train, loop_state.get("sampler_seed"))
    if not trial and trainer.num_sanity_val_steps and val[0] and n_batches:
        _sanity_check(trainer, val)
    hooks("on_train_start")
    check_trainable = module.automatic_optimization
    total = trainer.current_epoch * (int(n_batches) if n_batches != math.inf else 0)
    watch = NonFiniteWatch(trainer.strategy, stop=trainer.detect_anomaly)
    while not (trainer.should_stop and _minimum_reached(trainer)) and n_batches:
        if trainer.max_epochs != -1 and trainer.current_epoch >= trainer.max_epochs:
            break
        if 0 <= trainer.max_steps <= trainer.global_step:
            break
        resume = loop_state if mid_epoch else None
        if restore and not mid_epoch and "rng_states" in restore:
            set_rng_states(restore["rng_states"])
        total = _train_epoch(trainer, train, n_batches, val, val_every, total, resume,
                             restore.get("rng_states"), watch, check_trainable)
        check_trainable = False
        restore, loop_state, mid_epoch = {}, {}, False
        if trainer.should_stop and not _minimum_reached(trainer, trainer.current_epoch + 1):
            # min_epochs/min_steps win over early stopping; should_stop stays set, so training
            # stops at the first batch where they are met (Lightning's semantics)
            configure_logging().info(
                "Trainer was signaled to stop but the required `min_epochs=%s` or `min_steps=%s` "
                "has not been met. Training will continue...", trainer.min_epochs,
                trainer.min_steps)
        if _out_of_time(trainer):
            trainer.should_stop = True
        trainer.current_epoch += 1
    hooks("on_train_end")
    if not trial:
        hooks("on_fit_end")


def _fit_data(trainer: Trainer, loaders: dict[str, Any]
              ) -> tuple[Any, int | float, Any, int | float | None]:
    """The training loader, its batch count, the validation loaders and the validation
    interval, checked."""
    module, strategy = trainer.module, trainer.strategy
    assert module is not None
    train_loaders = data.resolve(loaders["train"], trainer.datamodule, module, "train")
    if not train_loaders:
        raise ConfigurationError("trainer.fit found no training data: pass train_dataloaders=, "
                                 "a datamodule with train_dataloader(), or define "
                                 "train_dataloader() on the module")
    if len(train_loaders) > 1:
        raise ConfigurationError(f"trainer.fit got {len(train_loaders)} training dataloaders; "
                                 "combine them into one (e.g. a ConcatDataset)")
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
    val = _eval_loaders(trainer, "val", loaders.get("val"), during_fit=True)
    val_every = _val_interval(trainer, n_batches) if val[0] else None
    if not module.automatic_optimization:
        for flag, default in (("accumulate_grad_batches", 1), ("gradient_clip_val", None)):
            if getattr(trainer, flag) not in (default, 0):
                raise ConfigurationError(f"Trainer({flag}=...) applies to automatic optimization;"
                                         " with automatic_optimization=False do it in "
                                         "training_step (self.clip_gradients, stepping every n)")
    return train, n_batches, val, val_every


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
            raise ConfigurationError(f"val_check_interval={interval} is a fraction of the epoch, "
                                     "but the training dataloader has no length; give a number "
                                     "of batches")
        return max(1, int(n_batches * interval))
    if interval > n_batches and trainer.check_val_every_n_epoch is not None:
        raise ConfigurationError(
            f"val_check_interval={interval} is larger than the epoch ({n_batches} training "
            "batches). Use a value <= the number of batches, a fraction like 0.5, or "
            "check_val_every_n_epoch=None to count batches across epochs")
    return interval


def _should_validate(trainer: Trainer, batch_idx: int, total: int, n_batches: int | float,
                     every: int | float) -> bool:
    if trainer.check_val_every_n_epoch is None:
        return (total + 1) % every == 0
    if (trainer.current_epoch + 1) % trainer.check_val_every_n_epoch:
        return False
    done = batch_idx + 1
    return done % every == 0 if every < n_batches else done == n_batches


def _check_trainable(module: Module) -> None:
    """Refuse, before the first step, a module with nothing to train. Checked after the first
    ``on_train_epoch_start``, where fine-tuning callbacks unfreeze what they train."""
    if not any(p.requires_grad for p in module.parameters()):
        raise ConfigurationError(
            f"{type(module).__name__} has no trainable parameters (none, or all with "
            "requires_grad=False): fit would change nothing. Unfreeze some (by "
            "on_train_epoch_start of the first epoch), or use trainer.validate/test/predict")


def _train_epoch(trainer: Trainer, loader: Any, n_batches: int | float, val: Any,
                 val_every: int | float | None, total: int, resume: dict[str, Any] | None,
                 rng_at_save: Any, watch: NonFiniteWatch,
                 check_trainable: bool = False) -> int:
    module, strategy, hooks = trainer.module, trainer.strategy, trainer.hooks
    assert module is not None and hooks is not None
    results = trainer.metrics.new_results("train")
    trainer.metrics.train = trainer.metrics.current = results
    if resume is not None and "results" in resume:
        results.load_state_dict(resume["results"])
    _set_epoch(loader, trainer.current_epoch)
    hooks("on_train_epoch_start")
    if check_trainable:
        _check_trainable(module)

    epoch_rng = resume["epoch_rng"] if resume is not None else rng_states()
    if resume is not None:
        set_rng_states(epoch_rng)
    iterator = iter(loader)
    progress = trainer.run_state.progress
    start = progress.batches.completed if resume is not None else 0
    if resume is not None:
        for _ in range(start):  # replay the sampler to where the checkpoint was taken
            next(iterator)
        set_rng_states(rng_at_save)
    progress.start_epoch(trainer.current_epoch, start)
    trainer.run_state.loop_state["epoch_rng"] = epoch_rng
    batches = progress.batches

    transfer = make_transfer(trainer)
    automatic = module.automatic_optimization
    optimizer: Any = trainer.optimizers[0] if automatic and trainer.optimizers else None
    accumulate = trainer.accumulate_grad_batches
    forward_only = automatic and trainer.skip_backward
    # the module's own training_step when the strategy and precision add nothing around it
    direct = direct_step(strategy, "training_step") if hooks.profiler is None else None
    training_step = compiling.time_first_call(
        direct or functools.partial(profiled_step(hooks.profiler, strategy.step), "training_step"),
        trainer.compile_options is not None, "training_step")
    training_step = _batch_idx_as_taken(training_step, module.training_step, named=False)
    has_start, has_end = hooks.has("on_train_batch_start"), hooks.has("on_train_batch_end")
    backward_hooks = any(hooks.has(h) for h in ("on_before_backward", "on_after_backward",
                                               "on_before_zero_grad")) or \
        _overridden(module, "backward")
    after = trainer.optimization.after_closure_for(optimizer)
    own_step = _overridden(module, "optimizer_step")
    own_zero = _overridden(module, "optimizer_zero_grad")
    user_optimizer = trainer.optimization.for_user(True)[0] if own_step else None
    epoch = trainer.current_epoch
    ran = False
    losses = 0
    _check_scheduler_steps(trainer)
    # Lightning: step-interval plateau schedulers step after that batch's validation
    step_schedulers = any(c.interval == "step" and not c.needs_metric
                          for c in trainer.lr_scheduler_configs)
    step_plateau = any(c.interval == "step" and c.needs_metric
                       for c in trainer.lr_scheduler_configs)
    epoch_schedulers = any(c.interval == "epoch" and not c.needs_metric
                           for c in trainer.lr_scheduler_configs)
    loggers = bool(trainer.loggers)
    log_every = trainer.log_every_n_steps
    timed = trainer.max_time is not None
    preemption = trainer.run_state.preemption
    preemption = preemption if preemption is not None and preemption.active else None
    output: Any = None
    batch: Any = None
    batch_idx = start - 1
    first = True
    exhausted = False
    backward = direct_backward(strategy)
    optimizer_step = direct_optimizer_step(strategy)
    # the closure, then optimizer.step(), when that is what optimizer.step(closure) would do
    unwrapped = automatic and optimizer is not None and not own_step and \
        hooks.profiler is None and closure_first(strategy, optimizer)

    def closure() -> Any:
        """This batch's training_step, zero_grad and backward (what ``optimizer.step`` calls)."""
        nonlocal output, ran, losses
        ran = True
        results.hook = "training_step"
        output = training_step(batch, batch_idx)
        # the usual return, a scalar with a graph, needs no more checking
        loss = output if type(output) is torch.Tensor and not output.is_leaf and \
            output.numel() == 1 else _loss_of(output)
        if first:
            if backward_hooks:
                hooks("on_before_zero_grad", optimizer)
            if own_zero:
                module.optimizer_zero_grad(epoch, batch_idx, optimizer)
            else:
                optimizer.zero_grad(set_to_none=True)
        if loss is None:  # skip: no backward, and the zeroed gradients move nothing
            return None
        losses += 1
        watch.record(loss, epoch, trainer.global_step, batch_idx)
        if accumulate > 1:
            loss = loss / accumulate
        if backward_hooks:
            trainer.optimization.backward(loss)
        else:
            backward(loss)
        return loss

    indices = range(start, int(n_batches)) if n_batches != math.inf else _count(start)
    # nothing but the step between batches: the loop without the checks for what is not there
    plain = unwrapped and accumulate == 1 and after is None and transfer is None and \
        preemption is None and val_every is None and not (
            forward_only or backward_hooks or own_zero or has_start or has_end or timed or
            step_schedulers or step_plateau or epoch_schedulers)
    if plain:
        batch_idx, total, losses, ran_out = _plain_batches(
            trainer, zip(indices, iterator), results, training_step, optimizer, backward,
            watch, start, total)
        exhausted = ran_out and batch_idx + 1 < n_batches
    else:
        for batch_idx, batch in zip(indices, iterator):
            if transfer is not None:
                batch = transfer(batch, 0)
            results.batch = batch
            trainer.run_state.steps_before_batch = trainer.global_step
            if has_start and hooks("on_train_batch_start", batch, batch_idx) == -1:
                break
            batches.started += 1
            stepped = False
            if forward_only:  # e.g. SWA's batch-norm epoch: statistics only, nothing optimized
                results.hook = "training_step"
                with torch.no_grad():
                    output = training_step(batch, batch_idx)
            elif automatic:
                if accumulate == 1:
                    first = last = True
                else:
                    first = batch_idx % accumulate == 0
                    last = (batch_idx + 1) % accumulate == 0 or batch_idx + 1 == n_batches
                ran = False
                if last:
                    if own_step:
                        module.optimizer_step(epoch, batch_idx, user_optimizer, closure)
                    elif unwrapped:
                        closure()
                        if after is not None:
                            after()
                        optimizer.step()
                        trainer.global_step += 1
                    else:
                        optimizer_step(optimizer, closure, after)
                        trainer.global_step += 1
                    stepped = True
                    if not ran:
                        _closure_not_run(own_step)
                else:
                    with strategy.no_backward_sync():
                        closure()
            else:
                before = trainer.global_step
                results.hook = "training_step"
                output = training_step(batch, batch_idx)
                stepped = trainer.global_step != before
                if (manual_loss := loss_of_output(output)) is not None:
                    watch.record(manual_loss, epoch, before, batch_idx)
            if stepped and step_schedulers:
                _step_schedulers(trainer, "step", plateau=False)
            # Lightning: epoch schedulers step at the last batch (not in a forward-only epoch)
            if epoch_schedulers and batch_idx + 1 == n_batches and not forward_only:
                _step_schedulers(trainer, "epoch", plateau=False)
            batches.completed = batch_idx + 1
            ends_window = stepped or not automatic
            progress.uncounted = int(ends_window)
            if has_end:
                hooks("on_train_batch_end", output, batch, batch_idx)
            if ends_window and ((progress.batches_that_stepped + 1) % log_every == 0
                                or trainer.should_stop):
                watch.check()  # the one host sync for non-finite losses, at the logging cadence
                if loggers:
                    trainer.metrics.log_step(results)
            if preemption is not None and (stepped or not automatic) and (
                    action := preemption.poll()):
                raise preemption.act(action)  # between optimizer steps: nothing half-accumulated
            if val_every is not None and _should_validate(trainer, batch_idx, total, n_batches,
                                                          val_every):
                module.on_validation_model_zero_grad()
                evaluate(trainer, "validate", val[0], val[1], during_fit=True)
                trainer.metrics.current = results
            if stepped and step_plateau:
                _step_schedulers(trainer, "step", plateau=True)
            progress.batches_that_stepped += progress.uncounted
            progress.uncounted = 0
            total += 1
            if (0 <= trainer.max_steps <= trainer.global_step) or \
                    (timed and _out_of_time(trainer)):
                trainer.should_stop = True
            if trainer.should_stop and _minimum_reached(trainer):
                break
        else:  # no break: the batches ran out, or the loader did before them
            exhausted = batch_idx + 1 < n_batches
    ran_batches = batches.completed - start
    if automatic and ran_batches and losses == 0 and not forward_only:
        warnings.warn(f"training_step returned None for every batch of epoch {epoch} "
                      f"({ran_batches} batches): nothing was trained. Return the "
                      "loss (a tensor, or a dict with 'loss'); None skips a batch",
                      stacklevel=2)
    watch.check()
    # Lightning: epoch-interval plateau schedulers step only after a complete epoch
    _end_train_epoch(trainer, results, complete=exhausted or batches.completed >= n_batches)
    return total


def _plain_batches(trainer: Trainer, batches: Any, results: Any,
                   training_step: Callable[..., Any], optimizer: Any,
                   backward: Callable[..., Any], watch: NonFiniteWatch, start: int,
                   total: int) -> tuple[int, int, int, bool]:
    """An epoch's batches when nothing but the step runs between them: automatic optimization
    of one optimizer stepped closure-first (``fulmen.direct.closure_first``), no accumulation,
    no batch or backward hooks, no clipping, no step or epoch schedulers, no validation inside
    the epoch, no time limit, no preemption vote, no batch transfer. The effects and their
    order are the general loop's in ``_train_epoch`` for such a run (tested), without its
    checks for what is not there. Returns the last batch index, ``total``, the losses seen and
    whether the batches ran out (rather than a stop)."""
    run_state = trainer.run_state
    progress = run_state.progress
    counter = progress.batches
    epoch = trainer.current_epoch
    log_every = trainer.log_every_n_steps
    log_step = trainer.metrics.log_step if trainer.loggers else None
    tensor = torch.Tensor
    losses = 0
    batch_idx = start - 1
    for batch_idx, batch in batches:
        results.batch = batch
        run_state.steps_before_batch = trainer.global_step
        counter.started += 1
        results.hook = "training_step"
        output = training_step(batch, batch_idx)
        loss = output if type(output) is tensor and not output.is_leaf and \
            output.numel() == 1 else _loss_of(output)
        optimizer.zero_grad(set_to_none=True)
        if loss is not None:  # None skips the batch: the zeroed gradients move nothing
            losses += 1
            watch.record(loss, epoch, trainer.global_step, batch_idx)
            backward(loss)
        optimizer.step()
        trainer.global_step += 1
        counter.completed = batch_idx + 1
        if (progress.batches_that_stepped + 1) % log_every == 0 or trainer.should_stop:
            progress.uncounted = 1
            watch.check()  # the one host sync for non-finite losses, at the logging cadence
            if log_step is not None:
                log_step(results)
            progress.uncounted = 0
        progress.batches_that_stepped += 1
        total += 1
        if 0 <= trainer.max_steps <= trainer.global_step:
            trainer.should_stop = True
        if trainer.should_stop and _minimum_reached(trainer):
            return batch_idx, total, losses, False
    return batch_idx, total, losses, True


def _minimum_reached(trainer: Trainer, epochs_done: int | None = None) -> bool:
    """Whether ``min_epochs`` and ``min_steps`` are met, ``epochs_done`` (default: the epochs
    completed before the running one) counting as trained (Lightning's ``_can_stop_early``)."""
    done = trainer.current_epoch if epochs_done is None else epochs_done
    return done >= trainer.min_epochs and trainer.global_step >= trainer.min_steps


def _overridden(module: Module, name: str) -> bool:
    return getattr(type(module), name) is not getattr(Module, name)


def _closure_not_run(own_step: bool) -> None:
    where = ("your optimizer_step override must call optimizer.step(closure=optimizer_closure)"
             if own_step else "the optimizer's step(closure) did not call the closure")
    raise ConfigurationError(f"the training step did not run for this batch: {where}. The "
                             "closure runs training_step, zero_grad and backward")


def _count(start: int) -> Iterator[int]:
    i = start
    while True:
        yield i
        i += 1


def _end_train_epoch(trainer: Trainer, results: Any, complete: bool = True) -> None:
    hooks = trainer.hooks
    assert hooks is not None
    progress = trainer.run_state.progress
    progress.batches_that_stepped -= 1  # Lightning: epoch values at the last batch's step
    trainer.metrics.finish(results)  # what training_step logged per epoch
    hooks.before_monitors("on_train_epoch_end")
    trainer.metrics.finish(results)  # what on_train_epoch_end logged
    progress.batches_that_stepped += 1
    if complete:
        _step_schedulers(trainer, "epoch", plateau=True)
    trainer.run_state.progress.finish_epoch()
    hooks.monitors("on_train_epoch_end")
    trainer.metrics.current = None


def _check_scheduler_steps(trainer: Trainer) -> None:
    """Before the first batch: refuse a custom scheduler whose ``step`` cannot be called as
    the Trainer calls it, unless the module steps it itself (``lr_scheduler_step``)."""
    module = trainer.module
    assert module is not None
    if not module.automatic_optimization or _overridden(module, "lr_scheduler_step"):
        return
    torch_types = (torch.optim.lr_scheduler.LRScheduler,
                   torch.optim.lr_scheduler.ReduceLROnPlateau)
    for config in trainer.lr_scheduler_configs:
        scheduler = config.scheduler
        if isinstance(scheduler, torch_types):
            continue
        try:
            signature = inspect.signature(scheduler.step)
        except (TypeError, ValueError):  # a builtin: nothing to check
            continue
        args = (0.0,) if config.needs_metric else ()
        try:
            signature.bind(*args)
        except TypeError:
            name = type(scheduler).__name__
            call = "with the monitored value alone (step(metric))" if args else \
                "without arguments"
            raise ConfigurationError(
                f"the lr scheduler {name}.step() cannot be called {call}: its signature is "
                f"{name}.step{signature}, and the Trainer steps it every "
                f"{config.frequency} {config.interval}(s). Override lr_scheduler_step(scheduler,"
                f" metric) in {type(module).__name__} to step it yourself, or give step's "
                "other parameters defaults") from None


def _step_schedulers(trainer: Trainer, interval: str, plateau: bool | None = None) -> None:
    """Step the schedulers of ``interval`` due now (``plateau``: only those that do / do not
    follow a metric; None: all)."""
    counter = trainer.global_step if interval == "step" else trainer.current_epoch + 1
    module = trainer.module
    assert module is not None
    if not module.automatic_optimization:  # manual optimization steps its own schedulers
        return
    own = _overridden(module, "lr_scheduler_step")
    for config in trainer.lr_scheduler_configs:
        if config.interval != interval or counter % config.frequency:
            continue
        if plateau is not None and config.needs_metric != plateau:
            continue
        if config.needs_metric:
            metrics = trainer.callback_metrics
            value = metrics.get(config.monitor or "")
            if value is None:
                message = (f"the lr scheduler monitors {config.monitor!r}, which was never "
                           f"logged; logged metrics: {sorted(metrics)}")
                if config.strict:
                    raise ConfigurationError(message + " (set 'strict': False to skip instead)")
                warnings.warn(message + "; the scheduler was not stepped", stacklevel=2)
                continue
            if own:
                module.lr_scheduler_step(config.scheduler, value)
            else:
                config.scheduler.step(value)
        elif own:
            module.lr_scheduler_step(config.scheduler, None)
        else:
            config.scheduler.step()


def _out_of_time(trainer: Trainer) -> bool:
    return trainer.max_time is not None and (
        time.monotonic() - trainer.run_state.start_time >= trainer.max_time)


def _sanity_check(trainer: Trainer, val: Any) -> None:
    hooks = trainer.hooks
    assert hooks is not None
    n = trainer.num_sanity_val_steps
    limits = [b if n == -1 else min(b, n) for b in val[1]]
    trainer.num_sanity_val_batches = limits
    trainer.sanity_checking = True
    hooks("on_sanity_check_start")
    with preserved_rng():
        evaluate(trainer, "validate", val[0], limits, during_fit=True, sanity=True)
    hooks("on_sanity_check_end")
    trainer.sanity_checking = False


# ====================================================================== evaluation


def _eval_loaders(trainer: Trainer, kind: str, explicit: Any,
                  during_fit: bool = False) -> tuple[list[Any], list[int | float]]:
    module = trainer.module
    limit = getattr(trainer, f"limit_{kind}_batches")
    method = "validation_step" if kind == "val" else f"{kind}_step"
    if limit == 0 or (during_fit and (getattr(module, method) is None or (  # Lightning's idiom
            type(module).__dict__.get(method) is None and getattr(
                type(module), method) is getattr(Module, method)))):
        return [], []
    loaders = data.resolve(explicit, trainer.datamodule, module, kind)
    loaders = [trainer.strategy.process_dataloader(d, kind, trainer.use_distributed_sampler)
               for d in loaders]
    for loader in loaders:
        data.seed_workers(loader, trainer.global_rank)
    counts = [data.num_batches(d, limit, kind) for d in loaders]
    if during_fit and loaders and not any(counts):
        warnings.warn(f"every {kind} dataloader is empty; validation is skipped", stacklevel=3)
        return [], []
    if kind == "val":
        trainer.num_val_batches = counts
    else:
        trainer.num_test_batches = counts
    return loaders, counts


def evaluate_stage(trainer: Trainer, stage: str, loaders: dict[str, Any],
                   verbose: bool = True) -> list[dict[str, float]]:
    kind = "val" if stage == "validate" else "test"

    def resolve() -> tuple[list[Any], list[int | float]]:
        found = _eval_loaders(trainer, kind, loaders.get(kind))
        if not found[0]:
            raise ConfigurationError(f"trainer.{stage} found no {kind} data: pass dataloaders=, "
                                     f"a datamodule with {data.METHODS[kind]}(), or define "
                                     f"{data.METHODS[kind]}() on the module")
        if not any(found[1]):
            raise ConfigurationError(f"every {kind} dataloader is empty (0 batches)")
        return found

    results = evaluate(trainer, stage, *resolve(), reload=resolve)
    if verbose and trainer.is_global_zero:
        print_results(stage, results)
    return results


def evaluate(trainer: Trainer, stage: str, loaders: list[Any], counts: list[int | float],
             during_fit: bool = False, sanity: bool = False,
             reload: Callable[[], tuple[list[Any], list[int | float]]] | None = None
             ) -> list[dict[str, float]]:
    """One evaluation run. ``reload``: sets the data up again when a trial in
    ``on_<stage>_start`` (a batch-size search) changed it."""
    module, strategy, hooks = trainer.module, trainer.strategy, trainer.hooks
    assert module is not None and hooks is not None
    step = profiled_step(hooks.profiler, strategy.step)
    prefix = "validation" if stage == "validate" else "test"
    method = f"{prefix}_step"
    if getattr(module, method) is None:
        raise ConfigurationError(f"No `{method}()` method defined to run `Trainer.{stage}` "
                                 f"({type(module).__name__}.{method} is None)")
    if getattr(type(module), method) is getattr(Module, method):
        getattr(module, method)()  # raises the clear 'has no ..._step' error
    results = trainer.metrics.new_results("validate" if prefix == "validation" else "test")
    previous, trainer.metrics.current = trainer.metrics.current, results
    # The modes of what runs the steps: the strategy's wrapper too (ShardedDataParallel reduces
    # gradients only while it is in training mode), not only the user's module inside it.
    root = trainer.model if trainer.model is not None else module
    modes = {m: m.training for m in root.modules()}
    model_hook = "on_test_model" if prefix == "test" else "on_validation_model"
    getattr(module, f"{model_hook}_eval")()
    transfer = make_transfer(trainer)
    hooks(f"on_{prefix}_start")
    run = trainer.run_state
    if reload is not None and run.data_changed:
        loaders, counts = reload()
        run.trials_seen = run.trials
    pass_idx = len(loaders) > 1 and _takes_dataloader_idx(getattr(module, method))
    step = _batch_idx_as_taken(step, getattr(module, method), named=True)
    hooks(f"on_{prefix}_epoch_start")
    # Lightning's step axis for evaluation values logged per batch: the batches each
    # dataloader ran in this fit (over every validation of it) or this validate/test call.
    counts_seen = trainer.metrics.eval_batches_seen
    with _no_grad(trainer):
        for dl_idx, (loader, count) in enumerate(zip(loaders, counts)):
            results.dataloader_suffix = f"/dataloader_idx_{dl_idx}" if len(loaders) > 1 else ""
            extra = (dl_idx,) if pass_idx else ()
            hook_idx = (dl_idx,) if len(loaders) > 1 else ()  # Lightning passes it only then
            for batch_idx, batch in enumerate(loader):
                if batch_idx >= count:
                    break
                if transfer is not None:
                    batch = transfer(batch, dl_idx)
                results.batch = batch
                hooks(f"on_{prefix}_batch_start", batch, batch_idx, *hook_idx)
                results.hook = method
                output = step(method, batch, batch_idx, *extra)
                hooks(f"on_{prefix}_batch_end", output, batch, batch_idx, *hook_idx)
                seen = counts_seen.get((prefix, dl_idx), 0)
                if results.step_values:  # someone logged with on_step=True
                    if not sanity:
                        trainer.metrics.log_eval_step(results, seen)
                    results.step_values.clear()
                if not sanity:
                    counts_seen[(prefix, dl_idx)] = seen + 1
    results.dataloader_suffix = ""
    hooks.before_monitors(f"on_{prefix}_epoch_end")
    if sanity:
        finished = {name: value for name, (_, value) in results.epoch_values().items()}
    else:
        finished = trainer.metrics.finish(results)
    hooks.monitors(f"on_{prefix}_epoch_end")
    hooks(f"on_{prefix}_end")
    trainer.metrics.current = previous
    if _overridden(module, f"{model_hook}_train"):
        getattr(module, f"{model_hook}_train")()
    else:
        for submodule, mode in modes.items():
            submodule.training = mode
    return _split_by_loader(finished, len(loaders))


def _no_grad(trainer: Trainer) -> Any:
    """``torch.inference_mode`` (``Trainer(inference_mode=True)``, the default) or
    ``torch.no_grad`` for evaluation and prediction. Inside fit, validation uses no_grad so
    tensors it creates can still meet training ones; over gloo, whose collectives refuse
    inference tensors, no_grad too (as Lightning)."""
    import torch.distributed as dist

    gloo = dist.is_available() and dist.is_initialized() and dist.get_backend() == "gloo"
    if trainer.inference_mode and trainer.state != "fit" and not gloo:
        return torch.inference_mode()
    return torch.no_grad()


def takes_batch_idx(step: Any) -> bool:
    """Whether a ``*_step`` takes ``batch_idx``: Lightning passes it only then (a parameter
    named so, a second positional parameter, or ``*args``)."""
    params = inspect.signature(step).parameters.values()
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return any(p.name == "batch_idx" or p.kind is p.VAR_POSITIONAL for p in params) or \
        len(positional) >= 2


def _batch_idx_as_taken(call: Callable[..., Any], step: Any, named: bool) -> Callable[..., Any]:
    """``call`` (``call(batch, batch_idx, ...)``, or with the method name first when ``named``)
    without ``batch_idx`` for a ``step`` that does not take it."""
    if takes_batch_idx(step):
        return call
    if named:
        return lambda method, batch, batch_idx, *extra: call(method, batch, *extra)
    return lambda batch, batch_idx, *extra: call(batch, *extra)


def _takes_dataloader_idx(step: Any) -> bool:
    params = inspect.signature(step).parameters
    return "dataloader_idx" in params or len(params) >= 3 or any(
        p.kind is p.VAR_POSITIONAL for p in params.values())


def _split_by_loader(metrics: dict[str, torch.Tensor], n: int) -> list[dict[str, float]]:
    out: list[dict[str, float]] = [{} for _ in range(n)]
    for name, value in metrics.items():
        _, _, idx = name.partition("/dataloader_idx_")
        targets = [int(idx)] if idx.isdigit() else range(n)
        for i in targets:
            out[i][name] = float(value)
    return out


def print_results(stage: str, results: list[dict[str, float]]) -> None:
    """The results table on rank zero, through the ``fulmen`` logger."""
    for i, metrics in enumerate(results):
        title = f"{stage.capitalize()} results" + (f" (dataloader {i})" if len(results) > 1 else "")
        width = max([len(k) for k in metrics] + [len("metric")])
        rule = "-" * (width + 18)
        lines = [rule, title, rule, f"{'metric':<{width}}  {'value':>14}"]
        lines += [f"{name:<{width}}  {metrics[name]:>14.6g}" for name in sorted(metrics)]
        configure_logging().info("%s", "\n".join([*lines, rule]))


# ====================================================================== predict


def predict(trainer: Trainer, explicit: Any, return_predictions: bool = True) -> Any:
    module, strategy, hooks = trainer.module, trainer.strategy, trainer.hooks
    assert module is not None and hooks is not None
    step = profiled_step(hooks.profiler, strategy.step)

    def resolve() -> tuple[list[Any], list[int | float]]:
        found = data.resolve(explicit, trainer.datamodule, module, "predict")
        if not found:
            raise ConfigurationError("trainer.predict found no data: pass dataloaders=, a "
                                     "datamodule with predict_dataloader(), or define "
                                     "predict_dataloader()")
        found = [strategy.process_dataloader(d, "predict", trainer.use_distributed_sampler)
                 for d in found]
        counts = [data.num_batches(d, trainer.limit_predict_batches, "predict") for d in found]
        if not any(counts):
            raise ConfigurationError("every predict dataloader is empty (0 batches)")
        trainer.num_predict_batches = counts
        return found, counts

    loaders, counts = resolve()
    module.on_predict_model_eval()
    transfer = make_transfer(trainer)
    all_outputs: list[list[Any]] = []
    # so that self.log can refuse
    results = trainer.metrics.current = trainer.metrics.new_results("predict")
    hooks("on_predict_start")
    run = trainer.run_state
    if run.data_changed:  # a trial in on_predict_start (a batch-size search) changed it
        loaders, counts = resolve()
        run.trials_seen = run.trials
    if module.predict_step is None:
        raise ConfigurationError("`predict_step` cannot be None to run `Trainer.predict`")
    pass_idx = len(loaders) > 1 and _takes_dataloader_idx(module.predict_step)
    step = _batch_idx_as_taken(step, module.predict_step, named=True)
    hooks("on_predict_epoch_start")
    with _no_grad(trainer):
        for dl_idx, (loader, count) in enumerate(zip(loaders, counts)):
            outputs: list[Any] = []
            extra = (dl_idx,) if pass_idx else ()
            hook_idx = (dl_idx,) if len(loaders) > 1 else ()
            for batch_idx, batch in enumerate(loader):
                if batch_idx >= count:
                    break
                if transfer is not None:
                    batch = transfer(batch, dl_idx)
                hooks("on_predict_batch_start", batch, batch_idx, *hook_idx)
                results.hook = "predict_step"
                output = step("predict_step", batch, batch_idx, *extra)
                hooks("on_predict_batch_end", output, batch, batch_idx, *hook_idx)
                if return_predictions:
                    outputs.append(strategy.precision.convert_output(output))
            all_outputs.append(outputs)
    hooks("on_predict_epoch_end")
    hooks("on_predict_end")
    trainer.metrics.current = None
    if not return_predictions:
        return None
    return all_outputs[0] if len(all_outputs) == 1 else all_outputs


def profiled_step(profiler: Any, step: Any) -> Any:
    """``strategy.step``, timed as ``[Strategy]<method>`` when a profiler records."""
    if profiler is None:
        return step

    def timed(method: str, *args: Any) -> Any:
        with profiler.profile(f"[Strategy]{method}"):
            return step(method, *args)

    return timed
