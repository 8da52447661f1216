"""The callables the per-batch paths use: a base class's method is passed over when nothing
overrides it and it would only forward the call (a Python frame less per batch, each).

Only ``type(x).method is Base.method`` is compared: an override anywhere in a plugin's class
keeps the full path.
"""

from __future__ import annotations

import functools
import inspect
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
    """What a backward outside ``strategy.step`` calls: ``Tensor.backward`` when neither the
    strategy (``Strategy.plain_backward_outside_step``) nor its precision changes backward,
    the precision's ``backward`` when only the precision does, else ``strategy.backward``."""
    if not strategy.plain_backward_outside_step():
        return strategy.backward
    if type(strategy.precision).backward is Precision.backward:
        return torch.Tensor.backward
    return strategy.precision.backward


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


def plain_step(strategy: Strategy) -> bool:
    """Whether ``strategy.step`` is the base class's (it customises no forward)."""
    return type(strategy).step is Strategy.step


def plain_forward(strategy: Strategy) -> bool:
    """Whether the precision does nothing to a forward's inputs, outputs or context (its
    ``convert_input``, ``convert_output`` and ``forward_context`` are the base class's)."""
    precision = type(strategy.precision)
    return all(getattr(precision, name) is getattr(Precision, name)
               for name in ("convert_input", "convert_output", "forward_context"))


#: torch's optimizers whose ``step(closure)`` calls the closure once, under ``enable_grad``,
#: before anything else that depends on it (LBFGS calls it many times: not listed)
_CLOSURE_FIRST = ("Adadelta", "Adafactor", "Adagrad", "Adam", "Adamax", "AdamW", "ASGD",
                  "Muon", "NAdam", "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam")


@functools.cache
def _closure_first_classes() -> frozenset[type]:
    """Those of them this torch has."""
    found = vars(torch.optim)
    return frozenset(found[name] for name in _CLOSURE_FIRST if name in found)


def closure_first(strategy: Strategy, optimizer: Any) -> bool:
    """Whether ``strategy``'s optimizer step with a closure is the same as calling the
    closure and then ``optimizer.step()``: neither the strategy nor its precision changes the
    step, the optimizer is one of torch's own (that class exactly, not a subclass), its ``step``
    is a real function (not replaced by a mock), and grad mode is on (as ``step`` would set it
    for the closure). The Trainer then saves the closure protocol's frames and grad-mode
    switch on every batch; the one difference is that the optimizer's step pre-hooks run
    after backward instead of before the forward."""
    if not plain_optimizer_step(strategy) or not torch.is_grad_enabled():
        return False
    kind, step = type(optimizer), optimizer.step
    return kind in _closure_first_classes() and inspect.isfunction(kind.step) and \
        (inspect.ismethod(step) or inspect.isfunction(step))
