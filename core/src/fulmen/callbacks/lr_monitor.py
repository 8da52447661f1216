"""``LearningRateMonitor``: log each optimizer's learning rate (and momentum, weight decay)."""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

import torch

from fulmen import arguments
from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError
from fulmen.utilities.rank_zero import rank_zero_warn


class LearningRateMonitor(Callback):
    """Logs the learning rate of every optimizer to the loggers, as Lightning's.

    Names: ``lr-<Optimizer>`` (``lr-Adam``, a second Adam ``lr-Adam-1``), or the ``name`` of the
    scheduler config; with several parameter groups ``/pg1``, ``/pg2``..., or each group's
    ``name``. Momentum (``-momentum``, ``betas[0]`` for Adam-like optimizers) and weight decay
    (``-weight_decay``) are added on request. ``self.lrs`` keeps every logged value.

    Args:
        logging_interval: ``"step"`` or ``"epoch"`` logs every optimizer at that interval; None
            follows each scheduler's ``interval`` (optimizers without one: every step).
            Steps are logged when the step's metrics are (``log_every_n_steps``).
        log_momentum: also log momentum (0 for optimizers without one, with a warning).
        log_weight_decay: also log weight decay.
        log_key_prefix: prepended to every name (``"optim/"`` → ``optim/lr-Adam``).
    """

    def __init__(self, logging_interval: str | None = None, log_momentum: bool = False,
                 log_weight_decay: bool = False, log_key_prefix: str | None = None) -> None:
        if logging_interval not in (None, "step", "epoch"):
            raise ConfigurationError(f"LearningRateMonitor(logging_interval="
                                     f"{logging_interval!r}): use 'step', 'epoch' or None")
        arguments.check_bool("LearningRateMonitor", {"log_momentum": log_momentum})
        self.logging_interval = logging_interval
        self.log_momentum = log_momentum
        self.log_weight_decay = log_weight_decay
        self.log_key_prefix = log_key_prefix or ""
        self.lrs: dict[str, list[float]] = {}
        self.last_momentum_values: dict[str, float | None] = {}
        self.last_weight_decay_values: dict[str, float | None] = {}

    def on_train_start(self, trainer: Any, module: Any) -> None:
        if not trainer.loggers:
            raise ConfigurationError("Cannot use `LearningRateMonitor` callback with `Trainer` "
                                     "that has no logger (logger=False): give it a logger or "
                                     "drop the callback")
        if self.log_momentum:
            def no_key(key: str) -> bool:
                if trainer.lr_scheduler_configs:
                    return any(key not in c.scheduler.optimizer.defaults
                               for c in trainer.lr_scheduler_configs)
                return any(key not in o.defaults for o in trainer.optimizers)

            if no_key("momentum") and no_key("betas"):
                rank_zero_warn("You have set log_momentum=True, but some optimizers do not have "
                               "momentum. This will log a value 0 for the momentum.",
                               category=RuntimeWarning)
        names, with_scheduler, types = self._names_from_schedulers(trainer.lr_scheduler_configs)
        optimizer_names, _ = self._names_from_optimizers(trainer.optimizers, with_scheduler, types)
        flat = list(itertools.chain.from_iterable(names + optimizer_names))
        self.lrs = {name: [] for name in flat}
        self.last_momentum_values = {name + "-momentum": None for name in flat}
        self.last_weight_decay_values = {name + "-weight_decay": None for name in flat}

    def on_train_batch_start(self, trainer: Any, module: Any, batch: Any, batch_idx: int) -> None:
        if not trainer.should_update_logs or self.logging_interval == "epoch":
            return
        self._log(trainer, "step" if self.logging_interval is None else "any")

    def on_train_epoch_start(self, trainer: Any, module: Any) -> None:
        if self.logging_interval != "step":
            self._log(trainer, "epoch" if self.logging_interval is None else "any")

    def _log(self, trainer: Any, interval: str) -> None:
        stats = self._extract_stats(trainer, interval)
        if stats and trainer.is_global_zero:
            trainer.logger_set.log_metrics(stats, trainer.batches_that_stepped)

    def _extract_stats(self, trainer: Any, interval: str) -> dict[str, float]:
        stats: dict[str, float] = {}
        configs = trainer.lr_scheduler_configs
        names, with_scheduler, types = self._names_from_schedulers(configs)
        self._remap_keys(names)
        for group_names, config in zip(names, configs):
            if interval in (config.interval, "any"):
                stats.update(self._optimizer_stats(config.scheduler.optimizer, group_names))
        optimizer_names, without = self._names_from_optimizers(trainer.optimizers,
                                                               with_scheduler, types)
        self._remap_keys(optimizer_names)
        for optimizer, group_names in zip(without, optimizer_names):
            stats.update(self._optimizer_stats(optimizer, group_names))
        device = trainer.strategy.root_device
        trainer.callback_metrics.update({k: torch.tensor(float(v), device=device)
                                         for k, v in stats.items()})
        return stats

    def _optimizer_stats(self, optimizer: torch.optim.Optimizer,
                         names: list[str]) -> dict[str, float]:
        stats: dict[str, float] = {}
        use_betas = "betas" in optimizer.defaults
        for group, name in zip(optimizer.param_groups, names):
            stats[name] = group["lr"]
            self.lrs.setdefault(name, []).append(group["lr"])
            if self.log_momentum:
                momentum = group["betas"][0] if use_betas else group.get("momentum", 0)
                self.last_momentum_values[f"{name}-momentum"] = momentum
                stats[f"{name}-momentum"] = momentum
            if self.log_weight_decay:
                decay = group["weight_decay"]
                self.last_weight_decay_values[f"{name}-weight_decay"] = decay
                stats[f"{name}-weight_decay"] = decay
        return stats

    def _remap_keys(self, names: list[list[str]], token: str = "/pg1") -> None:
        """Keep the history of a name when its optimizer gained parameter groups."""
        for group_names in names:
            for new in group_names:
                old = new.replace(token, "")
                if token in new and old in self.lrs:
                    self.lrs[new] = self.lrs.pop(old)
                elif new not in self.lrs:
                    self.lrs[new] = []

    def _names_from_schedulers(self, configs: list[Any]) -> tuple[
            list[list[str]], list[torch.optim.Optimizer], defaultdict[type, int]]:
        names: list[list[str]] = []
        seen: list[torch.optim.Optimizer] = []
        types: defaultdict[type, int] = defaultdict(int)
        for config in configs:
            optimizer = config.scheduler.optimizer
            name = config.name if config.name is not None else \
                "lr-" + type(optimizer).__name__
            names.append(self._unique_names(optimizer, name, seen, types, config.name))
        return names, seen, types

    def _names_from_optimizers(self, optimizers: list[Any], seen: list[torch.optim.Optimizer],
                               types: defaultdict[type, int]
                               ) -> tuple[list[list[str]], list[torch.optim.Optimizer]]:
        names: list[list[str]] = []
        without: list[torch.optim.Optimizer] = []
        for optimizer in optimizers:
            if any(optimizer is s for s in seen):
                continue
            names.append(self._unique_names(optimizer, "lr-" + type(optimizer).__name__, seen,
                                            types, None))
            without.append(optimizer)
        return names, without

    def _unique_names(self, optimizer: torch.optim.Optimizer, name: str,
                      seen: list[torch.optim.Optimizer], types: defaultdict[type, int],
                      config_name: str | None) -> list[str]:
        seen.append(optimizer)
        kind = type(optimizer)
        if config_name is None:
            types[kind] += 1
        groups = optimizer.param_groups
        labels = [g.get("name", f"pg{i}") for i, g in enumerate(groups, start=1)]
        duplicates = {n for n in labels if labels.count(n) > 1}
        if duplicates:
            raise ConfigurationError(
                "A single `Optimizer` cannot have multiple parameter groups with identical "
                f"`name` values. {name} has duplicated parameter group names {duplicates}: "
                "give each group its own name")
        if kind in types and types[kind] > 1:
            name += f"-{types[kind] - 1}"
        out = [_with_group(name, groups, i) for i in range(len(groups))]
        return [f"{self.log_key_prefix}{n}" for n in out]


def _with_group(name: str, groups: list[dict[str, Any]], index: int) -> str:
    if len(groups) > 1:
        return f"{name}/{groups[index].get('name', f'pg{index + 1}')}"
    group_name = groups[index].get("name")
    return f"{name}/{group_name}" if group_name else name
