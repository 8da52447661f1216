"""``LocalSGDStrategy``: one process per device, each stepping on its own shard of the data;
every ``sync_every`` optimizer steps the processes average their parameters.

Written only against ``fulmen.Strategy`` and ``torch.distributed``; the processes are started
by the public launchers of ``fulmen_strategies.launchers``.
"""

import atexit
import os
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

from fulmen import Launcher, Strategy


class LocalSGDStrategy(Strategy):
    """``sync_every``: optimizer steps between two parameter averages (1 = every step).
    ``start_method``: ``"popen"`` re-runs the script per process, ``"spawn"``/``"fork"`` start
    workers and return to the caller. ``timeout``: seconds a collective may wait."""

    def __init__(self, sync_every: int = 2, start_method: str = "popen",
                 timeout: float = 120.0) -> None:
        super().__init__()
        self.sync_every, self.start_method = sync_every, start_method
        self.timeout = timedelta(seconds=timeout)
        self.steps = 0

    # ------------------------------------------------------------------ processes

    def create_launcher(self) -> Launcher | None:
        if self.cluster_environment.creates_processes_externally or self.world_size < 2:
            return None
        from fulmen_strategies.launchers import MultiprocessingLauncher, ScriptLauncher

        if self.start_method == "popen":
            return ScriptLauncher(self)
        return MultiprocessingLauncher(self, start_method=self.start_method)

    @property
    def root_device(self) -> torch.device:
        devices = self.parallel_devices or [torch.device("cpu")]
        return devices[self.local_rank % len(devices)]

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def setup_environment(self) -> None:
        if self.distributed and not dist.is_initialized():
            env = self.cluster_environment
            os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = env.main_address, \
                str(env.main_port)
            backend = "nccl" if self.root_device.type == "cuda" else "gloo"
            dist.init_process_group(backend, rank=self.global_rank, world_size=self.world_size,
                                    timeout=self.timeout)
            atexit.register(_leave)
        super().setup_environment()

    # ------------------------------------------------------------------ training

    def optimizer_step(self, optimizer: Any, closure: Any = None, after_closure: Any = None
                       ) -> Any:
        result = super().optimizer_step(optimizer, closure, after_closure)
        self.steps += 1
        if self.distributed and self.steps % self.sync_every == 0:
            with torch.no_grad():
                for group in optimizer.param_groups:
                    for p in group["params"]:
                        dist.all_reduce(p.data, op=dist.ReduceOp.SUM)
                        p.data /= self.world_size
        return result

    def process_dataloader(self, dataloader: Any, stage: str, use_distributed_sampler: bool
                           ) -> Any:
        if not (self.distributed and use_distributed_sampler and isinstance(dataloader,
                                                                             DataLoader)):
            return dataloader
        sampler: DistributedSampler[Any] = DistributedSampler(
            dataloader.dataset, num_replicas=self.world_size, rank=self.global_rank, shuffle=False)
        return DataLoader(dataloader.dataset, batch_size=dataloader.batch_size, sampler=sampler,
                          num_workers=dataloader.num_workers, collate_fn=dataloader.collate_fn,
                          drop_last=dataloader.drop_last)

    # ------------------------------------------------------------------ collectives

    def reduce(self, tensor: Any, reduce_op: str = "mean") -> Any:
        value = torch.as_tensor(tensor, device=self.root_device).clone()
        if not self.distributed:
            return value
        op = str(reduce_op).lower()
        ops = {"sum": dist.ReduceOp.SUM, "mean": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX,
               "min": dist.ReduceOp.MIN}
        if op == "mean" and not value.is_floating_point():
            value = value.float()
        dist.all_reduce(value, op=ops[op])
        return value / self.world_size if op == "mean" else value

    def all_gather(self, tensor: Any, sync_grads: bool = False) -> Any:
        value = torch.as_tensor(tensor, device=self.root_device).contiguous()
        if not self.distributed:
            return value.unsqueeze(0)
        parts = [torch.empty_like(value) for _ in range(self.world_size)]
        dist.all_gather(parts, value)
        return torch.stack(parts)

    def broadcast(self, obj: Any, src: int = 0) -> Any:
        if not self.distributed:
            return obj
        holder = [obj]
        dist.broadcast_object_list(holder, src=src)
        return holder[0]

    def barrier(self, name: str | None = None) -> None:
        if self.distributed:
            dist.barrier()

    def reduce_boolean_decision(self, decision: bool, all: bool = True) -> bool:
        if not self.distributed:
            return decision
        votes = self.reduce(torch.tensor(int(decision)), "sum")
        return bool(votes == self.world_size) if all else bool(votes > 0)


def _leave() -> None:
    """At exit: meet the other ranks (bounded), then leave the group."""
    if not dist.is_initialized():
        return
    try:
        if dist.get_backend() == "gloo":
            dist.monitored_barrier(timeout=timedelta(seconds=30))
        dist.destroy_process_group()
    except Exception:  # a peer is gone; this process ends anyway
        pass
