"""Stepping the learning-rate schedulers ``configure_optimizers`` returned, when they are due
(automatic optimization; manual optimization steps its own)."""

from __future__ import annotations

import inspect
import warnings
from typing import TYPE_CHECKING

import torch

from fulmen.errors import ConfigurationError
from fulmen.trainer.batches import overridden

if TYPE_CHECKING:
    from fulmen.trainer.host import TrainerHost


def check_scheduler_steps(trainer: TrainerHost) -> None:
    """Before the first batch: refuse a custom scheduler whose ``step`` cannot be called as
    the Trainer calls it, unless the module steps it itself (``lr_scheduler_step``)."""
    module = trainer.module
    assert module is not None
    if not module.automatic_optimization or overridden(module, "lr_scheduler_step"):
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


def step_schedulers(trainer: TrainerHost, interval: str, plateau: bool | None = None,
                    index: int | None = None) -> None:
    """Step the schedulers of ``interval`` due now (``plateau``: only those that do / do not
    follow a metric; None: all). ``frequency`` counts, as in Lightning, the epochs (``epoch``)
    or ``index``, the batches of the running epoch that ended an accumulation window
    (``step``)."""
    counter = trainer.current_epoch + 1 if index is None else index
    module = trainer.module
    assert module is not None
    if not module.automatic_optimization:  # manual optimization steps its own schedulers
        return
    own = overridden(module, "lr_scheduler_step")
    for config in trainer.lr_scheduler_configs:
        if config.interval != interval or counter % config.frequency:
            continue
        if plateau is not None and config.needs_metric != plateau:
            continue
        if config.needs_metric:
            metrics = trainer.callback_metrics
            value = metrics.get(config.monitor or "")
            if value is None:  # Lightning's messages and warning category
                if config.strict:
                    raise ConfigurationError(
                        f"ReduceLROnPlateau conditioned on metric {config.monitor!r} which is "
                        f"not available. Available metrics are: {sorted(metrics)}. Log it with "
                        "self.log, name a logged one as `monitor` in the lr scheduler dict, or "
                        "set 'strict': False to skip the step instead")
                warnings.warn(f"ReduceLROnPlateau conditioned on metric {config.monitor!r} "
                              "which is not available but strict is set to `False`. Skipping "
                              f"learning rate update (available metrics: {sorted(metrics)})",
                              RuntimeWarning, stacklevel=2)
                continue
            if own:
                module.lr_scheduler_step(config.scheduler, value)
            else:
                config.scheduler.step(value)
        elif own:
            module.lr_scheduler_step(config.scheduler, None)
        else:
            config.scheduler.step()
