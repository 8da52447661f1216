"""The callables the per-batch paths use: a base class's method is passed over when nothing
overrides it and it would only forward the call (a Python frame less per batch, each).

Only ``type(x).method is Base.method`` is compared: an override anywhere in a plugin's class
keeps the full path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from fulmen.api.precision import Precision
from fulmen.api.strategy import Strategy


def direct_step(strategy: Strategy, method: str) -> Callable[..., Any] | None:
    """The module's bound ``method`` when ``strategy.step`` would only call it (neither the
    strategy's ``step`` nor its precision's ``forward_context`` adds anything); else None."""
    if type(strategy).step is not Strategy.step or \
            type(strategy.precision).forward_context is not Precision.forward_context:
        return None
    assert strategy.module is not None, "setup_module() first"
    return getattr(strategy.module, method)


def direct_backward(strategy: Strategy) -> Callable[..., None]:
    """``strategy.backward``, or ``Tensor.backward`` when neither the strategy nor its
    precision changes backward."""
    if type(strategy).backward is Strategy.backward and \
            type(strategy.precision).backward is Precision.backward:
        return torch.Tensor.backward
    return strategy.backward


def direct_optimizer_step(strategy: Strategy) -> Callable[..., Any]:
    """``strategy.optimizer_step``, or the precision's when the strategy adds nothing."""
    if type(strategy).optimizer_step is Strategy.optimizer_step:
        return strategy.precision.optimizer_step
    return strategy.optimizer_step


def plain_optimizer_step(strategy: Strategy) -> bool:
    """Whether ``strategy.optimizer_step(optimizer)`` without a closure only calls
    ``optimizer.step()`` (neither the strategy nor its precision changes it)."""
    return type(strategy).optimizer_step is Strategy.optimizer_step and \
        type(strategy.precision).optimizer_step is Precision.optimizer_step


def plain_forward(strategy: Strategy) -> bool:
    """Whether the precision does nothing to a forward's inputs, outputs or context (its
    ``convert_input``, ``convert_output`` and ``forward_context`` are the base class's)."""
    precision = type(strategy.precision)
    return all(getattr(precision, name) is getattr(Precision, name)
               for name in ("convert_input", "convert_output", "forward_context"))
