"""Non-finite training losses are never silent, and cost no per-step host sync.

A loss on the CPU is read at once (the host has it: there is nothing to wait for, and holding
it would cost more than reading it). A loss on an accelerator is kept (detached, on its device)
with its step and batch index; the pending losses are checked together, with one host sync, at
the logging cadence (``log_every_n_steps``) and at the end of every epoch. The first non-finite
one is reported once per process through ``warnings``, naming the epoch, the global step and the
batch index.

With ``Trainer(detect_anomaly=True)`` (the user asked for a slow, careful run) the loss is
checked at every step before ``backward``, the processes agree on it (one ``max`` reduction), and
every rank raises :class:`fulmen.errors.NonFiniteError` at the same step.
"""

from __future__ import annotations

import warnings
from math import isfinite
from typing import TYPE_CHECKING, Any

import torch

from fulmen.errors import NonFiniteError, NonFiniteWarning

if TYPE_CHECKING:
    from fulmen.api.strategy import Strategy

_CAUSES = ("usual causes: non-finite values in the batch (check the inputs), a learning rate "
           "that is too high, or a log/division of zero in the loss")


class NonFiniteWatch:
    """Watches one fit's training losses; ``stop``: raise at the first non-finite one."""

    def __init__(self, strategy: Strategy, stop: bool, defer: bool | None = None) -> None:
        self.strategy, self.stop = strategy, stop
        #: losses wait for :meth:`check` (on an accelerator, where reading one would sync)
        #: rather than being read at once (on the CPU); default: from the strategy's device
        self.defer = strategy.root_device.type != "cpu" if defer is None else defer
        self.pending: list[tuple[torch.Tensor, int, int, int]] = []
        self.warned = False

    def record(self, loss: torch.Tensor, epoch: int, step: int, batch_idx: int) -> None:
        """Note the loss of one batch (``step``: the global step it trains)."""
        if type(loss) is not torch.Tensor:
            loss = _local(loss)
        if self.stop:
            self._agree(loss.detach(), epoch, step, batch_idx)
        elif self.warned:
            return
        elif self.defer:
            self.pending.append((loss.detach(), epoch, step, batch_idx))
        else:
            value: Any = loss.tolist()  # a 0-dim loss gives a float, no autograd dispatch
            if type(value) is not float:
                value = _value(loss)
            if not isfinite(value):
                self._warn(loss, epoch, step, batch_idx)

    def check(self) -> None:
        """Look at the pending losses (one host sync); warn once about the first bad one."""
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        losses = [loss for loss, *_ in pending]
        try:  # the usual case, 0-dim losses on one device: one op, nothing per loss
            stacked = torch.stack(losses)
        except RuntimeError:  # shapes () and (1,) mixed
            stacked = torch.stack([loss.reshape(()) for loss in losses])
        finite = torch.isfinite(stacked).reshape(len(losses), -1).all(1)
        if bool(finite.all()):
            return
        first = int((~finite).nonzero()[0])
        self._warn(*pending[first])

    def _warn(self, loss: torch.Tensor, epoch: int, step: int, batch_idx: int) -> None:
        self.warned = True
        warnings.warn(NonFiniteWarning(
            f"{self._rank()}the training loss is {loss.detach().item()} at epoch {epoch}, global "
            f"step {step}, batch_idx {batch_idx}; training goes on and the weights are likely "
            f"non-finite from here ({_CAUSES}). Trainer(detect_anomaly=True) stops at the first "
            "non-finite loss"), stacklevel=3)

    def _agree(self, loss: torch.Tensor, epoch: int, step: int, batch_idx: int) -> None:
        bad = (~torch.isfinite(loss)).to(torch.float32)
        if self.strategy.world_size > 1:
            bad = self.strategy.reduce(bad, "max")
        if not bool(bad):
            return
        mine = not bool(torch.isfinite(loss))
        what = f"is {loss.item()}" if mine else "is non-finite on another rank"
        raise NonFiniteError(
            f"{self._rank()}the training loss {what} at epoch {epoch}, global step {step}, "
            f"batch_idx {batch_idx}; stopping because Trainer(detect_anomaly=True) ({_CAUSES}). "
            "Every process stops at this step")

    def _rank(self) -> str:
        world = self.strategy.world_size
        return f"rank {self.strategy.global_rank}/{world}: " if world > 1 else ""


def loss_of_output(output: Any) -> torch.Tensor | None:
    """The scalar loss in a manual-optimization step's output, if it returned one."""
    loss = output.get("loss") if isinstance(output, dict) else output
    if isinstance(loss, torch.Tensor) and loss.numel() == 1:
        return loss
    return None


def _local(loss: torch.Tensor) -> torch.Tensor:
    """This process's part of a DTensor loss (a tensor-parallel loss): checked without a
    collective (a shard or partial sum that is finite everywhere sums to a finite loss, and a
    non-finite one is reported by the rank that holds it). Other tensors as they are."""
    if torch.distributed.is_available():
        from torch.distributed.tensor import DTensor

        if isinstance(loss, DTensor):
            return loss.to_local()
    return loss


def _value(loss: torch.Tensor) -> float:
    """A one-element tensor's value (``tolist``: no autograd dispatch, no detached view)."""
    value: Any = loss.tolist()
    while type(value) is list:
        value = value[0]
    return float(value)
