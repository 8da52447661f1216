"""``ParallelStrategy``: what every multi-process strategy shares — the process group, the
collectives, distributed samplers and rank-zero checkpoint writing."""

from __future__ import annotations

import atexit
import logging
import os
import sys
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from fulmen import ConfigurationError, Launcher, Strategy
from fulmen.api import as_messages
from fulmen_strategies import collectives, rendezvous, samplers
from fulmen_strategies.launchers.script import mark_finish_at_exit

_OPS = {"sum": "SUM", "max": "MAX", "min": "MIN", "mean": "SUM"}
log = logging.getLogger("fulmen")


class ParallelStrategy(Strategy):
    """One process per device; ranks and world size from the cluster environment.

    ``process_group_backend``: ``"gloo"`` on CPU and ``"nccl"`` on CUDA unless given.
    ``timeout``: how long a collective may wait for the other ranks (seconds or a timedelta).
    ``rendezvous_timeout``: how long joining the process group may wait for every rank to
    arrive (seconds or a timedelta; default ``FULMEN_RENDEZVOUS_TIMEOUT`` or 60 s). A rank that
    does not arrive is a ``fulmen.errors.RendezvousError`` naming it.
    """

    reseeds_at_setup = frozenset({"Trainer"})  # Lightning's DDPStrategy; Fabric's does not

    def check_selection(self, selection: Any) -> list[str]:
        """A job whose processes already exist must match what devices x num_nodes asks for."""
        problems = as_messages(super().check_selection(selection))
        env = selection.environment
        if env.creates_processes_externally:
            expected = self.processes_per_node * selection.num_nodes
            actual = env.world_size()
            if actual != expected:
                problems.append(
                    f"the processes were already started with world size {actual} (from the "
                    f"{env.name!r} environment), but devices={selection.num_devices} x "
                    f"num_nodes={selection.num_nodes} asks for {expected}; make the numbers "
                    "agree")
        return problems

    def __init__(self, process_group_backend: str | None = None,
                 timeout: float | timedelta | None = None,
                 rendezvous_timeout: float | timedelta | None = None) -> None:
        super().__init__()
        self.process_group_backend = process_group_backend
        if isinstance(timeout, int | float):
            timeout = timedelta(seconds=timeout)
        self.timeout = timeout or timedelta(minutes=30)
        self.rendezvous_timeout = rendezvous.resolve_timeout(rendezvous_timeout,
                                                             type(self).__name__)
        self.sync_batchnorm = False

    # ------------------------------------------------------------------ layout

    @property
    def root_device(self) -> torch.device:
        devices = self.parallel_devices or [torch.device("cpu")]
        return devices[self.local_rank % len(devices)]

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @property
    def backend(self) -> str:
        """``process_group_backend`` if given, else torch's default for the device type
        (``dist.Backend.default_device_backend_map``: cpu gloo, cuda nccl, xpu xccl, and what a
        vendor registered with ``dist.Backend.register_backend(..., devices=[...])``)."""
        if self.process_group_backend:
            return self.process_group_backend
        device_type = self.root_device.type
        defaults = dist.Backend.default_device_backend_map
        if device_type not in defaults:
            raise ConfigurationError(
                f"{type(self).__name__} on {device_type!r} devices: torch has no default "
                f"distributed backend for {device_type!r} (it has: "
                f"{', '.join(f'{k}: {v}' for k, v in sorted(defaults.items()))}); pass "
                "process_group_backend=..., or register one with "
                f"torch.distributed.Backend.register_backend(..., devices=[{device_type!r}])")
        return str(defaults[device_type])

    # ------------------------------------------------------------------ processes

    def create_launcher(self) -> Launcher | None:
        """``ScriptLauncher`` (re-runs the script once per extra local process), unless the
        cluster environment started the processes already."""
        if self.cluster_environment.creates_processes_externally:
            return None
        from fulmen_strategies.launchers.script import ScriptLauncher

        return ScriptLauncher(self)

    # ------------------------------------------------------------------ process group

    def setup_environment(self) -> None:
        env = self.cluster_environment
        if self.distributed and not dist.is_initialized():
            os.environ["MASTER_ADDR"] = env.main_address
            os.environ["MASTER_PORT"] = str(env.main_port)
            from fulmen import hang

            # The rendezvous has its own timeout, whose error names the ranks that never came.
            with hang.phase(f"rendezvous of {self.world_size} processes at "
                            f"{env.main_address}:{env.main_port}",
                            allow=self.rendezvous_timeout.total_seconds() + 30):
                store = rendezvous.join(
                    address=env.main_address, port=env.main_port, rank=self.global_rank,
                    world_size=self.world_size, attempt=env.restart_count(),
                    rendezvous_timeout=self.rendezvous_timeout, timeout=self.timeout,
                    owner=self.name)
            mark_finish_at_exit()  # a ddp child: its exit handler runs after _destroy_group's
            dist.init_process_group(self.backend, store=store, rank=self.global_rank,
                                    world_size=self.world_size, timeout=self.timeout)
            atexit.register(_destroy_group)
        super().setup_environment()

    def on_exception(self, exception: BaseException) -> None:
        """The other ranks may be stuck in a collective this rank will never join: the
        process group is left alone (tearing it down could block too)."""
        _failed["run"] = True

    def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
        if self.sync_batchnorm and self.distributed and not self.is_set_up(module):
            module = torch.nn.SyncBatchNorm.convert_sync_batchnorm(module)
        return super().setup_module(module)

    # ------------------------------------------------------------------ data

    def process_dataloader(self, dataloader: Any, stage: str, use_distributed_sampler: bool
                           ) -> Any:
        return samplers.process(dataloader, stage, use_distributed_sampler, self)

    # ------------------------------------------------------------------ collectives

    def reduce(self, tensor: Any, reduce_op: str = "mean") -> Any:
        if not self.distributed:
            return tensor
        self.require_process_group("reduce()")
        value, op = collectives.reduce_operand(tensor, reduce_op, self.root_device, _OPS)
        collectives.all_reduce(value, getattr(dist.ReduceOp, _OPS[op]))
        return value / self.world_size if op == "mean" else value

    def all_gather(self, tensor: Any, sync_grads: bool = False) -> Any:
        tensor = torch.as_tensor(tensor, device=self.root_device)
        if not self.distributed:
            return tensor.unsqueeze(0)
        self.require_process_group("all_gather()")
        return collectives.all_gather(tensor.contiguous(), self.world_size, sync_grads)

    def broadcast(self, obj: Any, src: int = 0) -> Any:
        if not self.distributed:
            return obj
        self.require_process_group("broadcast()")
        return collectives.broadcast_object(obj, src)

    def barrier(self, name: str | None = None) -> None:
        if self.distributed:
            self.require_process_group(f"barrier({name!r})" if name else "barrier()")
            collectives.barrier(name)

    def require_process_group(self, what: str) -> None:
        """Refuse a collective of several ranks when this process has no process group (a
        subclass's ``setup_environment`` that skipped ``super().setup_environment()``): it
        would otherwise do nothing, or wait for ranks that can never answer."""
        if not dist.is_initialized():
            from fulmen.errors import FulmenError

            raise FulmenError(
                f"{type(self).__name__}.{what} on rank {self.global_rank} of {self.world_size}:"
                f" this process has no process group, so it cannot wait for or talk to the "
                f"other ranks. setup_environment() creates it: a subclass that overrides "
                f"setup_environment must call super().setup_environment() (strategy "
                f"{self.name!r}, {type(self).__module__})")

    def reduce_boolean_decision(self, decision: bool, all: bool = True) -> bool:
        if not self.distributed:
            return decision
        votes = torch.tensor(int(bool(decision)), device=self.root_device)
        collectives.all_reduce(votes, dist.ReduceOp.SUM)
        return bool(votes == self.world_size) if all else bool(votes > 0)

    def start_agreement(self, value: int) -> Callable[[], int]:
        """All-reduce (max) ``value`` in the background on a CPU gloo group: training goes on
        while it travels, and reading the result one step later does not wait on the device."""
        if not self.distributed:
            return lambda: value
        vote = torch.tensor([value], dtype=torch.int64)
        work = dist.all_reduce(vote, op=dist.ReduceOp.MAX, group=_control_group(),
                               async_op=True)

        def result() -> int:
            if work is not None:
                work.wait()
            return int(vote.item())

        return result


_control: dict[str, Any] = {}


def _control_group() -> Any:
    """The default group when it runs on gloo, else one gloo group made the first time (every
    rank gets here at the same step: agreements start at the same points on every rank)."""
    if dist.get_backend() == "gloo":
        return None
    if _control.get("for") is not dist.group.WORLD:
        _control.update({"for": dist.group.WORLD, "group": dist.new_group(backend="gloo")})
    return _control["group"]


_failed = {"run": False}


def _destroy_group() -> None:
    """At exit: the group lives across stages (fit, then test, then save_checkpoint).

    gloo aborts the process when torn down while a peer still talks, so healthy ranks first
    meet at a barrier (bounded: 30 s), then destroy the group — whether or not the barrier
    held: a group left for the interpreter's finalization aborts the process there ("terminate
    called without an active exception", its worker threads taking the GIL of a finished
    interpreter), failing a run whose work was done. After an error (in a run, or uncaught at
    exit) there is no barrier: a peer may be blocked in a collective this rank will never join,
    and the group dies with the process."""
    if not dist.is_initialized():
        return
    if _failed["run"] or getattr(sys, "last_value", None) is not None:
        return
    try:
        if dist.get_backend() == "gloo":
            dist.monitored_barrier(timeout=timedelta(seconds=30))
    except Exception as exc:  # a peer is gone or late; the group goes all the same
        log.debug("fulmen: the exit barrier failed (%s); destroying the process group", exc)
    try:
        dist.destroy_process_group()
    except Exception:  # the process is ending anyway
        pass
