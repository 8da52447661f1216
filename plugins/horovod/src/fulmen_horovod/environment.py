"""``HorovodEnvironment``: ``horovodrun --gloo`` started the processes and set their ranks."""

from __future__ import annotations

import os
from collections.abc import Mapping

from fulmen_environments import variables as v
from fulmen_environments.scheduled import ScheduledEnvironment
from fulmen_horovod import ENVIRONMENT


class HorovodEnvironment(ScheduledEnvironment):
    """Ranks from ``HOROVOD_RANK``/``HOROVOD_SIZE``/``HOROVOD_LOCAL_RANK``/``HOROVOD_CROSS_RANK``
    (node rank). Horovod does its own rendezvous (``HOROVOD_GLOO_RENDEZVOUS_ADDR``/``_PORT``),
    which is what ``main_address``/``main_port`` report."""

    name = ENVIRONMENT.name  # the registered name, from the plugin's record

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        super().__init__(environ)

    @property
    def main_address(self) -> str:
        return self.environ.get("HOROVOD_GLOO_RENDEZVOUS_ADDR", "127.0.0.1")

    @property
    def main_port(self) -> int:
        port = self.environ.get("HOROVOD_GLOO_RENDEZVOUS_PORT")
        return v.port(port, "HOROVOD_GLOO_RENDEZVOUS_PORT") if port else 0

    @staticmethod
    def detect() -> bool:
        return "HOROVOD_RANK" in os.environ and "HOROVOD_SIZE" in os.environ

    def world_size(self) -> int:
        return v.integer(self.environ, "HOROVOD_SIZE", 1)

    def global_rank(self) -> int:
        return v.integer(self.environ, "HOROVOD_RANK")

    def local_rank(self) -> int:
        return v.integer(self.environ, "HOROVOD_LOCAL_RANK") \
            if "HOROVOD_LOCAL_RANK" in self.environ else 0

    def local_size(self) -> int:
        return v.integer(self.environ, "HOROVOD_LOCAL_SIZE", 1) \
            if "HOROVOD_LOCAL_SIZE" in self.environ else 1

    def node_rank(self) -> int:
        return v.integer(self.environ, "HOROVOD_CROSS_RANK") \
            if "HOROVOD_CROSS_RANK" in self.environ else 0

    def validate_settings(self, num_devices: int, num_nodes: int) -> None:
        """The ranks must make sense; devices per process are the strategy's to check."""
        v.check_ranks("Horovod", self.world_size(), self.global_rank())
