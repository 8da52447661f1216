"""Wrapping optimizers in ``hvd.DistributedOptimizer`` without losing what points at them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch


def is_distributed(optimizer: Any) -> bool:
    """Whether ``optimizer`` is already a Horovod ``DistributedOptimizer``."""
    return callable(getattr(optimizer, "synchronize", None)) and callable(
        getattr(optimizer, "skip_synchronize", None))


def named_parameters(module: torch.nn.Module | None, optimizer: torch.optim.Optimizer
                     ) -> list[tuple[str, torch.Tensor]]:
    """``(name, parameter)`` for every parameter ``optimizer`` updates: the module's names, and
    ``group<i>.param<j>`` for parameters outside the module. Horovod matches gradients across
    ranks by these names, so they must be the same on every rank (they are: same model)."""
    names = {id(p): n for n, p in module.named_parameters()} if module is not None else {}
    out: list[tuple[str, torch.Tensor]] = []
    for i, group in enumerate(optimizer.param_groups):
        for j, p in enumerate(group["params"]):
            out.append((names.get(id(p), f"group{i}.param{j}"), p))
    return out


def accept_set_to_none(optimizer: Any) -> None:
    """Horovod 0.28's ``zero_grad()`` takes no arguments; fulmen (like torch) passes
    ``set_to_none``. Horovod's own check (no zero_grad between backward and step) still runs."""
    horovod_zero_grad = optimizer.zero_grad
    torch_zero_grad = super(type(optimizer), optimizer).zero_grad

    def zero_grad(set_to_none: bool = True) -> None:
        if set_to_none or getattr(optimizer, "_handles", None):
            return horovod_zero_grad()
        return torch_zero_grad(set_to_none=False)

    optimizer.zero_grad = zero_grad


def load_keeping_groups(optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
    """``optimizer.load_state_dict(state)``, but the param-group dictionaries stay the same
    objects: ``hvd.DistributedOptimizer`` shares them with the user's optimizer (and its LR
    schedulers), and torch's loader would replace them with new ones."""
    groups = optimizer.param_groups
    optimizer.load_state_dict(state)
    for kept, loaded in zip(groups, optimizer.param_groups):
        kept.update(loaded)
    optimizer.param_groups = groups


def retarget_schedulers(schedulers: Iterable[Any], old: Any, new: Any) -> None:
    """Point LR schedulers built on ``old`` at its distributed replacement ``new`` (their
    ``optimizer.step()``-before-``scheduler.step()`` check then sees the right object)."""
    moved = False
    for scheduler in schedulers:
        if getattr(scheduler, "optimizer", None) is old:
            scheduler.optimizer = new
            moved = True
    if moved and not hasattr(new.step, "_wrapped_by_lr_sched"):
        step = new.step

        def tracked_step(*args: Any, **kwargs: Any) -> Any:
            new._opt_called = True  # what torch's LRScheduler records on the optimizer
            return step(*args, **kwargs)

        tracked_step._wrapped_by_lr_sched = True  # type: ignore[attr-defined]
        new.step = tracked_step
