"""Forward redirection: run a module's ``training_step`` (or any step method) *inside* the
forward of a wrapper such as ``DistributedDataParallel``, ``ShardedDataParallel`` or a DeepSpeed
engine, so that what the wrapper does around its forward (DDP's gradient-reduction hooks, ZeRO's
parameter gathering) sees the step.

    dispatcher = StepDispatcher(module)
    wrapper = DistributedDataParallel(dispatcher)
    wrapper(batch, batch_idx, fulmen_step="training_step")  # module.training_step(...)
    wrapper(x)                                              # module(x): the plain forward

Strategies that wrap the module use it: DDP, DP, FairScale's sharded DDP and DeepSpeed. A
third-party strategy may too; it is a public, documented helper.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

#: attributes kept as plain ones (neither modules, parameters nor buffers)
_PLAIN = frozenset({"in_step", "backward_in_step", "after_step", "target"})
_set = object.__setattr__  # per step: neither nn.Module's attribute checks nor a Python frame


class StepDispatcher(torch.nn.Module):
    """Wraps ``module``; ``dispatcher(*args, fulmen_step="training_step", **kwargs)`` runs
    ``module.training_step(*args, **kwargs)``, and without ``fulmen_step`` it is the module's
    own forward (what Lite calls).

    ``in_step`` is True while a step method runs (a strategy's ``backward`` reads it: a
    backward inside the step is manual optimization's). A strategy that runs such a backward
    sets ``backward_in_step``; ``after_step`` (a function, or None) is then called when the step
    ends (DDP: its reducer was prepared for each backward, not once more after the forward).
    """

    target: torch.nn.Module  # ``module``, as a plain attribute
    after_step: Callable[[], None] | None

    def __init__(self, module: torch.nn.Module) -> None:
        super().__init__()
        self.module = module
        self.in_step = False
        self.backward_in_step = False
        self.after_step = None

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _PLAIN:
            _set(self, name, value)
        else:
            super().__setattr__(name, value)
            if name == "module":  # also as a plain attribute: read without nn.Module's lookup
                _set(self, "target", value)

    def forward(self, *args: Any, fulmen_step: str = "forward", **kwargs: Any) -> Any:
        target = self.target
        if fulmen_step == "forward":
            return target(*args, **kwargs)
        _set(self, "in_step", True)
        _set(self, "backward_in_step", False)
        try:
            return getattr(target, fulmen_step)(*args, **kwargs)
        finally:
            _set(self, "in_step", False)
            if self.backward_in_step and self.after_step is not None:
                self.after_step()
