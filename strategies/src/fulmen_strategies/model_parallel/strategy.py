"""``ModelParallelStrategy``: a 2-D device mesh that the model parallelises itself with.

The strategy builds ``device_mesh`` with Lightning's dimension names, ``("data_parallel",
"tensor_parallel")``; the model applies ``parallelize_module`` (tensor parallelism over
``device_mesh["tensor_parallel"]``) and ``fully_shard`` (FSDP2 over
``device_mesh["data_parallel"]``) — in the Trainer from ``Module.configure_model`` (which sees
``self.device_mesh``), in Lite through ``parallelize_fn(module, device_mesh)``, as in Fabric.

``data_parallel_size`` / ``tensor_parallel_size``: ``"auto"`` (Lightning's defaults: one
data-parallel group per node, tensor parallelism across the devices of a node) or ints whose
product is the world size. Data is sharded over the data-parallel dimension only: the ranks of a
tensor-parallel group see the same batches. ``reduce`` (and so ``self.log(sync_dist=True)``)
reduces over every rank, as in Lightning: a mean is the data-parallel mean (the ranks of a
tensor-parallel group hold the same value), a sum counts each tensor-parallel rank.
``activation_checkpointing_policy``: module classes (or
a predicate) whose activations are recomputed in backward. Modules created on the meta device
are materialised on each rank after parallelising (``to_empty`` + ``reset_parameters``), so no
rank ever holds the whole model. Checkpoints: a ``torch.distributed.checkpoint`` directory
written by every rank (``save_distributed_checkpoint=True``), or one full file from rank 0.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch

from fulmen import ConfigurationError
from fulmen_strategies import activation_checkpointing as ac
from fulmen_strategies import samplers
from fulmen_strategies.fsdp.strategy import FSDPStrategy
from fulmen_strategies.model_parallel import SPEC

MESH_DIMS = ("data_parallel", "tensor_parallel")


class ModelParallelStrategy(FSDPStrategy):
    name = SPEC.name  # the registered name, from the plugin's record

    def __init__(self, parallelize_fn: Callable[[torch.nn.Module, Any], torch.nn.Module] |
                 None = None, data_parallel_size: int | str = "auto",
                 tensor_parallel_size: int | str = "auto",
                 save_distributed_checkpoint: bool = True,
                 activation_checkpointing_policy: ac.Policy | None = None,
                 process_group_backend: str | None = None,
                 timeout: float | timedelta | None = None) -> None:
        super().__init__(state_dict_type="sharded" if save_distributed_checkpoint else "full",
                         process_group_backend=process_group_backend, timeout=timeout,
                         activation_checkpointing_policy=activation_checkpointing_policy)
        for name, value in (("data_parallel_size", data_parallel_size),
                            ("tensor_parallel_size", tensor_parallel_size)):
            if value != "auto" and (isinstance(value, bool) or not isinstance(value, int)
                                    or value < 1):
                raise ConfigurationError(f"ModelParallelStrategy({name}={value!r}): give an "
                                         "int >= 1 or 'auto'")
        self.parallelize_fn = parallelize_fn
        #: the sizes as given (ints or "auto"); ``mesh_shape()`` resolves them
        self.requested_sizes: tuple[int | str, int | str] = (data_parallel_size,
                                                             tensor_parallel_size)
        self.save_distributed_checkpoint = save_distributed_checkpoint
        self._mesh: Any = None

    # ------------------------------------------------------------------ the mesh

    def mesh_shape(self) -> tuple[int, int]:
        """``(data_parallel_size, tensor_parallel_size)`` resolved against the world size."""
        world, per_node = self.world_size, self.world_size // max(self.num_nodes, 1)
        dp, tp = self.requested_sizes
        if dp == "auto" and tp == "auto":
            dp, tp = max(self.num_nodes, 1), per_node
        elif dp == "auto":
            dp = world // int(tp) if world % int(tp) == 0 else 0
        elif tp == "auto":
            tp = world // int(dp) if world % int(dp) == 0 else 0
        if int(dp) * int(tp) != world:
            raise ConfigurationError(
                f"ModelParallelStrategy(data_parallel_size={self.requested_sizes[0]!r}, "
                f"tensor_parallel_size={self.requested_sizes[1]!r}) on {world} processes: "
                "the product of the two sizes must equal the world size (devices x num_nodes); "
                f"for example {_factorizations(world)}")
        return int(dp), int(tp)

    @property
    def device_mesh(self) -> Any:
        """The ``DeviceMesh`` with dimensions ``("data_parallel", "tensor_parallel")``; built
        when the processes have joined (``setup_environment``)."""
        if self._mesh is None:
            raise ConfigurationError("ModelParallelStrategy.device_mesh exists once the processes "
                                     "have started: use it in configure_model or parallelize_fn")
        return self._mesh

    def module_init_context(self) -> contextlib.AbstractContextManager[Any]:
        """``configure_model`` builds its layers on the meta device: nothing is allocated until
        each rank materialises its own shards after parallelising."""
        return torch.device("meta")

    def setup_environment(self) -> None:
        shape = self.mesh_shape()  # a wrong shape fails before any group is started
        super().setup_environment()
        from torch.distributed.device_mesh import init_device_mesh

        if self._mesh is None:
            self._mesh = init_device_mesh(self.root_device.type, shape, mesh_dim_names=MESH_DIMS)

    @property
    def data_parallel_size(self) -> int:
        return self.mesh_shape()[0]

    @property
    def data_parallel_rank(self) -> int:
        return self.global_rank // self.mesh_shape()[1]

    # ------------------------------------------------------------------ the model

    def wrap_module(self, module: torch.nn.Module) -> torch.nn.Module:
        # keeps names: parallelize_module still finds them
        ac.apply(module, self._checkpointed, "ModelParallelStrategy")
        if self.parallelize_fn is not None and not _is_parallelized(module):
            module = self.parallelize_fn(module, self.device_mesh)
            if not isinstance(module, torch.nn.Module):
                raise ConfigurationError(f"parallelize_fn returned {type(module).__name__}; it "
                                         "must return the (parallelised) module")
        if self.world_size > 1 and not _is_parallelized(module):
            raise ConfigurationError(
                "ModelParallelStrategy: the model was not parallelised (no parameter is a "
                "DTensor). Apply parallelize_module / fully_shard with self.device_mesh in "
                "Module.configure_model (Trainer), or pass ModelParallelStrategy(parallelize_fn="
                "...) (Lite); for plain data parallelism use strategy='fsdp' or 'ddp'")
        _materialize(module, self.root_device)
        return module

    def module_to_device(self, module: torch.nn.Module) -> torch.nn.Module:
        if any(p.is_meta for p in module.parameters()):
            return module  # materialised shard by shard after parallelising
        return super().module_to_device(module)

    # ------------------------------------------------------------------ data and collectives

    def process_dataloader(self, dataloader: Any, stage: str, use_distributed_sampler: bool
                           ) -> Any:
        dp = self.data_parallel_size
        if not use_distributed_sampler:  # one data-parallel group still gets Lightning's sampler
            return dataloader
        return samplers.distribute(dataloader, stage, dp, self.data_parallel_rank,
                                   samplers.agreed_seed(dataloader, self))


def _is_parallelized(module: torch.nn.Module) -> bool:
    from torch.distributed.tensor import DTensor

    return any(isinstance(p, DTensor) for p in module.parameters())


def _materialize(module: torch.nn.Module, device: torch.device) -> None:
    """Allocate the local shards of meta-device parameters and initialise them with each
    module's ``reset_parameters``. A module holding meta tensors of its own that neither it nor
    an ancestor can initialise is refused before anything is allocated: its values would be
    whatever the memory held."""
    if not any(p.is_meta for p in module.parameters()) and not any(
            b.is_meta for b in module.buffers()):
        return
    initialisable: set[str] = set()
    missing = []
    for name, child in module.named_modules():
        parent = name.rpartition(".")[0] if name else None
        if callable(getattr(child, "reset_parameters", None)) or (
                parent is not None and parent in initialisable):
            initialisable.add(name)
            continue
        own = [*child.parameters(recurse=False), *child.buffers(recurse=False)]
        if any(t.is_meta for t in own):
            missing.append(f"{name or '(the root)'} ({type(child).__name__})")
    if missing:
        raise ConfigurationError(
            "ModelParallelStrategy: the model was built on the meta device, but "
            f"{', '.join(missing)} {'have' if len(missing) > 1 else 'has'} no reset_parameters() "
            "to initialise its tensors once each rank has allocated its shard. Add "
            "reset_parameters() to that module (or to a module containing it), or build the "
            "model outside the meta device")
    module.to_empty(device=device)
    with torch.no_grad():
        for child in module.modules():
            reset = getattr(child, "reset_parameters", None)
            if callable(reset):
                reset()


def _factorizations(world: int) -> str:
    pairs = [(d, world // d) for d in range(1, world + 1) if world % d == 0]
    return ", ".join(f"data_parallel_size={a}, tensor_parallel_size={b}" for a, b in pairs)
