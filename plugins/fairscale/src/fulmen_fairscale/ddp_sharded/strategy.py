"""``ShardedDDPStrategy``: data parallel training with the optimizer state and the gradients
sharded across processes (FairScale ``OSS`` + ``ShardedDataParallel``, ZeRO stage 2).

Each rank keeps the full model, but steps only its shard of the parameters: the user's optimizer
is rebuilt as ``OSS(params, optim=type(optimizer), **defaults)`` (learning-rate schedulers keep
working: they share the parameter groups), gradients are reduced to the rank that owns them, and
the updated shards are broadcast back. Checkpoints hold the consolidated optimizer state (pulled
to rank 0 on save), so the file is an ordinary one that any strategy can resume from.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import torch
from fairscale.nn.data_parallel import ShardedDataParallel
from fairscale.optim import OSS

from fulmen import ConfigurationError
from fulmen.api import as_messages
from fulmen.api.naming import name_for
from fulmen.checkpoint import canonical
from fulmen.utilities.forward_redirection import StepDispatcher
from fulmen_fairscale.ddp_sharded import RECORDS
from fulmen_fairscale.ddp_sharded.scaler import ShardedGradScaler, sharded_copy
from fulmen_strategies.ddp.strategy import DDPStrategy


class ShardedForward(torch.nn.Module):
    """What steps and Lite's forward go through: the plain module until the optimizers exist,
    then ``ShardedDataParallel`` (which needs them, and must see every training forward to
    reduce the next backward's gradients)."""

    def __init__(self, module: torch.nn.Module) -> None:
        super().__init__()
        self.module = module
        self.sharded: ShardedDataParallel | None = None

    def forward(self, *args: Any, fulmen_step: str = "forward", **kwargs: Any) -> Any:
        if self.sharded is not None:
            return self.sharded(*args, fulmen_step=fulmen_step, **kwargs)
        if fulmen_step == "forward":
            return self.module(*args, **kwargs)
        return getattr(self.module, fulmen_step)(*args, **kwargs)


class ShardedDDPStrategy(DDPStrategy):
    """``start_method``: ``"popen"`` (``ddp_sharded``) or ``"spawn"`` (``ddp_sharded_spawn``).
    ``broadcast_buffers``, ``reduce_buffer_size``, ``auto_refresh_trainable`` and
    ``reduce_fp16`` go to ``ShardedDataParallel``; ``broadcast_fp16`` to ``OSS``.

    ``reduce_buffer_size`` defaults to 0 (one reduce per gradient): with torch 2.13, fairscale
    0.4.13's gradient buckets (a size > 0) gave gradients different from DDP's on CPU/gloo, so
    a bucket size is refused on the CPU.
    """

    shards_parameters = True  # OSS shards the optimizer state

    name = RECORDS[0].name  # the plugin's base name, from its records

    def __init__(self, start_method: str = "popen", broadcast_buffers: bool = True,
                 reduce_buffer_size: int = 0, auto_refresh_trainable: bool = True,
                 reduce_fp16: bool = False, broadcast_fp16: bool = False,
                 process_group_backend: str | None = None,
                 timeout: float | timedelta | None = None,
                 rendezvous_timeout: float | timedelta | None = None) -> None:
        super().__init__(start_method=start_method, process_group_backend=process_group_backend,
                         timeout=timeout, rendezvous_timeout=rendezvous_timeout)
        if type(self).name == ShardedDDPStrategy.name:  # the registered name of these arguments
            self.name = name_for(RECORDS, {"start_method": start_method},
                                 {"start_method": "popen"}) or self.name
        self.sdp_kwargs = {"broadcast_buffers": broadcast_buffers,
                           "reduce_buffer_size": reduce_buffer_size,
                           "auto_refresh_trainable": auto_refresh_trainable,
                           "reduce_fp16": reduce_fp16}
        self.broadcast_fp16 = broadcast_fp16
        self._forward: ShardedForward | None = None
        self._originals: dict[int, torch.optim.Optimizer] = {}  # id(OSS) -> user's optimizer

    def check_selection(self, selection: Any) -> list[str]:
        """What this strategy cannot run on (and what ``ddp`` cannot)."""
        problems = as_messages(super().check_selection(selection))
        size = self.sdp_kwargs["reduce_buffer_size"]
        if size and selection.accelerator.device_type == "cpu":
            problems.append(f"ShardedDDPStrategy(reduce_buffer_size={size}) on the CPU: "
                            "fairscale's gradient buckets give wrong gradients there with this "
                            "torch version; use reduce_buffer_size=0 (the default) on the CPU")
        return problems

    # ------------------------------------------------------------------ precision

    def setup_environment(self) -> None:
        super().setup_environment()
        scaler = self.precision.scaler
        if scaler is not None and self.distributed and not isinstance(scaler, ShardedGradScaler):
            # Each rank holds only its gradient shard: the inf/nan check must be agreed on.
            self.precision.scaler = sharded_copy(scaler, self.root_device.type)

    # ------------------------------------------------------------------ wrapping

    def wrap_module(self, module: torch.nn.Module) -> torch.nn.Module:
        if not self.distributed:
            return module
        self._forward = ShardedForward(module)
        return self._forward

    def setup_optimizers(self, optimizers: list[Any]) -> list[Any]:
        if not self.distributed:
            return optimizers
        sharded = [self._to_oss(o) for o in optimizers]
        if sharded and self._forward is not None:
            if self._forward.sharded is not None:  # fit again: new optimizers, a new reducer
                _release_gradient_hooks(self._forward.sharded)
            self._forward.sharded = ShardedDataParallel(
                StepDispatcher(self._forward.module), sharded_optimizer=sharded,
                **self.sdp_kwargs)
        return sharded

    def _to_oss(self, optimizer: Any) -> OSS:
        if isinstance(optimizer, OSS):
            return optimizer
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise ConfigurationError(
                f"strategy={self.name!r} shards torch.optim.Optimizer objects; got a "
                f"{type(optimizer).__name__}. Return a torch optimizer from "
                "configure_optimizers, or use strategy='ddp'")
        # The same parameter-group dicts: a scheduler stepping `optimizer` changes OSS's lr.
        sharded = OSS(params=optimizer.param_groups, optim=type(optimizer),
                      broadcast_fp16=self.broadcast_fp16, **optimizer.defaults)
        self._originals[id(sharded)] = optimizer
        return sharded

    def optimizer_step(self, optimizer: Any, closure: Callable[[], Any] | None = None,
                       after_closure: Callable[[], None] | None = None) -> Any:
        result = super().optimizer_step(optimizer, closure, after_closure)
        original = self._originals.get(id(optimizer))
        if original is not None:  # its scheduler would warn that it steps before the optimizer
            original._opt_called = True  # type: ignore[attr-defined]
        return result

    def step(self, method: str, *args: Any, **kwargs: Any) -> Any:
        forward = self._forward
        if method != "training_step" or forward is None or forward.sharded is None:
            return super(DDPStrategy, self).step(method, *args, **kwargs)
        with self.precision.forward_context():
            return forward(*args, fulmen_step=method, **kwargs)

    @contextlib.contextmanager
    def no_backward_sync(self) -> Iterator[None]:
        sharded = self._forward.sharded if self._forward is not None else None
        if sharded is None:
            yield
            return
        with sharded.no_sync():
            yield

    def clip_gradients(self, module: torch.nn.Module, optimizer: Any, clip_val: float,
                       algorithm: str = "norm") -> Any:
        if algorithm == "norm" and isinstance(optimizer, OSS):
            self.precision.unscale_gradients(optimizer)
            return optimizer.clip_grad_norm(clip_val)  # the norm over every rank's shard
        return super().clip_gradients(module, optimizer, clip_val, algorithm)

    # ------------------------------------------------------------------ checkpoints

    def optimizer_state(self, optimizer: Any) -> dict[str, Any]:
        """The full optimizer state on rank 0 (every rank sends its shard); ``{}`` elsewhere:
        only rank 0 writes the file."""
        if not isinstance(optimizer, OSS):
            return super().optimizer_state(optimizer)
        optimizer.consolidate_state_dict(recipient_rank=0)
        if not self.is_global_zero:
            return {}
        state = optimizer.state_dict()
        optimizer._all_states = []  # free the gathered shards until the next save
        names = canonical.param_names(self.module, optimizer)
        return canonical.by_name(state, names) if names is not None else state

    def load_optimizer_state(self, optimizer: Any, state: dict[str, Any]) -> None:
        """Every rank reads the full state (canonical, from any strategy) and keeps its own
        shard."""
        if not isinstance(optimizer, OSS):
            return super().load_optimizer_state(optimizer, state)
        state = canonical.numbered(self.module, optimizer, state)
        optimizer.load_state_dict({**state, "state": dict(state.get("state", {}))})
        original = self._originals.get(id(optimizer))
        if original is not None:  # loading made new group dicts: share them with the scheduler
            for mine, loaded in zip(original.param_groups, optimizer.param_groups):
                mine.update(loaded)
            optimizer.param_groups = original.param_groups
        return None



def _release_gradient_hooks(sharded: ShardedDataParallel) -> None:
    """The reducer being replaced must stop reducing: its gradient hooks would reduce every
    gradient a second time, to the ranks of optimizers that no longer step."""
    while sharded._grad_hooks:
        sharded._grad_hooks.pop().remove()
