"""A tuner's trial inside the running stage (``Trainer.run_trial``): run a few steps or batches
with the tuner's callbacks only, then put the Trainer back as it was."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import torch

from fulmen.errors import ConfigurationError, FulmenError
from fulmen.seed import rng_states, set_rng_states
from fulmen.trainer.hooks import HookTable

if TYPE_CHECKING:
    from fulmen.callbacks.base import Callback
    from fulmen.trainer.stage_host import StageHost

#: The Trainer flags a trial changes, per stage (the first one is the stage's batch limit).
STAGE_LIMITS = {
    "fit": ("max_steps", "max_time", "min_steps", "min_epochs", "limit_val_batches"),
    "validate": ("limit_val_batches",),
    "test": ("limit_test_batches",),
    "predict": ("limit_predict_batches",),
}


def run_trial(trainer: StageHost, steps: int, callbacks: Sequence[Callback] = (),
              prepare: Callable[[], None] | None = None) -> None:
    """``trainer.run_trial``: run a trial inside the running stage and put everything back,
    for tuners (``LearningRateFinder``, ``BatchSizeFinder``), called from ``on_<stage>_start``.

    Under fit: up to ``steps`` optimizer steps of the training loop (no validation, sanity
    check, ``on_fit_start``/``on_fit_end``); under validate/test/predict: ``steps`` batches of
    that loop. Only ``callbacks`` (and the module's hooks) run, nothing is logged, and the data
    is set up afresh from the module or datamodule. Afterwards the weights, optimizer and
    scheduler states, random state, counters, callbacks and loggers are as before, also when
    the trial raises (e.g. out of memory): the exception propagates. ``prepare`` runs after
    the state is saved, before the trial: change learning rates or ``lr_scheduler_configs``
    there, and they are put back too.
    """
    fn = trainer.state.fn
    if trainer.module is None or trainer.hooks is None or fn is None or fn not in STAGE_LIMITS:
        raise FulmenError("trainer.run_trial runs inside a stage: call it from a callback "
                          "hook of fit/validate/test/predict (e.g. on_fit_start)")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ConfigurationError(f"trainer.run_trial(steps={steps!r}): expected an int >= 1")
    stage = str(fn.value)
    saved_flags = {flag: getattr(trainer, flag) for flag in STAGE_LIMITS[stage]}
    run = trainer.run_state
    loaders = run.stage_loaders
    counters = (trainer.global_step, trainer.current_epoch, run.progress, trainer.should_stop,
                trainer.num_training_batches, trainer.num_val_batches, run.restore,
                run.loop_state)
    metrics = trainer.metrics.snapshot()
    strategy = trainer.strategy
    state = {k: v.detach().clone() if isinstance(v, torch.Tensor) else copy.deepcopy(v)
             for k, v in strategy.module_state_dict().items()}
    optimizer_states = [copy.deepcopy(strategy.optimizer_state(o)) for o in trainer.optimizers]
    schedulers = list(trainer.lr_scheduler_configs)
    scheduler_states = [copy.deepcopy(c.scheduler.state_dict()) for c in schedulers]
    rng = rng_states()
    outer = (trainer.callbacks, trainer.hooks, trainer.loggers, trainer.module.training,
             trainer.state.stage)
    trainer.callbacks = list(callbacks)
    trainer.hooks = HookTable(trainer, trainer.module, trainer.callbacks)
    trainer.loggers = []
    run.restore, trainer.should_stop = None, False
    try:
        if prepare is not None:
            prepare()
        if stage == "fit":
            trainer.max_steps, trainer.max_time = trainer.global_step + steps, None
            trainer.min_steps = trainer.min_epochs = 0
            trainer.limit_val_batches = 0
            trainer.fit_loop.run({"train": loaders.get("train")}, trial=True)
        else:
            setattr(trainer, STAGE_LIMITS[stage][0], steps)
            if stage == "predict":
                trainer.predict_loop.run(loaders.get("predict"), False)
            else:
                trainer.evaluation_loop.run_stage(stage, loaders, verbose=False)
    finally:
        for flag, value in saved_flags.items():
            setattr(trainer, flag, value)
        (trainer.global_step, trainer.current_epoch, run.progress, trainer.should_stop,
         trainer.num_training_batches, trainer.num_val_batches, run.restore,
         run.loop_state) = counters
        trainer.metrics.restore(metrics)
        trainer.callbacks, trainer.hooks, trainer.loggers, training, trainer.state.stage = outer
        strategy.load_module_state_dict(state)
        for optimizer, optimizer_state in zip(trainer.optimizers, optimizer_states):
            strategy.load_optimizer_state(optimizer, optimizer_state)
        trainer.lr_scheduler_configs[:] = schedulers
        for scheduler_config, scheduler_state in zip(schedulers, scheduler_states):
            scheduler_config.scheduler.load_state_dict(scheduler_state)
        set_rng_states(rng)
        trainer.module.train(training)
        run.trials += 1
