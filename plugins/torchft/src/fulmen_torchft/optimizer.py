"""``CommitGate``: torchft's ``OptimizerWrapper`` as the Trainer and Lite drive it.

torchft's wrapper starts the quorum in ``zero_grad`` and asks ``should_commit`` in ``step``. In
fulmen the strategy owns the step's quorum (started by the training forward, before any
computation, whoever calls ``zero_grad`` and when), and ``step`` takes the closure the Trainer
hands it (torchft's refuses closures): closure, then the commit vote, then the update.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch
from torchft.optim import OptimizerWrapper


class CommitVote(Protocol):
    """What the gate needs from the strategy (``TorchFTStrategy``): torchft's manager and the
    step's vote."""

    manager: Any

    def commit_step(self) -> bool: ...


class CommitGate(OptimizerWrapper):
    """Steps ``optimizer`` only when the step commits; ``param_groups``, ``state`` and the
    state dicts are the optimizer's own (torchft's wrapper)."""

    def __init__(self, strategy: CommitVote, optimizer: torch.optim.Optimizer) -> None:
        super().__init__(strategy.manager, optimizer)
        self.strategy = strategy

    def zero_grad(self, set_to_none: bool = True) -> None:
        """The optimizer's own (the step's quorum is the strategy's)."""
        self.optim.zero_grad(set_to_none)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Run ``closure`` (forward and backward, which averaged the gradients over the
        quorum), then step the optimizer if torchft commits the step; returns the loss."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        if self.strategy.commit_step():
            self.optim.step()
        return loss

    def __repr__(self) -> str:
        return f"CommitGate({self.optim!r})"
