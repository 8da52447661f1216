"""``Optimization``: the one owner of a Trainer's optimizers, schedulers and backward.

It parses ``configure_optimizers`` (through :func:`fulmen.trainer.optim.parse_optimizers`),
hands the optimizers to the strategy, runs backward with its hooks, builds what runs between
backward and the update (``on_before_optimizer_step``, gradient clipping), and steps the
optimizers ``self.optimizers()`` returns under manual optimization. The Trainer exposes it as
``trainer.optimization``; ``Module`` (``optimizers()``, ``lr_schedulers()``,
``manual_backward``) and the loops use only the members documented here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from fulmen.errors import ConfigurationError, FulmenError
from fulmen.module import Module
from fulmen.trainer.optim import LRSchedulerConfig, OptimizerWrapper, parse_optimizers
from fulmen.utilities.rank_zero import rank_zero_warn

if TYPE_CHECKING:
    from fulmen.trainer.host import TrainerHost


class Optimization:
    """Optimizers, schedulers and the backward pass of one Trainer."""

    def __init__(self, trainer: TrainerHost) -> None:
        self.trainer = trainer
        #: the optimizers, as the strategy set them up (``trainer.optimizers``)
        self.optimizers: list[Any] = []
        #: the schedulers and when they step (``trainer.lr_scheduler_configs``): the live list
        self.lr_scheduler_configs: list[LRSchedulerConfig] = []
        self._wrapped: list[OptimizerWrapper] = []

    def configure(self, model: Module) -> None:
        """``model.configure_optimizers()``, checked, set up by the strategy."""
        optimizers, self.lr_scheduler_configs = parse_optimizers(
            model.configure_optimizers(), model.automatic_optimization)
        _check_optimizers_cover(model, optimizers)
        self.optimizers = self.trainer.strategy.setup_optimizers(optimizers)
        if model.automatic_optimization and len(self.optimizers) > 1:
            raise ConfigurationError(
                f"configure_optimizers returned {len(self.optimizers)} optimizers; automatic "
                "optimization steps one. Set self.automatic_optimization = False in __init__ "
                "and step them yourself in training_step (self.optimizers())")

    def for_user(self, use_wrapper: bool) -> list[Any]:
        """What ``Module.optimizers()`` returns: wrappers whose ``step`` goes through the
        strategy and counts the global step, or the optimizers themselves."""
        if not self.optimizers:
            raise FulmenError("self.optimizers() has nothing to return: configure_optimizers "
                              "runs at the start of trainer.fit")
        if not use_wrapper:
            return list(self.optimizers)
        if [w.optimizer for w in self._wrapped] != self.optimizers:
            self._wrapped = [OptimizerWrapper(o, self.trainer) for o in self.optimizers]
        return list(self._wrapped)

    def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """Backward with its hooks, through the strategy and precision; through the module's
        ``backward`` when it overrides it."""
        trainer = self.trainer
        module, hooks = trainer.module, trainer.hooks
        assert hooks is not None and module is not None
        implemented = hooks.table  # a hook nothing implements is not called (every step)
        if "on_before_backward" in implemented:
            hooks("on_before_backward", loss)
        if type(module).backward is not Module.backward:
            kwargs["run_backward"] = module.backward
        trainer.strategy.backward(loss, *args, **kwargs)
        if "on_after_backward" in implemented:
            hooks("on_after_backward")

    def after_closure_for(self, optimizer: Any) -> Callable[[], None] | None:
        """What runs between backward and the update (hooks, clipping); None when nothing."""
        trainer = self.trainer
        module, hooks = trainer.module, trainer.hooks
        assert hooks is not None and module is not None
        clip_hook = type(module).configure_gradient_clipping is not \
            Module.configure_gradient_clipping
        if not (hooks.has("on_before_optimizer_step") or trainer.gradient_clip_val
                or (clip_hook and module.automatic_optimization)):
            return None
        return lambda: self._after_closure(optimizer)

    def _after_closure(self, optimizer: Any) -> None:
        trainer = self.trainer
        module, hooks = trainer.module, trainer.hooks
        assert hooks is not None and module is not None
        hooks("on_before_optimizer_step", optimizer)
        if module.automatic_optimization:  # manual optimization clips in training_step
            module.configure_gradient_clipping(
                optimizer, gradient_clip_val=trainer.gradient_clip_val,
                gradient_clip_algorithm=trainer.gradient_clip_algorithm)

    def manual_step(self, optimizer: Any, closure: Any) -> Any:
        """``step`` of what ``self.optimizers()`` returns (and of the optimizer an
        ``optimizer_step`` override receives): through the strategy, counting the step."""
        trainer = self.trainer
        out = trainer.strategy.optimizer_step(optimizer, closure,
                                              self.after_closure_for(optimizer))
        trainer.global_step += 1
        return out


def _check_optimizers_cover(model: Module, optimizers: list[Any]) -> None:
    """Warn, before the first step, of optimizers that could train nothing (Lightning runs
    them without a word)."""
    params = {id(p) for p in model.parameters()}
    for i, optimizer in enumerate(optimizers):
        mine = [p for group in optimizer.param_groups for p in group["params"]]
        if mine and not any(id(p) in params for p in mine):
            rank_zero_warn(
                f"optimizer {i} ({type(optimizer).__name__}) from configure_optimizers holds "
                f"{len(mine)} parameters, none of them {type(model).__name__}'s, so stepping "
                "it trains nothing of the model: build it from self.parameters() (a model "
                "created outside the module, or a copy?)", category=RuntimeWarning)
