"""``TorchFTStrategy``: data parallelism over replica groups that come and go (torchft).

A job is several *replica groups*. Each group is an ordinary fulmen job (``devices`` x
``num_nodes`` processes, started by fulmen's launcher or a scheduler) and each trains a full copy
of the model. Across groups, torchft's ``Manager`` asks a lighthouse for a quorum every step:
gradients are averaged over the groups in the quorum only, so a lost group leaves the others
training; a group that (re)joins behind the others receives the weights and optimizer state from
a live peer (torchft's checkpoint transport, HTTP) instead of reading a checkpoint; and a step
commits (the optimizer steps) only where every process of the group and at least
``min_replicas`` groups took part.

Gradients are averaged over the replica dimension with ``Manager.allreduce`` (process group
rank ``r`` of every group meet in a torchft ``ProcessGroupGloo`` that the manager reconfigures at
each new quorum), then over the group's own process group (gloo on CPU). Groups of several
processes must start from the same weights in every group (one seed everywhere): torchft's
step-0 sync picks its source per process, while DDP's start-up broadcast covers one group.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as TorchDDP

from fulmen import ConfigurationError, FulmenError
from fulmen.utilities.forward_redirection import StepDispatcher
from fulmen_strategies import samplers
from fulmen_strategies.parallel import ParallelStrategy
from fulmen_torchft.plugin import SPEC
from fulmen_torchft.settings import ReplicaSettings

log = logging.getLogger("fulmen")

PROCESS_GROUPS = ("gloo", "baby_gloo")


class TorchFTStrategy(ParallelStrategy):
    """Fault-tolerant DDP across replica groups, on torchft (``strategy="torchft"``).

    ``min_replicas``: groups a step needs to commit (default: a majority of
    ``num_replica_groups``). ``replica_group_id`` / ``num_replica_groups``: this group's index
    and the number of groups (default: ``REPLICA_GROUP_ID`` / ``NUM_REPLICA_GROUPS``, else 0 of
    1). ``lighthouse``: the lighthouse's address (default ``TORCHFT_LIGHTHOUSE``); without one,
    group 0 starts torchft's ``LighthouseServer`` (on ``lighthouse_port``, default
    ``TORCHFT_LIGHTHOUSE_PORT`` or 29510, when there are several groups; the others find it on
    localhost). ``timeout``: collectives, commit votes and weight transfers;
    ``quorum_timeout``: waiting for ``min_replicas`` groups; ``join_timeout`` and
    ``heartbeat_timeout``: the lighthouse started for you (how long it waits for the previous
    quorum's groups, and after how long without heartbeats a group is left out; torchft's 60 s
    and 5 s unless given; with ``lighthouse=`` they belong to ``torchft_lighthouse``).
    ``async_quorum``: compute the quorum while the forward runs (torchft's default; a group
    that heals sits one step out). ``process_group``: ``"gloo"`` (torchft's ``ProcessGroupGloo``)
    or ``"baby_gloo"`` (``ProcessGroupBabyGloo``: gloo in a subprocess, which a hung peer cannot
    block). All arguments are checked when the strategy is constructed, before any process or
    server starts.
    """

    name = SPEC.name  # the registered name, from the plugin's record

    def __init__(self, min_replicas: int | None = None, replica_group_id: int | None = None,
                 num_replica_groups: int | None = None, lighthouse: str | None = None,
                 lighthouse_port: int | None = None, timeout: float | timedelta = 60.0,
                 quorum_timeout: float | timedelta = 60.0,
                 join_timeout: float | timedelta | None = None,
                 heartbeat_timeout: float | timedelta | None = None, async_quorum: bool = True,
                 process_group: str = "gloo", process_group_backend: str | None = None,
                 rendezvous_timeout: float | timedelta | None = None) -> None:
        #: where this group stands in the job (validated here; see ReplicaSettings)
        self.settings = ReplicaSettings.resolve(
            replica_group_id=replica_group_id, num_replica_groups=num_replica_groups,
            min_replicas=min_replicas, lighthouse=lighthouse, lighthouse_port=lighthouse_port,
            timeout=timeout, quorum_timeout=quorum_timeout, join_timeout=join_timeout,
            heartbeat_timeout=heartbeat_timeout)
        if process_group not in PROCESS_GROUPS:
            raise ConfigurationError(
                f"TorchFTStrategy(process_group={process_group!r}): the replica dimension runs on "
                f"one of torchft's CPU process groups: {', '.join(map(repr, PROCESS_GROUPS))}")
        if not isinstance(async_quorum, bool):
            raise ConfigurationError(f"TorchFTStrategy(async_quorum={async_quorum!r}): give "
                                     "True or False")
        super().__init__(process_group_backend, self.settings.timeout, rendezvous_timeout)
        self.async_quorum = async_quorum
        self.process_group = process_group
        #: torchft's ``Manager`` of this process (None until ``setup_environment``)
        self.manager: Any = None
        #: the ``LighthouseServer`` this process started for the job, or None
        self.lighthouse: Any = None
        #: the lighthouse's address (on the group's rank 0, which talks to it), or None
        self.lighthouse_address: str | None = None
        self.optimizers: list[torch.optim.Optimizer] = []  # the user's, for the replica state
        #: more state a recovering group takes from its peer: name -> (state_dict, load)
        self.replica_extras: dict[str, tuple[Callable[[], Any], Callable[[Any], None]]] = {}
        #: quorums started (one per step, by its first training forward or backward)
        self.quorums = 0
        #: commit votes taken (one per step, by its first optimizer step)
        self.votes = 0
        #: votes that committed
        self.commits = 0
        self._store: Any = None
        self._last_vote = False

    # ------------------------------------------------------------------ layout

    @property
    def data_parallel_size(self) -> int:
        """Training data is sharded over every process of every group (``NUM_REPLICA_GROUPS``
        x group size), as torchft's ``DistributedSampler`` does."""
        return self.settings.num_replica_groups * self.world_size

    @property
    def data_parallel_rank(self) -> int:
        return self.settings.replica_group_id * self.world_size + self.global_rank

    @property
    def committed_steps(self) -> int:
        """Steps the job committed (torchft's step count, the same in every group of the
        quorum: a group that healed from a peer continues from the peer's count). Use it to
        stop a Lite loop: ``while strategy.committed_steps < n``."""
        return int(self.manager.current_step()) if self.manager is not None else 0

    @property
    def participants(self) -> int:
        """Groups in the current quorum (after the step's quorum is known)."""
        return int(self.manager.num_participants()) if self.manager is not None else 0

    # ------------------------------------------------------------------ processes

    def setup_environment(self) -> None:
        """The group's process group (several processes), then torchft's manager: the
        lighthouse (started here by group 0 when none is given), a TCPStore for this group
        (other groups rendezvous on it at each new quorum) and the replica process group."""
        super().setup_environment()
        if self.manager is not None:  # lives across stages, like the group's process group
            return
        from torch.distributed import TCPStore
        from torchft.manager import Manager
        from torchft.process_group import ProcessGroupBabyGloo, ProcessGroupGloo

        settings, env = self.settings, self.cluster_environment
        address = None
        port = 0
        if self.global_rank == 0:
            address = self.lighthouse_address = self._lighthouse_address()
            # torchft's Manager needs a TCPStore per replica group; other groups reach it at
            # this group's main address.
            self._store = TCPStore(host_name=env.main_address, port=0, is_master=True,
                                   wait_for_workers=False, timeout=settings.timeout)
            port = int(self._store.port)
        if self.distributed:
            port = int(self.broadcast(port, 0))
        pg_class = ProcessGroupGloo if self.process_group == "gloo" else ProcessGroupBabyGloo
        self.manager = Manager(
            pg=pg_class(timeout=settings.timeout), load_state_dict=self.load_replica_state,
            state_dict=self.replica_state, min_replica_size=settings.min_replicas,
            use_async_quorum=self.async_quorum, timeout=settings.timeout,
            quorum_timeout=settings.quorum_timeout, connect_timeout=settings.timeout,
            rank=self.global_rank, world_size=self.world_size, store_addr=env.main_address,
            store_port=port, lighthouse_addr=address,
            replica_id=f"replica_group_{settings.replica_group_id}")
        atexit.register(self.close)
        log.info("fulmen: torchft replica group %d of %d (min_replicas=%d) joined lighthouse "
                 "%s", settings.replica_group_id, settings.num_replica_groups,
                 settings.min_replicas, address or "(via group rank 0)")

    def _lighthouse_address(self) -> str:
        settings = self.settings
        if not settings.starts_lighthouse:
            return settings.lighthouse_for_others()
        from torchft.coordination import LighthouseServer

        try:
            self.lighthouse = LighthouseServer(
                bind=settings.lighthouse_bind, min_replicas=settings.min_replicas,
                join_timeout_ms=int(settings.join_timeout.total_seconds() * 1000),
                heartbeat_timeout_ms=int(settings.heartbeat_timeout.total_seconds() * 1000))
        except Exception as exc:
            raise FulmenError(
                f"strategy 'torchft': replica group 0 could not start the lighthouse on "
                f"{settings.lighthouse_bind} ({type(exc).__name__}: {exc}). Another job may "
                "hold the port: give another with lighthouse_port= (TORCHFT_LIGHTHOUSE_PORT), "
                "or run torchft_lighthouse yourself and pass its address as lighthouse= "
                "(TORCHFT_LIGHTHOUSE)") from exc
        address = str(self.lighthouse.address())
        log.info("fulmen: started torchft's lighthouse at %s (min_replicas=%d)", address,
                 settings.min_replicas)
        return address

    def close(self) -> None:
        """Stop the manager (and the lighthouse this process started). Called at exit; the
        manager otherwise lives across stages, like the group's process group."""
        manager, self.manager = self.manager, None
        if manager is not None:
            manager.shutdown(wait=False)
        lighthouse, self.lighthouse = self.lighthouse, None
        if lighthouse is not None:
            lighthouse.shutdown()
        self._store = None

    # ------------------------------------------------------------------ replica state

    def register_replica_state(self, name: str, state_dict: Callable[[], Any],
                               load_state_dict: Callable[[Any], None]) -> None:
        """Send more state to a recovering group with the weights: an LR scheduler's, a data
        position (``lite`` users; the Trainer's schedulers: ``ReplicaSchedulers``). The name
        registered again replaces the earlier functions."""
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"register_replica_state(name={name!r}): give a non-empty "
                                     "string naming the state")
        if not callable(state_dict) or not callable(load_state_dict):
            raise ConfigurationError(
                f"register_replica_state({name!r}, ...): state_dict and load_state_dict must be "
                "callables (e.g. scheduler.state_dict, scheduler.load_state_dict)")
        self.replica_extras[name] = (state_dict, load_state_dict)

    def replica_state(self) -> dict[str, Any]:
        """What a recovering group receives from a live peer: the module's state, every
        set-up optimizer's and what was registered with :meth:`register_replica_state`
        (torchft's manager adds its step count)."""
        return {"module": self.module_state_dict(),
                "optimizers": [o.state_dict() for o in self.optimizers],
                "extras": {name: fns[0]() for name, fns in self.replica_extras.items()}}

    def load_replica_state(self, state: dict[str, Any]) -> None:
        """Load what :meth:`replica_state` of a peer returned (torchft calls it on the main
        thread before the step commits)."""
        self.load_module_state_dict(state["module"])
        for optimizer, optimizer_state in zip(self.optimizers, state["optimizers"], strict=True):
            optimizer.load_state_dict(optimizer_state)
        missing = sorted(set(self.replica_extras) - set(state["extras"]))
        if missing:
            raise FulmenError(f"strategy 'torchft': the peer this group recovered from sent no "
                              f"{', '.join(map(repr, missing))} state; every group must "
                              "register the same replica state")
        for name, (_, load) in self.replica_extras.items():
            load(state["extras"][name])

    # ------------------------------------------------------------------ model and optimizers

    def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
        from fulmen import Module

        if isinstance(module, Module) and not module.automatic_optimization:
            raise ConfigurationError(
                f"strategy 'torchft' with {type(module).__name__}.automatic_optimization = "
                "False: a backward inside training_step is not averaged across replica groups "
                "(DDP reduces gradients after its forward returns). Use automatic optimization, "
                "or Lite, where backward and optimizer.step() come after the forward")
        return super().setup_module(module)

    def wrap_module(self, module: torch.nn.Module) -> torch.nn.Module:
        """torch's DDP with a comm hook that averages each bucket over the replica groups of the
        quorum (``Manager.allreduce``), then over the group's process group (several
        processes). A group of one process gets torchft's dummy process group for
        DDP itself, as torchft's ``DistributedDataParallel`` does. The buckets are never rebuilt
        (``find_unused_parameters=True``, as torchft requires: a recovering group must bucket as
        its peers do).

        Not torchft's ``DistributedDataParallel`` itself: in torchft 0.2.0 its comm hook asserts
        on the future of an allreduce that failed (a peer killed mid-step), which ends the
        surviving process instead of skipping the step; this hook waits on torchft's work (the
        error goes to the manager, which votes the step down) and hands DDP the bucket."""
        from torchft.process_group import ProcessGroupDummy

        if self.manager is None:
            raise FulmenError("strategy 'torchft': setup_environment() must run before "
                              "setup_module() (it starts torchft's manager)")
        dispatcher = StepDispatcher(module)
        device_ids = [self.root_device.index] if self.root_device.type == "cuda" else None
        group = None if self.distributed else ProcessGroupDummy(0, 1)
        ddp = TorchDDP(dispatcher, device_ids=device_ids, process_group=group,
                       find_unused_parameters=True)
        ddp.register_comm_hook(self, _group_then_replicas)
        return ddp

    def setup_optimizers(self, optimizers: list[Any]) -> list[Any]:
        """Each optimizer steps only when the step commits (see :class:`CommitGate`)."""
        from fulmen_torchft.optimizer import CommitGate

        self.optimizers = [*self.optimizers, *optimizers]
        return [CommitGate(self, optimizer) for optimizer in optimizers]

    def step(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """A training forward (``training_step``, or Lite's ``forward`` of a module in training
        mode with gradients on) first starts the step's quorum, so that a group that must heal
        (without ``async_quorum``) loads its peer's weights before computing on them."""
        model = self.model
        if method not in ("training_step", "forward") or not isinstance(model, TorchDDP) or \
                not torch.is_grad_enabled() or not (self.module is not None and
                                                    self.module.training):
            return super().step(method, *args, **kwargs)
        self.begin_step()
        with self.precision.forward_context():
            return model(*args, fulmen_step=method, **kwargs)

    def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        self.begin_step()  # a forward that did not go through step() (a second module)
        with self.quorum_errors():  # the gradients' allreduce waits for the step's quorum
            super().backward(loss, *args, **kwargs)

    @contextlib.contextmanager
    def quorum_errors(self) -> Iterator[None]:
        """torchft's quorum timing out (a ``TimeoutError`` from its manager) becomes an error
        that says what it means and what to do."""
        try:
            yield
        except TimeoutError as exc:
            settings = self.settings
            where = self.lighthouse_address or "(known to the group's rank 0)"
            owner = (" (it ran in replica group 0's first process)"
                     if settings.lighthouse is None else "")
            raise FulmenError(
                f"strategy 'torchft', replica group {settings.replica_group_id}: no quorum "
                f"within quorum_timeout={settings.quorum_timeout.total_seconds():g} s "
                f"({type(exc).__name__}: {exc}). Either the lighthouse at {where} is gone{owner}"
                f" - it is the job's single point of failure - or fewer than min_replicas="
                f"{settings.min_replicas} of {settings.num_replica_groups} groups are alive. "
                "Bring the lighthouse and enough groups back and resume from the last "
                "checkpoint (fit(ckpt_path='last')), or run with a lower min_replicas") from exc

    def begin_step(self) -> None:
        """Start this step's quorum unless it started already (one per step)."""
        if self.quorums == self.votes and self.manager is not None:
            self.manager.start_quorum()
            self.quorums += 1

    def commit_step(self) -> bool:
        """Whether this step's update may be applied: torchft's vote (every process of the
        group, and ``min_replicas`` groups in the quorum, without an error) taken by the step's
        first optimizer; the step's other optimizers get the same answer."""
        if self.manager is None:
            raise FulmenError("strategy 'torchft': an optimizer stepped before "
                              "setup_environment() started torchft's manager")
        if self.votes < self.quorums:
            with self.quorum_errors():
                self._last_vote = bool(self.manager.should_commit())
            self.votes += 1
            self.commits += int(self._last_vote)
            if not self._last_vote:
                log.warning("fulmen: torchft did not commit step %d of replica group %d (a "
                            "peer was lost, or too few groups: %d of min_replicas=%d); the "
                            "update is skipped", self.committed_steps,
                            self.settings.replica_group_id, self.participants,
                            self.settings.min_replicas)
        elif self.quorums == 0:
            raise FulmenError(
                "strategy 'torchft': optimizer.step() before any training forward or backward "
                "through the set-up module; the step's quorum starts there")
        return self._last_vote

    @contextlib.contextmanager
    def no_backward_sync(self) -> Iterator[None]:
        model = self.model
        if isinstance(model, TorchDDP):
            with model.no_sync():
                yield
        else:
            yield

    # ------------------------------------------------------------------ data

    def process_dataloader(self, dataloader: Any, stage: str, use_distributed_sampler: bool
                           ) -> Any:
        """Training data is sharded over all groups' processes (``data_parallel_size``);
        evaluation data over this group's processes (every group evaluates everything)."""
        if stage != "train" or not use_distributed_sampler or self.data_parallel_size == 1:
            return super().process_dataloader(dataloader, stage, use_distributed_sampler)
        seed = samplers.agreed_seed(dataloader, self)
        return samplers.distribute(dataloader, stage, self.data_parallel_size,
                                   self.data_parallel_rank, seed)


def _group_then_replicas(strategy, bucket):
    # (no annotations: DDP checks them, and this module's are strings)
    """DDP comm hook: average the bucket over the replica groups of the quorum (torchft's
    ``Manager.allreduce``: an error there is reported to the manager, which then votes the step
    down, and later buckets of the step are not sent), then over the group's own process group
    (several processes).

    Replicas first: torchft decides healing per group rank (at step 0 with ``init_sync`` it
    spreads the recovery sources over the ranks, so one rank of a group may sit a step out while
    another takes part). Each rank's replica allreduce gives the same result in every group;
    averaging those over the group afterwards leaves every process of every group with the same
    gradient (the other order would not)."""
    buffer = bucket.buffer()
    work = strategy.manager.allreduce(buffer)
    work.wait()
    if strategy.distributed:
        dist.all_reduce(buffer)
        buffer.div_(strategy.world_size)
    done: torch.futures.Future[torch.Tensor] = torch.futures.Future()
    done.set_result(buffer)
    return done
