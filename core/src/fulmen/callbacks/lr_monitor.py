"""``LearningRateMonitor``: log each optimizer's learning rate (and momentum)."""

from __future__ import annotations

from typing import Any

from fulmen import arguments
from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError


class LearningRateMonitor(Callback):
    """Logs ``lr-<Optimizer>`` (``/pg<i>`` per parameter group when there are several) to the
    loggers, every ``log_every_n_steps`` steps (``logging_interval='step'``) or every epoch."""

    def __init__(self, logging_interval: str | None = None, log_momentum: bool = False) -> None:
        if logging_interval not in (None, "step", "epoch"):
            raise ConfigurationError(f"LearningRateMonitor(logging_interval="
                                     f"{logging_interval!r}): use 'step', 'epoch' or None")
        arguments.check_bool("LearningRateMonitor", {"log_momentum": log_momentum})
        self.logging_interval = logging_interval
        self.log_momentum = log_momentum
        self.lrs: dict[str, list[float]] = {}

    def on_train_start(self, trainer: Any, module: Any) -> None:
        if not trainer.loggers:
            raise ConfigurationError("LearningRateMonitor needs a logger; the Trainer has "
                                     "logger=False")

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if self.logging_interval != "epoch" and trainer.global_step % \
                trainer.log_every_n_steps == 0:
            self._log(trainer)

    def on_train_epoch_start(self, trainer: Any, module: Any) -> None:
        if self.logging_interval != "step":
            self._log(trainer)

    def _log(self, trainer: Any) -> None:
        stats: dict[str, float] = {}
        names: dict[str, int] = {}
        for optimizer in trainer.optimizers:
            base = f"lr-{type(optimizer).__name__}"
            names[base] = names.get(base, 0) + 1
            name = base if names[base] == 1 else f"{base}-{names[base] - 1}"
            groups = optimizer.param_groups
            for i, group in enumerate(groups):
                key = name if len(groups) == 1 else f"{name}/pg{i + 1}"
                stats[key] = float(group["lr"])
                if self.log_momentum:
                    momentum = group.get("momentum", group.get("betas", (None,))[0])
                    if momentum is not None:
                        stats[f"{key}-momentum"] = float(momentum)
        for key, value in stats.items():
            self.lrs.setdefault(key, []).append(value)
        trainer._log_to_loggers(stats, trainer.global_step)
