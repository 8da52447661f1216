"""``KubeflowEnvironment``: a PyTorchJob runs one process per pod and sets
``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE`` and ``RANK``."""

from __future__ import annotations

from fulmen import ConfigurationError
from fulmen_environments import variables as v
from fulmen_environments.kubeflow import SPEC
from fulmen_environments.scheduled import EnvVariablesEnvironment

REQUIRED = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")


class KubeflowEnvironment(EnvVariablesEnvironment):
    name = SPEC.name  # the registered name, from the plugin's record
    sigterm_window = 30.0  # Kubernetes' default terminationGracePeriodSeconds

    @staticmethod
    def detect() -> bool:
        return False  # only by name: plugins=["kubeflow"]

    def local_rank(self) -> int:
        return 0  # one process per pod

    def node_rank(self) -> int:
        return self.global_rank()

    def validate_settings(self, num_devices: int, num_nodes: int) -> None:
        v.require("Kubeflow", self.environ, REQUIRED)
        v.check_ranks("Kubeflow", self.world_size(), self.global_rank())
        _ = self.main_port
        if num_devices != 1:
            raise ConfigurationError(f"a Kubeflow PyTorchJob runs one process per pod, but "
                                     f"devices={num_devices}; use devices=1 and one replica per "
                                     "device")
        if self.world_size() != num_nodes:
            raise ConfigurationError(f"the PyTorchJob has {self.world_size()} replicas "
                                     f"(WORLD_SIZE), but num_nodes={num_nodes}; make them equal")
