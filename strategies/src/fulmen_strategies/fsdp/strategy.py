"""``FSDPStrategy``: FSDP2 — parameters, gradients and optimizer state sharded across ranks.

``auto_wrap_policy``: module classes (or their names) to shard as their own units, e.g.
``{TransformerBlock}``; the root module is always sharded. ``cpu_offload=True`` keeps sharded
parameters on the CPU between uses (CUDA only: on the CPU they are there already).
``state_dict_type``: ``"full"`` checkpoints are one file with ordinary tensors (rank 0 writes
it); ``"sharded"`` checkpoints are a directory written by every rank through
``torch.distributed.checkpoint``. Both are fulmen's canonical checkpoint: any strategy, at any
world size, resumes from either. Mixed precision comes from the Trainer's precision.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from datetime import timedelta
from typing import Any

import torch
from torch.distributed.tensor import DTensor

from fulmen import ConfigurationError
from fulmen_strategies.parallel import ParallelStrategy

_STEPS = ("training_step", "validation_step", "test_step", "predict_step")


class FSDPStrategy(ParallelStrategy):
    shards_parameters = True
    name = "fsdp"
    def __init__(self, auto_wrap_policy: Iterable[type | str] | None = None,
                 cpu_offload: bool = False, reshard_after_forward: bool = True,
                 state_dict_type: str = "full", process_group_backend: str | None = None,
                 timeout: float | timedelta | None = None,
                 rendezvous_timeout: float | timedelta | None = None) -> None:
        super().__init__(process_group_backend, timeout, rendezvous_timeout)
        if state_dict_type not in ("full", "sharded"):
            raise ConfigurationError(f"FSDPStrategy(state_dict_type={state_dict_type!r}): use "
                                     "'full' (one file) or 'sharded' (a directory per save)")
        self.auto_wrap_policy = set(auto_wrap_policy or ())
        self.cpu_offload = cpu_offload
        self.reshard_after_forward = reshard_after_forward
        self.state_dict_type = state_dict_type
        self.optimizers: list[Any] = []
        self._in_training_step = False

    # ------------------------------------------------------------------ wrapping

    def _mixed_precision(self) -> Any:
        from torch.distributed.fsdp import MixedPrecisionPolicy

        dtype = self.precision.compute_dtype
        if dtype is None or dtype in (torch.float32, torch.float64):
            return MixedPrecisionPolicy()
        true_half = self.precision.param_dtype == dtype  # else parameters stay float32
        return MixedPrecisionPolicy(param_dtype=dtype,
                                    reduce_dtype=dtype if true_half else torch.float32)

    def _wraps(self, module: torch.nn.Module) -> bool:
        return any(isinstance(module, c) if isinstance(c, type) else type(module).__name__ == c
                   for c in self.auto_wrap_policy)

    def wrap_module(self, module: torch.nn.Module) -> torch.nn.Module:
        if not self.distributed:
            return module
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import (
            CPUOffloadPolicy,
            OffloadPolicy,
            fully_shard,
            register_fsdp_forward_method,
        )

        mesh = init_device_mesh(self.root_device.type, (self.world_size,))
        options = {"mesh": mesh, "mp_policy": self._mixed_precision(),
                   "reshard_after_forward": self.reshard_after_forward,
                   "offload_policy": CPUOffloadPolicy() if self.cpu_offload and
                   self.root_device.type == "cuda" else OffloadPolicy()}
        for name, child in module.named_modules():
            if name and self._wraps(child):
                fully_shard(child, **options)
        fully_shard(module, **options)
        for method in _STEPS:  # steps unshard the root like forward does
            if callable(getattr(module, method, None)):
                register_fsdp_forward_method(module, method)
        return module

    def setup_optimizers(self, optimizers: list[Any]) -> list[Any]:
        self.optimizers = list(optimizers)
        return optimizers

    def step(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if method != "training_step" or not self.distributed:
            return super().step(method, *args, **kwargs)
        self._in_training_step = True
        try:
            return super().step(method, *args, **kwargs)
        finally:
            self._in_training_step = False

    def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        if self._in_training_step:  # manual optimization: a backward inside training_step
            raise ConfigurationError(
                "manual optimization (manual_backward inside training_step) is not supported "
                "with strategy='fsdp' yet: the backward runs inside FSDP2's forward, before it "
                "sets up the gradient reduce-scatter, so the ranks would not average their "
                "gradients. Use automatic optimization, or strategy='ddp', 'deepspeed' or "
                "'ddp_sharded' for manual optimization")
        super().backward(loss, *args, **kwargs)

    @contextlib.contextmanager
    def no_backward_sync(self) -> Iterator[None]:
        """Backwards inside accumulate unsharded gradients locally; the first backward after
        reduce-scatters the sum (FSDP2's ``set_requires_gradient_sync``)."""
        from torch.distributed.fsdp import FSDPModule

        module = self.module
        if not self.distributed or not isinstance(module, FSDPModule):
            yield
            return
        module.set_requires_gradient_sync(False)
        try:
            yield
        finally:
            module.set_requires_gradient_sync(True)

    def clip_gradients(self, module: torch.nn.Module, optimizer: Any, clip_val: float,
                       algorithm: str = "norm") -> Any:
        if algorithm == "value" or not self.distributed:
            return super().clip_gradients(module, optimizer, clip_val, algorithm)
        self.precision.unscale_gradients(optimizer)
        params = [p for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        norm = torch.nn.utils.get_total_norm([p.grad for p in params])
        norm = norm.full_tensor() if isinstance(norm, DTensor) else norm
        torch.nn.utils.clip_grads_with_norm_(params, clip_val, norm)
        return norm

    # ------------------------------------------------------------------ state dicts

    def _options(self, full: bool) -> Any:
        from torch.distributed.checkpoint.state_dict import StateDictOptions

        return StateDictOptions(full_state_dict=full, cpu_offload=full)

    def module_state_dict(self, module: torch.nn.Module | None = None) -> dict[str, Any]:
        if not self.distributed:
            return super().module_state_dict(module)
        from torch.distributed.checkpoint.state_dict import get_model_state_dict

        target = module if module is not None else self.module
        assert target is not None
        return get_model_state_dict(target, options=self._options(
            self.state_dict_type == "full"))

    def load_module_state_dict(self, state: dict[str, Any], strict: bool = True,
                               module: torch.nn.Module | None = None) -> Any:
        if not self.distributed:
            return super().load_module_state_dict(state, strict, module)
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

        target = module if module is not None else self.module
        assert target is not None
        full = not any(isinstance(v, DTensor) for v in state.values())
        return set_model_state_dict(target, state, options=StateDictOptions(
            full_state_dict=full, strict=strict))

    def optimizer_state(self, optimizer: Any) -> dict[str, Any]:
        if not self.distributed:
            return super().optimizer_state(optimizer)
        from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

        assert self.module is not None
        return get_optimizer_state_dict(self.module, optimizer, options=self._options(
            self.state_dict_type == "full"))

    def load_optimizer_state(self, optimizer: Any, state: dict[str, Any]) -> None:
        if not self.distributed:
            return super().load_optimizer_state(optimizer, state)
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            set_optimizer_state_dict,
        )

        from fulmen.checkpoint import canonical

        if not canonical.is_keyed_by_name(state):  # torch's numbered form: name them
            names = canonical.param_names(self.module, optimizer)
            if names is None:
                raise ConfigurationError("FSDP loads optimizer states keyed by parameter names; "
                                         "this optimizer updates tensors outside the model")
            state = canonical.by_name(state, names)
        if not state.get("state"):  # a stateless optimizer (plain SGD): only hyper-parameters
            for group, saved in zip(optimizer.param_groups, state.get("param_groups", [])):
                group.update({k: v for k, v in saved.items() if k != "params"})
            return None
        assert self.module is not None
        full = self._is_full(state)
        set_optimizer_state_dict(self.module, optimizer, state,
                                 options=StateDictOptions(full_state_dict=full))
        return None

    @staticmethod
    def _is_full(state: Any) -> bool:
        found: list[bool] = []

        def walk(obj: Any) -> None:
            if isinstance(obj, DTensor):
                found.append(True)
            elif isinstance(obj, dict):
                for value in obj.values():
                    walk(value)
            elif isinstance(obj, list | tuple):
                for value in obj:
                    walk(value)

        walk(state)
        return not found

    # ------------------------------------------------------------------ checkpoints

    @property
    def sharded_checkpoint(self) -> bool:
        return self.distributed and self.state_dict_type == "sharded"

    def checkpoint_template(self) -> dict[str, Any] | None:
        """Each rank's shards, so a directory checkpoint from any world size is read in
        parts (DCP reshards)."""
        if not self.distributed or self.module is None:
            return None
        from torch.distributed.checkpoint.state_dict import (
            get_model_state_dict,
            get_optimizer_state_dict,
        )

        return {"state_dict": get_model_state_dict(self.module),
                "optimizer_states": [get_optimizer_state_dict(self.module, o)
                                     for o in self.optimizers]}
