"""What every loop does to a batch before its step, and around it: the transfer hooks, the
sampler's epoch, the grad mode of evaluation, the random state kept across the sanity check, the
profiler's timing of a step, ``batch_idx`` passed only to a step that takes it."""

from __future__ import annotations

import contextlib
import inspect
import math
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch

from fulmen.api.precision import Precision
from fulmen.module import Module
from fulmen.seed import rng_states, set_rng_states

if TYPE_CHECKING:
    from fulmen.trainer.host import TrainerHost

_TRANSFER_HOOKS = ("on_before_batch_transfer", "transfer_batch_to_device",
                   "on_after_batch_transfer")


@contextlib.contextmanager
def preserved_rng() -> Iterator[None]:
    """Run the block with the random state put back afterwards (the sanity check)."""
    state = rng_states()
    try:
        yield
    finally:
        set_rng_states(state)


def make_transfer(trainer: TrainerHost) -> Callable[[Any, int], Any] | None:
    """The batch-transfer function, or None when batches need nothing (CPU, no hooks).

    Each of the three transfer hooks comes from the DataModule when it overrides it, else
    from the module (Lightning's rule)."""
    from fulmen.datamodule import DataModule

    module, strategy, datamodule = trainer.module, trainer.strategy, trainer.datamodule
    assert module is not None
    owners: list[Any] = []
    for name in _TRANSFER_HOOKS:
        dm_over = datamodule is not None and \
            getattr(type(datamodule), name) is not getattr(DataModule, name)
        if dm_over and overridden(module, name):
            warnings.warn(f"{name} is overridden in both the module and the DataModule; the "
                          "DataModule's is used", stacklevel=3)
        owners.append(datamodule if dm_over else module)
    hooks = any(overridden(module, h) for h in _TRANSFER_HOOKS) \
        or any(o is datamodule for o in owners)
    precision = strategy.precision
    converts = type(precision).convert_input is not Precision.convert_input
    device = strategy.root_device
    if not hooks and not converts and device.type == "cpu":
        return None
    before, move, after = (getattr(o, n) for o, n in zip(owners, _TRANSFER_HOOKS))

    def transfer(batch: Any, dataloader_idx: int = 0) -> Any:
        batch = before(batch, dataloader_idx)
        batch = move(batch, device, dataloader_idx)
        batch = after(batch, dataloader_idx)
        return precision.convert_input(batch)

    return transfer


def set_epoch(loader: Any, epoch: int) -> None:
    """Tell the loader's sampler (or batch sampler's) which epoch starts, for its shuffling."""
    for holder in (loader, getattr(loader, "sampler", None),
                   getattr(getattr(loader, "batch_sampler", None), "sampler", None)):
        if holder is not None and callable(getattr(holder, "set_epoch", None)):
            holder.set_epoch(epoch)


def no_grad(trainer: TrainerHost) -> Any:
    """``torch.inference_mode`` (``Trainer(inference_mode=True)``, the default) or
    ``torch.no_grad`` for evaluation and prediction. Inside fit, validation uses no_grad so
    tensors it creates can still meet training ones; over gloo, whose collectives refuse
    inference tensors, no_grad too (as Lightning)."""
    import torch.distributed as dist

    gloo = dist.is_available() and dist.is_initialized() and dist.get_backend() == "gloo"
    if trainer.inference_mode and trainer.state.fn != "fit" and not gloo:
        return torch.inference_mode()
    return torch.no_grad()


def takes_dataloader_idx(step: Any) -> bool:
    """Whether a ``*_step`` accepts a third argument, the dataloader index."""
    params = inspect.signature(step).parameters
    return "dataloader_idx" in params or len(params) >= 3 or any(
        p.kind is p.VAR_POSITIONAL for p in params.values())


def takes_batch_idx(step: Any) -> bool:
    """Whether a ``*_step`` takes ``batch_idx``: Lightning passes it only then (a parameter
    named so, a second positional parameter, or ``*args``)."""
    params = inspect.signature(step).parameters.values()
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return any(p.name == "batch_idx" or p.kind is p.VAR_POSITIONAL for p in params) or \
        len(positional) >= 2


def batch_idx_as_taken(call: Callable[..., Any], step: Any, named: bool) -> Callable[..., Any]:
    """``call`` (``call(batch, batch_idx, ...)``, or with the method name first when ``named``)
    without ``batch_idx`` for a ``step`` that does not take it."""
    if takes_batch_idx(step):
        return call
    if named:
        return lambda method, batch, batch_idx, *extra: call(method, batch, *extra)
    return lambda batch, batch_idx, *extra: call(batch, *extra)


def profiled_step(profiler: Any, step: Any) -> Any:
    """``strategy.step``, timed as ``[Strategy]<method>`` when a profiler records."""
    if profiler is None:
        return step

    def timed(method: str, *args: Any) -> Any:
        with profiler.profile(f"[Strategy]{method}"):
            return step(method, *args)

    return timed


def overridden(module: Module, name: str) -> bool:
    """Whether the module overrides ``Module.<name>``: in its class, or with a callable assigned
    to the instance (which Lightning calls too)."""
    return getattr(type(module), name) is not getattr(Module, name) or \
        callable(vars(module).get(name))


def count_from(start: int) -> Iterator[int]:
    i = start
    while True:
        yield i
        i += 1


def first_batches(loader: Any, count: int | float) -> Iterator[tuple[int, Any]]:
    """``(batch_idx, batch)`` for the first ``count`` batches of ``loader`` (all of them for
    ``math.inf``), never asking the loader for one more (Lightning stops at the limit too: a
    loader whose iterator fails past its length, like ``zip(..., strict=True)``, is fine)."""
    indices = count_from(0) if count == math.inf else range(int(count))
    return zip(indices, loader)

