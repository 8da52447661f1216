"""``FSDPStrategy``: FSDP2 — parameters, gradients and optimizer state sharded across ranks.

``auto_wrap_policy``: module classes (or their names) to shard as their own units, e.g.
``{TransformerBlock}``; the root module is always sharded. ``cpu_offload=True`` keeps sharded
parameters on the CPU between uses (CUDA only: on the CPU they are there already).
``state_dict_type``: ``"full"`` checkpoints are one file with ordinary tensors (rank 0 writes
it); ``"sharded"`` checkpoints are a directory written by every rank through
``torch.distributed.checkpoint``. Both are fulmen's canonical checkpoint: any strategy, at any
world size, resumes from either. Mixed precision comes from the Trainer's precision.

``sharding_strategy`` (Lightning's spelling): ``"FULL_SHARD"`` (default) shards over every
rank; ``"SHARD_GRAD_OP"`` keeps parameters gathered from forward to backward
(``reshard_after_forward=False``); ``"HYBRID_SHARD"`` (HSDP) builds a 2-D mesh
``("replicate", "shard")`` of shape ``(num_nodes, processes per node)``: parameters are sharded
within a node and replicated across nodes, so the large all-gathers stay on the node's fast
links; ``"_HYBRID_SHARD_ZERO2"`` is that without resharding after forward; ``"NO_SHARD"``
replicates everything (mesh ``(world size, 1)``), like DDP. ``activation_checkpointing_policy``:
module classes (or a predicate) whose activations are recomputed in backward.

Manual optimization (``automatic_optimization = False``) works as under DDP: each
``manual_backward`` averages the gradients over the ranks (see ``fulmen_strategies.fsdp.manual``
for how the steps are split into FSDP forwards). Parameters are gathered when the submodules
that own them are called: use them through module calls, not directly in ``training_step``.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterable, Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import torch
from torch.distributed.tensor import DTensor

from fulmen import ConfigurationError
from fulmen_strategies import activation_checkpointing as ac
from fulmen_strategies.fsdp import SPEC
from fulmen_strategies.parallel import ParallelStrategy

if TYPE_CHECKING:
    from fulmen_strategies.fsdp.manual import ManualForwards

_STEPS = ("training_step", "validation_step", "test_step", "predict_step")
#: sharding_strategy -> (hybrid: replicate across nodes, reshard_after_forward)
SHARDING_STRATEGIES = {"FULL_SHARD": (False, True), "SHARD_GRAD_OP": (False, False),
                       "HYBRID_SHARD": (True, True), "_HYBRID_SHARD_ZERO2": (True, False),
                       "NO_SHARD": (False, False)}
HSDP_DIMS = ("replicate", "shard")


class FSDPStrategy(ParallelStrategy):
    shards_parameters = True
    reseeds_at_setup = frozenset({"Trainer", "Lite"})  # Lightning's and Fabric's FSDP both do
    name = SPEC.name  # the registered name, from the plugin's record
    def __init__(self, auto_wrap_policy: Iterable[type | str] | None = None,
                 cpu_offload: bool = False, reshard_after_forward: bool | None = None,
                 state_dict_type: str = "full", process_group_backend: str | None = None,
                 timeout: float | timedelta | None = None,
                 rendezvous_timeout: float | timedelta | None = None,
                 sharding_strategy: Any = "FULL_SHARD",
                 activation_checkpointing_policy: ac.Policy | None = None) -> None:
        super().__init__(process_group_backend, timeout, rendezvous_timeout)
        owner = type(self).__name__
        if state_dict_type not in ("full", "sharded"):
            raise ConfigurationError(f"{owner}(state_dict_type={state_dict_type!r}): use "
                                     "'full' (one file) or 'sharded' (a directory per save)")
        # torch's ShardingStrategy enum members are accepted by name, as in Lightning
        sharding = sharding_strategy.name if isinstance(sharding_strategy, enum.Enum) \
            else sharding_strategy
        if sharding not in SHARDING_STRATEGIES:
            raise ConfigurationError(
                f"{owner}(sharding_strategy={sharding_strategy!r}): use one of "
                f"{', '.join(map(repr, SHARDING_STRATEGIES))}")
        self.hybrid, resharding = SHARDING_STRATEGIES[sharding]
        if reshard_after_forward is not None and reshard_after_forward != resharding:
            raise ConfigurationError(
                f"{owner}(sharding_strategy={sharding!r}, reshard_after_forward="
                f"{reshard_after_forward}): {sharding!r} means reshard_after_forward="
                f"{resharding}; give one of the two")
        self.sharding_strategy = sharding
        self.auto_wrap_policy = set(auto_wrap_policy or ())
        self.cpu_offload = cpu_offload
        self.reshard_after_forward = resharding
        self.state_dict_type = state_dict_type
        self.activation_checkpointing_policy = activation_checkpointing_policy
        self._checkpointed = ac.check_policy(owner, activation_checkpointing_policy)
        self.optimizers: list[Any] = []
        self._in_training_step = False
        self._sharding_mesh: Any = None
        self._manual: ManualForwards | None = None
        self._training_step: Any = None  # the root's training_step without FSDP's forward

    @property
    def device_mesh(self) -> Any:
        """The mesh the model is sharded over, once wrapped: 1-D, or 2-D ``("replicate",
        "shard")`` for hybrid sharding and ``NO_SHARD``; None before (and on one process)."""
        return self._sharding_mesh

    def sharding_mesh_shape(self) -> tuple[int, ...]:
        """The shape of the mesh ``fully_shard`` gets: ``(world_size,)``, or ``(replicate,
        shard)`` for hybrid sharding (``(num_nodes, processes per node)``) and ``NO_SHARD``
        (``(world_size, 1)``)."""
        world = self.world_size
        if self.sharding_strategy == "NO_SHARD":
            return (world, 1)
        if not self.hybrid:
            return (world,)
        nodes = max(self.num_nodes, 1)
        if world % nodes:
            raise ConfigurationError(
                f"{type(self).__name__}(sharding_strategy={self.sharding_strategy!r}): "
                f"{world} processes do not split evenly over num_nodes={nodes}")
        return (nodes, world // nodes)

    # ------------------------------------------------------------------ wrapping

    def mixed_precision_policy(self) -> Any:
        """FSDP2's ``MixedPrecisionPolicy`` from the precision's contract: parameters are
        gathered in its ``compute_dtype`` (when lower than float32) and gradients reduced in its
        ``reduce_dtype``. ``model_parallel`` users pass it to their own ``fully_shard`` calls:
        ``fully_shard(block, mesh=..., mp_policy=strategy.mixed_precision_policy())``."""
        from torch.distributed.fsdp import MixedPrecisionPolicy

        compute = self.precision.compute_dtype
        reduce = self.precision.reduce_dtype
        if compute is None or compute in (torch.float32, torch.float64):
            return MixedPrecisionPolicy(reduce_dtype=reduce)
        return MixedPrecisionPolicy(param_dtype=compute, reduce_dtype=reduce)

    def _wraps(self, module: torch.nn.Module) -> bool:
        return any(isinstance(module, c) if isinstance(c, type) else type(module).__name__ == c
                   for c in self.auto_wrap_policy)

    def wrap_module(self, module: torch.nn.Module) -> torch.nn.Module:
        ac.apply(module, self._checkpointed, type(self).__name__)
        if not self.distributed:
            return module
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import (
            CPUOffloadPolicy,
            OffloadPolicy,
            fully_shard,
            register_fsdp_forward_method,
        )

        from fulmen_strategies.fsdp.manual import ManualForwards

        if self._sharding_mesh is None:
            shape = self.sharding_mesh_shape()
            self._sharding_mesh = init_device_mesh(
                self.root_device.type, shape, mesh_dim_names=HSDP_DIMS if len(shape) == 2 else None)
        mesh = self._sharding_mesh
        options = {"mesh": mesh, "mp_policy": self.mixed_precision_policy(),
                   "reshard_after_forward": self.reshard_after_forward,
                   "offload_policy": CPUOffloadPolicy() if self.cpu_offload and
                   self.root_device.type == "cuda" else OffloadPolicy()}
        for name, child in module.named_modules():
            if name and self._wraps(child):
                fully_shard(child, **options)
        fully_shard(module, **options)
        step = getattr(module, "training_step", None)  # before FSDP's forward wraps it
        self._training_step = step if callable(step) else None
        self._manual = ManualForwards(module) if callable(step) else None
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
        module, manual = self.module, self._manual
        assert module is not None
        if getattr(module, "automatic_optimization", True) or manual is None \
                or self._training_step is None:
            self._in_training_step = True
            try:  # one FSDP forward; the Trainer's backward follows it
                return super().step(method, *args, **kwargs)
            finally:
                self._in_training_step = False
        # manual optimization: FSDP forwards that each manual_backward ends (see .manual)
        with self.precision.forward_context(), manual.training_step(args, kwargs) as (a, kw):
            output = self._training_step(*a, **kw)
        return manual.end(output)

    def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        if self._manual is not None and self._manual.active:
            loss = self._manual.before_backward(loss)
        elif self._in_training_step:
            raise ConfigurationError(
                "a backward inside training_step under automatic optimization with "
                "strategy='fsdp': the Trainer runs the backward of the returned loss itself. "
                "For backwards of your own set self.automatic_optimization = False (manual "
                "optimization)")
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

        owned = {id(p) for p in self.module.parameters()}  # Lite may hold several modules
        return {"state_dict": get_model_state_dict(self.module),
                "optimizer_states": [get_optimizer_state_dict(self.module, o)
                                     for o in self.optimizers
                                     if all(id(p) in owned for g in o.param_groups
                                            for p in g["params"])]}
