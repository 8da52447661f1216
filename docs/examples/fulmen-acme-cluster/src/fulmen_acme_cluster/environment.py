"""``AcmeEnvironment``: the Acme scheduler started every process and says who is who."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping

from fulmen import ClusterEnvironment, ConfigurationError, FulmenError
from fulmen_acme_cluster import VARIABLES


class AcmeEnvironment(ClusterEnvironment):
    """Ranks and sizes from ``ACME_*`` variables; the rendezvous is on ``ACME_HEAD_NODE`` at a
    port derived from the job id (every task computes the same one)."""

    name = "acme"

    @property
    def creates_processes_externally(self) -> bool:
        return True  # Acme starts every task: fulmen launches nothing

    @property
    def main_address(self) -> str:
        return os.environ["ACME_HEAD_NODE"]

    @property
    def main_port(self) -> int:
        return int(os.environ.get("ACME_PORT", 20000 + int(os.environ["ACME_JOB_ID"]) % 10000))

    @staticmethod
    def detect() -> bool:
        return "ACME_JOB_ID" in os.environ and "ACME_RANK" in os.environ

    def world_size(self) -> int:
        return int(os.environ["ACME_WORLD_SIZE"])

    def set_world_size(self, size: int) -> None:
        pass  # the scheduler decided it

    def global_rank(self) -> int:
        return int(os.environ["ACME_RANK"])

    def set_global_rank(self, rank: int) -> None:
        pass

    def local_rank(self) -> int:
        return int(os.environ["ACME_LOCAL_RANK"])

    def node_rank(self) -> int:
        return int(os.environ["ACME_NODE_RANK"])

    def validate_settings(self, num_devices: int, num_nodes: int) -> None:
        missing = [name for name in VARIABLES if name not in os.environ]
        if missing:
            raise ConfigurationError(f"this Acme job lacks {missing}; is it an Acme task?")
        if self.world_size() != num_devices * num_nodes:
            raise ConfigurationError(
                f"Acme started {self.world_size()} tasks (ACME_WORLD_SIZE), but devices="
                f"{num_devices} x num_nodes={num_nodes} makes {num_devices * num_nodes}")

    # Acme warns a job with SIGUSR1 before preempting it, and can requeue it.
    def preemption_signals(self) -> Mapping[int, str]:
        return {signal.SIGUSR1: "requeue", signal.SIGTERM: "stop"}

    def requeue(self) -> None:
        done = subprocess.run(["acme-requeue", os.environ["ACME_JOB_ID"]], capture_output=True,
                              text=True)
        if done.returncode != 0:
            raise FulmenError(f"acme-requeue failed: {done.stderr.strip()}")

    def restart_count(self) -> int:
        return int(os.environ.get("ACME_RESTARTS", "0"))
