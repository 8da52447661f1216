"""``GradientAccumulationScheduler``: change ``Trainer.accumulate_grad_batches`` by epoch."""

from __future__ import annotations

import warnings
from typing import Any

from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError


class GradientAccumulationScheduler(Callback):
    """Accumulate gradients over a number of batches that depends on the epoch.

    ``scheduling`` maps a zero-based epoch to the accumulation factor from that epoch on
    (``{4: 2}``: one batch per step for epochs 0-3, two from epoch 4). The factor for epoch 0
    is 1 unless given. At each epoch start the callback sets the public
    ``trainer.accumulate_grad_batches``, which the loop reads once per epoch.
    """

    def __init__(self, scheduling: dict[int, int]) -> None:
        if not isinstance(scheduling, dict) or not scheduling:
            raise ConfigurationError(
                f"GradientAccumulationScheduler(scheduling={scheduling!r}): give a non-empty dict "
                "{epoch: factor}, e.g. {0: 1, 4: 2}")
        keys, values = list(scheduling), list(scheduling.values())
        if any(isinstance(k, bool) or not isinstance(k, int) or k < 0 for k in keys):
            raise ConfigurationError(
                f"GradientAccumulationScheduler(scheduling={scheduling!r}): Epoch should be an "
                f"int greater than or equal to 0. Got {keys}. Keys are zero-based epochs")
        if any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values):
            raise ConfigurationError(
                f"GradientAccumulationScheduler(scheduling={scheduling!r}): Accumulation factor "
                f"should be an int greater than 0. Got {values}")
        scheduling = dict(scheduling)
        scheduling.setdefault(0, 1)
        self.scheduling = scheduling
        self.epochs = sorted(scheduling)

    def going_to_accumulate_grad_batches(self) -> bool:
        return any(v > 1 for v in self.scheduling.values())

    def get_accumulate_grad_batches(self, epoch: int) -> int:
        """The factor in force at ``epoch`` (zero-based)."""
        return next((self.scheduling[e] for e in reversed(self.epochs) if epoch >= e), 1)

    def on_train_start(self, trainer: Any, module: Any) -> None:
        """Refuse settings the schedule cannot work with, before the first batch."""
        if not module.automatic_optimization:
            raise ConfigurationError(
                "GradientAccumulationScheduler: Automatic gradient accumulation and the "
                "`GradientAccumulationScheduler` is not supported for manual optimization "
                "(automatic_optimization=False). Remove the callback, or accumulate in "
                "training_step by stepping every n batches")
        from lightning_utilities.core.overrides import is_overridden

        from fulmen.module import Module

        if self.going_to_accumulate_grad_batches() and any(
                is_overridden(name, module, Module)
                for name in ("optimizer_step", "optimizer_zero_grad")):
            warnings.warn(
                "When using `Trainer(accumulate_grad_batches != 1)` and overriding "
                "`Module.optimizer_{step,zero_grad}`, the hooks will not be called on every "
                "batch (rather, they are called on every optimization step).", stacklevel=2)
        if trainer.strategy.fixed_accumulation:
            raise ConfigurationError(
                f"GradientAccumulationScheduler: strategy {trainer.strategy.name!r} does not "
                "support `accumulate_grad_batches` changing between epochs (it fixes the factor "
                "at set-up); use Trainer(accumulate_grad_batches=n) or another strategy")
        if trainer.accumulate_grad_batches != 1:
            raise ConfigurationError(
                f"Trainer(accumulate_grad_batches={trainer.accumulate_grad_batches}) was given "
                "and you have set `accumulate_grad_batches` and are using the "
                f"`GradientAccumulationScheduler` (scheduling={self.scheduling}): remove one of "
                "them (put the Trainer's factor into the schedule as {0: factor})")

    def on_train_epoch_start(self, trainer: Any, module: Any) -> None:
        trainer.accumulate_grad_batches = self.get_accumulate_grad_batches(trainer.current_epoch)
