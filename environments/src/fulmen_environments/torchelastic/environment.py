"""``TorchElasticEnvironment``: torchrun created every process and says who is who."""

from __future__ import annotations

import os

from fulmen import ConfigurationError
from fulmen_environments import variables as v
from fulmen_environments.scheduled import EnvVariablesEnvironment
from fulmen_environments.torchelastic import SPEC

REQUIRED = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "GROUP_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
            "MASTER_PORT")


class TorchElasticEnvironment(EnvVariablesEnvironment):
    """Reads ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``GROUP_RANK``, ``LOCAL_WORLD_SIZE``,
    ``MASTER_ADDR`` and ``MASTER_PORT``. ``restart_count()`` (``TORCHELASTIC_RESTART_COUNT``) tells
    an elastic restart apart from a first start: the Trainer then resumes from the newest
    checkpoint."""

    name = SPEC.name  # the registered name, from the plugin's record
    sigterm_window = 30.0  # torchrun's agent: SIGTERM, then SIGKILL 30 s later

    @staticmethod
    def detect() -> bool:
        return all(name in os.environ for name in REQUIRED)

    def local_rank(self) -> int:
        return v.integer(self.environ, "LOCAL_RANK")

    def node_rank(self) -> int:
        return v.integer(self.environ, "GROUP_RANK")

    def restart_count(self) -> int:
        return v.integer(self.environ, "TORCHELASTIC_RESTART_COUNT") if \
            "TORCHELASTIC_RESTART_COUNT" in self.environ else 0

    def validate_settings(self, num_devices: int, num_nodes: int) -> None:
        v.require("torchelastic", self.environ, REQUIRED)
        v.check_ranks("torchelastic", self.world_size(), self.global_rank())
        _ = self.main_port  # validates the port
        local = v.integer(self.environ, "LOCAL_WORLD_SIZE", 1)
        if local != num_devices:
            raise ConfigurationError(
                f"torchrun started {local} processes per node (--nproc_per_node / "
                f"LOCAL_WORLD_SIZE={local}), but the Trainer was given devices={num_devices}; "
                "make them equal")
        if self.world_size() != local * num_nodes:
            raise ConfigurationError(
                f"torchrun's world size is {self.world_size()} (WORLD_SIZE), but devices="
                f"{num_devices} x num_nodes={num_nodes} makes {num_devices * num_nodes}; set "
                "num_nodes to torchrun's --nnodes")
