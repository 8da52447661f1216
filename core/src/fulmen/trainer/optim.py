"""What ``configure_optimizers`` may return, and the schedulers that come with it."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from fulmen.errors import ConfigurationError
from fulmen.utilities.rank_zero import rank_zero_warn

_FORMS = ("an optimizer; a list or tuple of optimizers; (optimizers, schedulers); a dict "
          "{'optimizer': ..., 'lr_scheduler': ...}; or a list of such dicts")


@dataclass
class LRSchedulerConfig:
    """A scheduler and when to step it (``interval`` 'epoch' or 'step', every ``frequency``)."""

    scheduler: Any
    interval: str = "epoch"
    frequency: int = 1
    monitor: str | None = None
    strict: bool = True
    name: str | None = None
    reduce_on_plateau: bool | None = None  # None: whether the scheduler is ReduceLROnPlateau
    timing_keys: tuple[str, ...] = ()  # which of interval/frequency/monitor/strict were given

    @property
    def needs_metric(self) -> bool:
        """Stepped with the monitored value (``scheduler.step(metric)``)."""
        if self.reduce_on_plateau is not None:
            return self.reduce_on_plateau
        return isinstance(self.scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)


_SCHEDULER_KEYS = ("scheduler", "interval", "frequency", "monitor", "strict", "name",
                   "reduce_on_plateau")
_DICT_KEYS = ("optimizer", "lr_scheduler", "monitor")


class NoOptimizer(torch.optim.Optimizer):
    """What a fit runs with when ``configure_optimizers`` returns None (Lightning's
    ``_MockOptimizer``): ``step`` runs the closure (forward and backward) and changes nothing."""

    def __init__(self) -> None:
        super().__init__([torch.zeros(1)], {})

    def add_param_group(self, param_group: dict[Any, Any]) -> None:
        pass

    def load_state_dict(self, state_dict: dict[Any, Any]) -> None:
        pass

    def state_dict(self) -> dict[str, Any]:
        return {"state": {}, "param_groups": []}

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        return closure() if closure is not None else None

    def zero_grad(self, set_to_none: bool = True) -> None:
        pass

    def __repr__(self) -> str:
        return "No Optimizer"


def _is_optimizer(obj: Any) -> bool:
    return isinstance(obj, torch.optim.Optimizer)


def parse_optimizers(result: Any, automatic: bool = True
                     ) -> tuple[list[Any], list[LRSchedulerConfig]]:
    """Normalise the return value of ``configure_optimizers``. Under manual optimization
    (``automatic=False``) the user steps the schedulers: the keys that say when are ignored
    with a warning, and ReduceLROnPlateau needs no ``monitor``."""
    optimizers, configs = _parse(result)
    for config in configs:
        attached = getattr(config.scheduler, "optimizer", None)
        if _is_optimizer(attached) and not any(attached is o for o in optimizers):
            raise ConfigurationError(
                f"configure_optimizers returned {_short(result)}: the scheduler "
                f"{type(config.scheduler).__name__} is attached to an optimizer that "
                f"configure_optimizers did not return ({type(attached).__name__} at "
                f"{id(attached):#x}), so stepping it would change nothing that trains. Build "
                f"the scheduler on one of the returned optimizers. Return {_FORMS}.")
    if not automatic:
        for config in configs:
            if config.timing_keys:
                warnings.warn(f"the lr scheduler dict sets {list(config.timing_keys)}, which "
                              "manual optimization ignores: call lr_scheduler.step() yourself "
                              "in training_step or a hook", RuntimeWarning, stacklevel=3)
    if automatic:
        for config in configs:
            if isinstance(config.scheduler, torch.optim.lr_scheduler.OneCycleLR) and \
                    config.interval == "epoch":
                warnings.warn("A OneCycleLR scheduler is using 'interval': 'epoch': it then "
                              "steps once per epoch, though its total_steps usually counts "
                              "optimizer steps. Are you sure you didn't mean 'interval': "
                              "'step'?", RuntimeWarning, stacklevel=3)
            if config.needs_metric and not config.monitor:
                raise ConfigurationError(
                    f"configure_optimizers returned {_short(result)}: ReduceLROnPlateau needs "
                    f"'monitor': the name of a logged metric. Return {_FORMS}.")
    return optimizers, configs


def _parse(result: Any) -> tuple[list[Any], list[LRSchedulerConfig]]:
    def bad(why: str) -> ConfigurationError:
        return ConfigurationError(f"configure_optimizers returned {_short(result)}: {why}. "
                                  f"Return {_FORMS}.")

    if result is None:  # Lightning: a warning, and a fit without an optimizer
        rank_zero_warn("`LightningModule.configure_optimizers` returned `None`, this fit will "
                       "run with no optimizer (nothing is trained). Return an optimizer to train"
                       " the model.", category=UserWarning)
        return [NoOptimizer()], []
    if _is_optimizer(result):
        return [result], []
    if isinstance(result, Mapping):
        return _from_dicts([result], bad)
    if isinstance(result, list | tuple):
        items = list(result)
        if len(items) == 2 and isinstance(items[0], list | tuple) and items[0] and all(
                _is_optimizer(o) for o in items[0]) and not _is_optimizer(items[1]):
            # (optimizers, schedulers); Lightning also takes one scheduler (or dict) alone
            schedulers = items[1] if isinstance(items[1], list | tuple) else [items[1]]
            return list(items[0]), [_scheduler_config(s, bad) for s in schedulers]
        if len(items) == 2 and isinstance(items[0], list | tuple) and isinstance(
                items[1], list | tuple):
            raise bad("the first list must hold torch.optim.Optimizer objects")
        if items and all(isinstance(i, Mapping) for i in items):
            return _from_dicts(items, bad)
        if items and all(_is_optimizer(i) for i in items):
            return items, []
    raise bad(f"a {type(result).__name__} is not one of the accepted forms")


def _from_dicts(items: Sequence[Mapping[str, Any]], bad: Callable[[str], Exception]
                ) -> tuple[list[Any], list[LRSchedulerConfig]]:
    optimizers, schedulers = [], []
    for item in items:
        unknown = set(item) - set(_DICT_KEYS)
        if unknown:  # Lightning warns and ignores them
            rank_zero_warn(f"Found unsupported keys in the optimizer configuration: {unknown}. "
                           f"They are ignored: the keys are {', '.join(_DICT_KEYS)}; remove "
                           "the others from the output of `configure_optimizers`.",
                           category=RuntimeWarning)
        if not _is_optimizer(item.get("optimizer")):
            raise bad("the dict needs 'optimizer': a torch.optim.Optimizer")
        optimizers.append(item["optimizer"])
        if item.get("lr_scheduler") is not None:
            config = _scheduler_config(item["lr_scheduler"], bad)
            if config.monitor is None and item.get("monitor"):
                config.monitor = item["monitor"]
            schedulers.append(config)
    return optimizers, schedulers


def _scheduler_config(obj: Any, bad: Callable[[str], Exception]) -> LRSchedulerConfig:
    if isinstance(obj, Mapping):
        unknown = set(obj) - set(_SCHEDULER_KEYS)
        if unknown:  # Lightning warns and drops them
            rank_zero_warn(f"Found unsupported keys in the lr scheduler dict: {unknown}. HINT: "
                           "remove them from the output of `configure_optimizers` (they are "
                           f"ignored; its keys are {', '.join(_SCHEDULER_KEYS)}).",
                           category=RuntimeWarning)
            obj = {k: v for k, v in obj.items() if k not in unknown}
        if "scheduler" not in obj:
            raise bad(f"the lr_scheduler dict has no 'scheduler' (given: "
                      f"{sorted(obj, key=str)}); its keys are {', '.join(_SCHEDULER_KEYS)}")
        config = LRSchedulerConfig(**obj)
        config.timing_keys = tuple(sorted(set(obj) & {"interval", "frequency", "monitor",
                                                      "strict"}))
    else:
        config = LRSchedulerConfig(obj)
    if not hasattr(config.scheduler, "step") or not hasattr(config.scheduler, "state_dict"):
        raise bad(f"{type(config.scheduler).__name__} is not a learning-rate scheduler")
    if config.interval not in ("epoch", "step"):
        raise bad(f"interval={config.interval!r} must be 'epoch' or 'step'")
    if isinstance(config.frequency, bool) or not isinstance(config.frequency, int) or \
            config.frequency < 1:
        raise bad(f"frequency={config.frequency!r} must be a positive int")
    return config


def _short(obj: Any) -> str:
    text = repr(obj)
    return text if len(text) < 80 else f"a {type(obj).__name__}"


class OptimizerWrapper:
    """What ``self.optimizers()`` returns under manual optimization: ``step`` goes through the
    strategy and precision (loss scaling, hooks) and counts the global step."""

    def __init__(self, optimizer: Any, trainer: Any) -> None:
        self.optimizer = optimizer
        self._trainer = trainer

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        return self._trainer.optimization.manual_step(self.optimizer, closure)

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)

    @contextlib.contextmanager
    def toggle_model(self, sync_grad: bool = True) -> Iterator[None]:
        """Only this optimizer's parameters require grad inside (``Module.toggle_optimizer``);
        ``sync_grad=False`` also skips the gradient reduction across processes for backwards
        inside (the strategy's ``no_backward_sync``): accumulate with it, and make the last
        backward before ``step()`` one with ``sync_grad=True``."""
        module = self._trainer.module
        sync = contextlib.nullcontext() if sync_grad else \
            self._trainer.strategy.no_backward_sync()
        with sync, module.toggled_optimizer(self):
            yield

    def __getattr__(self, name: str) -> Any:
        return getattr(self.optimizer, name)
