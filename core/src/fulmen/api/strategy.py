"""``Strategy``: how a model, its data and its gradients are spread over devices and processes.

Composition constructs a strategy from its record (or takes the user's instance) and calls
:meth:`Strategy.attach` with the accelerator, precision, cluster environment and devices it
chose. Ranks and world size come from the cluster environment.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from fulmen.api.naming import Named

if TYPE_CHECKING:
    import torch

    from fulmen.api.accelerator import Accelerator
    from fulmen.api.checkpoint_io import CheckpointIO
    from fulmen.api.environment import ClusterEnvironment
    from fulmen.api.launcher import Launcher
    from fulmen.api.precision import Precision


class Strategy(Named, ABC):
    """Base of every strategy; single-process behaviour lives in ``SingleDeviceStrategy``."""

    def __init__(self) -> None:
        self.accelerator: Accelerator | None = None
        self.precision: Precision | None = None
        self.cluster_environment: ClusterEnvironment | None = None
        self.checkpoint_io: CheckpointIO | None = None
        self.launcher: Launcher | None = None
        self.parallel_devices: list[torch.device] = []
        self.num_nodes = 1

    def attach(self, *, accelerator: Accelerator, precision: Precision,
               cluster_environment: ClusterEnvironment, parallel_devices: list[torch.device],
               num_nodes: int, checkpoint_io: CheckpointIO | None = None,
               launcher: Launcher | None = None) -> None:
        """Receive what composition selected, and tell the environment the process layout."""
        from fulmen.api.checkpoint_io import TorchCheckpointIO

        self.accelerator, self.precision = accelerator, precision
        self.cluster_environment, self.launcher = cluster_environment, launcher
        self.parallel_devices, self.num_nodes = list(parallel_devices), num_nodes
        self.checkpoint_io = checkpoint_io or self.checkpoint_io or TorchCheckpointIO()
        precision.connect(accelerator.device_type)
        if not cluster_environment.creates_processes_externally:
            per_node = self.processes_per_node
            cluster_environment.set_world_size(per_node * num_nodes)
            cluster_environment.set_global_rank(
                cluster_environment.node_rank() * per_node + cluster_environment.local_rank())

    def _env(self) -> ClusterEnvironment:
        if self.cluster_environment is None:
            from fulmen.errors import FulmenError

            raise FulmenError(f"strategy {self.name!r} is not attached to a selection yet; "
                              "construct a Trainer or Lite with it")
        return self.cluster_environment

    @property
    def processes_per_node(self) -> int:
        """Processes on each node: one per device unless the strategy drives several per process."""
        return max(len(self.parallel_devices), 1)

    @property
    def world_size(self) -> int:
        return self._env().world_size()

    @property
    def global_rank(self) -> int:
        return self._env().global_rank()

    @property
    def local_rank(self) -> int:
        return self._env().local_rank()

    @property
    def node_rank(self) -> int:
        return self._env().node_rank()

    @property
    def is_global_zero(self) -> bool:
        return self.global_rank == 0

    @property
    @abstractmethod
    def root_device(self) -> torch.device:
        """The device this process computes on."""

    def module_to_device(self, module: torch.nn.Module) -> torch.nn.Module:
        """Move a module (parameters and registered buffers) to ``root_device``."""
        return module.to(self.root_device)

    @abstractmethod
    def reduce(self, tensor: Any, reduce_op: str = "mean") -> Any:
        """Reduce a tensor across processes (``"mean"``, ``"sum"``, ``"max"``, ``"min"``)."""

    @abstractmethod
    def all_gather(self, tensor: Any, sync_grads: bool = False) -> Any:
        """Gather a tensor from every process, stacked on a new first dimension."""

    @abstractmethod
    def broadcast(self, obj: Any, src: int = 0) -> Any:
        """Send any picklable object from rank ``src`` to every process."""

    @abstractmethod
    def barrier(self, name: str | None = None) -> None:
        """Wait until every process reaches this point."""

    def teardown(self) -> None:
        """Release the devices and the environment after a run."""
        if self.accelerator is not None:
            self.accelerator.teardown()
        if self.cluster_environment is not None:
            self.cluster_environment.teardown()
