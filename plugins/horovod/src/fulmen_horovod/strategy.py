"""``HorovodStrategy``: data parallelism through Horovod's allreduce, processes from horovodrun."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import torch

from fulmen import ConfigurationError, Strategy
from fulmen.api import as_messages
from fulmen_horovod import STRATEGY
from fulmen_horovod import optimizers as opt_util
from fulmen_horovod.runtime import import_horovod
from fulmen_horovod.sync_batchnorm import convert_sync_batchnorm
from fulmen_strategies import collectives, samplers

_OPS = {"sum": "Sum", "mean": "Average", "max": "Max", "min": "Min"}
_COMPRESSION = ("none", "fp16")


class HorovodStrategy(Strategy):
    """One process per device, started by ``horovodrun`` (or ``mpirun``); gradients averaged
    by ``hvd.DistributedOptimizer`` during backward.

    ``backward_passes_per_step``: backward passes accumulated locally before the allreduce.
    Gradient accumulation (``Trainer(accumulate_grad_batches=k)``, ``lite.no_backward_sync``)
    raises it as needed; set it to ``k`` to overlap the allreduce with the first window too.
    ``compression``: ``"none"`` or ``"fp16"`` (gradients sent as float16).
    ``gradient_predivide_factor``: split the averaging before and after the sum.
    """

    name = STRATEGY.name  # the registered name, from the plugin's record

    def __init__(self, backward_passes_per_step: int = 1, compression: str = "none",
                 gradient_predivide_factor: float = 1.0, sparse_as_dense: bool = False) -> None:
        super().__init__()
        if isinstance(backward_passes_per_step, bool) or not isinstance(
                backward_passes_per_step, int) or backward_passes_per_step < 1:
            raise ConfigurationError(f"HorovodStrategy(backward_passes_per_step="
                                     f"{backward_passes_per_step!r}): use an int >= 1")
        if compression not in _COMPRESSION:
            raise ConfigurationError(f"HorovodStrategy(compression={compression!r}): use one of "
                                     f"{list(_COMPRESSION)}")
        self.hvd = import_horovod()
        self.hvd.init()
        self.backward_passes_per_step = backward_passes_per_step
        self.compression = compression
        self.gradient_predivide_factor = gradient_predivide_factor
        self.sparse_as_dense = sparse_as_dense
        self._optimizers: list[Any] = []
        self._window = 0  # backward passes skipped (no_backward_sync) since the last step
        self._synchronized: set[int] = set()  # optimizers whose gradients are averaged already

    # ------------------------------------------------------------------ layout (from Horovod)

    @property
    def world_size(self) -> int:
        return int(self.hvd.size())

    @property
    def global_rank(self) -> int:
        return int(self.hvd.rank())

    @property
    def local_rank(self) -> int:
        return int(self.hvd.local_rank())

    @property
    def node_rank(self) -> int:
        return int(self.hvd.cross_rank())

    @property
    def processes_per_node(self) -> int:
        return int(self.hvd.local_size())

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @property
    def root_device(self) -> torch.device:
        devices = self.parallel_devices or [torch.device("cpu")]
        if len(devices) > 1:
            return devices[self.local_rank % len(devices)]
        if devices[0].type == "cuda" and self.processes_per_node > 1:
            return torch.device("cuda", self.local_rank)  # devices=1: this process's own GPU
        return devices[0]

    def check_selection(self, selection: Any) -> list[str]:
        """Asked for several devices, but Horovod has fewer processes (no ``horovodrun``...)."""
        problem = self.check_process_layout(selection.num_devices, selection.num_nodes)
        return [*as_messages(super().check_selection(selection)),
                *([problem] if problem else [])]

    def check_process_layout(self, num_devices: int, num_nodes: int) -> str | None:
        """Why ``devices``/``num_nodes`` cannot work with the processes Horovod has, or None."""
        asked = num_devices * num_nodes
        if self.world_size == 1 and asked > 1:
            hosts = f"localhost:{num_devices}" if num_nodes == 1 else ",".join(
                f"host{i + 1}:{num_devices}" for i in range(num_nodes))
            script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0].endswith(
                ".py") else "train.py"
            return (f"strategy='horovod' with devices={num_devices} and num_nodes={num_nodes} asks "
                    f"for {asked} processes, but Horovod sees 1: this script was not started by "
                    "horovodrun. Horovod never starts processes itself; launch it with "
                    f"`horovodrun -np {asked} -H {hosts} python {script}` (or mpirun) and "
                    "devices=1, or pass devices=1 to train in this one process, or use "
                    "strategy='ddp' to let fulmen start the processes")
        if self.world_size > 1 and num_devices not in (1, self.processes_per_node):
            return (f"horovodrun started {self.processes_per_node} process(es) on this node, but "
                    f"devices={num_devices} was given. Under Horovod each process drives one "
                    f"device: pass devices=1 (or devices={self.processes_per_node}) and choose the "
                    "number of processes with horovodrun -np")
        return None

    # ------------------------------------------------------------------ model and optimizers

    def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
        if self.sync_batchnorm:
            if self.root_device.type != "cuda":
                raise ConfigurationError(
                    f"sync_batchnorm=True with strategy='horovod' on {self.root_device.type}: "
                    "Horovod's SyncBatchNorm runs on CUDA devices only. Use accelerator='gpu', "
                    "or strategy='ddp' (torch's SyncBatchNorm works on CPU), or "
                    "sync_batchnorm=False")
            if self.distributed and not self.is_set_up(module):
                module = convert_sync_batchnorm(module, self.hvd.SyncBatchNorm)
        return super().setup_module(module)

    def wrap_module(self, module: torch.nn.Module) -> torch.nn.Module:
        """No wrapper (the optimizer averages gradients); every rank starts from rank 0's
        parameters and buffers."""
        if self.distributed:
            self.hvd.broadcast_parameters(module.state_dict(), root_rank=0)
        return module

    def setup_optimizers(self, optimizers: list[Any]) -> list[Any]:
        """Each optimizer becomes a ``DistributedOptimizer`` holding rank 0's state."""
        wrapped = []
        for optimizer in optimizers:
            if opt_util.is_distributed(optimizer):
                wrapped.append(optimizer)
                continue
            state = optimizer.state_dict()
            if self.distributed:
                state = self.hvd.broadcast_object(state, root_rank=0)
            new = self.hvd.DistributedOptimizer(
                optimizer, named_parameters=opt_util.named_parameters(self.module, optimizer),
                compression=self.hvd.Compression.fp16 if self.compression == "fp16"
                else self.hvd.Compression.none,
                backward_passes_per_step=self.backward_passes_per_step, op=self.hvd.Average,
                gradient_predivide_factor=self.gradient_predivide_factor,
                sparse_as_dense=self.sparse_as_dense)
            opt_util.accept_set_to_none(new)
            opt_util.load_keeping_groups(new, state)
            opt_util.retarget_schedulers(self._lr_schedulers(), optimizer, new)
            wrapped.append(new)
        self._optimizers = [o for o in wrapped if opt_util.is_distributed(o)]
        return wrapped

    def _lr_schedulers(self) -> list[Any]:
        """The Trainer's LR schedulers (Lite users build theirs on the optimizer they keep)."""
        try:
            configs: list[Any] = list(self.module.trainer.lr_scheduler_configs)  # type: ignore
        except Exception:
            return []
        return [c.scheduler for c in configs]

    def _synchronize(self, optimizer: Any) -> None:
        """Wait for the averaged gradients (once per step) before anything reads them."""
        if opt_util.is_distributed(optimizer) and id(optimizer) not in self._synchronized:
            optimizer.synchronize()
            self._synchronized.add(id(optimizer))

    def optimizer_step(self, optimizer: Any, closure: Callable[[], Any] | None = None,
                       after_closure: Callable[[], None] | None = None) -> Any:
        """closure (backward) → averaged gradients → after_closure (hooks, clipping) → update."""
        if not opt_util.is_distributed(optimizer):
            return super().optimizer_step(optimizer, closure, after_closure)
        synced: Callable[[], Any] | None = None
        if closure is None:
            self._synchronize(optimizer)
        else:
            def synced() -> Any:
                result = closure()
                self._synchronize(optimizer)
                return result
        try:
            with optimizer.skip_synchronize():
                return self.precision.optimizer_step(optimizer, synced, after_closure)
        finally:
            self._synchronized.discard(id(optimizer))
            self._window = 0

    def clip_gradients(self, module: torch.nn.Module, optimizer: Any, clip_val: float,
                       algorithm: str = "norm") -> Any:
        self._synchronize(optimizer)  # clip the averaged gradients, not this rank's
        return super().clip_gradients(module, optimizer, clip_val, algorithm)

    @contextlib.contextmanager
    def no_backward_sync(self) -> Iterator[None]:
        """Accumulate this backward pass locally: the allreduce waits for the pass that steps.

        Horovod counts backward passes per step; when a window is longer than it expects, the
        count is raised (that window's allreduce then runs at the step instead of overlapping
        with the last backward pass; later windows overlap again)."""
        self._window += 1
        needed = self._window + 1
        for optimizer in self._optimizers:
            if optimizer.backward_passes_per_step < needed:
                optimizer.set_backward_passes_per_step(needed)
        yield

    # ------------------------------------------------------------------ data

    def process_dataloader(self, dataloader: Any, stage: str, use_distributed_sampler: bool
                           ) -> Any:
        return samplers.process(dataloader, stage, use_distributed_sampler, self)

    # ------------------------------------------------------------------ collectives

    def reduce(self, tensor: Any, reduce_op: str = "mean") -> Any:
        if not self.distributed:
            return tensor
        value, op = collectives.reduce_operand(tensor, reduce_op, self.root_device, _OPS)
        return self.hvd.allreduce(value, op=getattr(self.hvd, _OPS[op]))

    def all_gather(self, tensor: Any, sync_grads: bool = False) -> Any:
        tensor = torch.as_tensor(tensor, device=self.root_device).unsqueeze(0)
        if not self.distributed:
            return tensor
        if not sync_grads:
            tensor = tensor.detach()
        return self.hvd.allgather(tensor.contiguous())

    def broadcast(self, obj: Any, src: int = 0) -> Any:
        if not self.distributed:
            return obj
        return self.hvd.broadcast_object(obj, root_rank=src)

    def barrier(self, name: str | None = None) -> None:
        if self.distributed:
            self.hvd.barrier()

    def reduce_boolean_decision(self, decision: bool, all: bool = True) -> bool:
        if not self.distributed:
            return decision
        votes = self.hvd.allreduce(torch.tensor(int(bool(decision))), op=self.hvd.Sum)
        return bool(votes == self.world_size) if all else bool(votes > 0)

    # ------------------------------------------------------------------ checkpoints

    def load_optimizer_state(self, optimizer: Any, state: dict[str, Any]) -> None:
        """The canonical state (keyed by parameter names, from any strategy) or torch's."""
        from fulmen.checkpoint import canonical

        state = canonical.numbered(self.module, optimizer, state)
        if opt_util.is_distributed(optimizer):
            opt_util.load_keeping_groups(optimizer, state)
        else:
            optimizer.load_state_dict(state)
