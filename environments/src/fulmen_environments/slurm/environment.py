"""``SLURMEnvironment``: ``srun`` started one process per task; SLURM says who is who."""

from __future__ import annotations

import os

from fulmen import ConfigurationError
from fulmen_environments import variables as v
from fulmen_environments.scheduled import ScheduledEnvironment
from fulmen_environments.slurm.nodelist import expand

REQUIRED = ("SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID",
            "SLURM_JOB_NODELIST", "SLURM_JOB_ID")


class SLURMEnvironment(ScheduledEnvironment):
    """Reads ``SLURM_NTASKS`` (world size), ``SLURM_PROCID``, ``SLURM_LOCALID``,
    ``SLURM_NODEID`` and ``SLURM_JOB_NODELIST`` (the first host is the rendezvous). The port is
    ``MASTER_PORT`` if set, else derived from ``SLURM_JOB_ID`` so every task agrees on it."""

    name = "slurm"

    @property
    def main_address(self) -> str:
        if "MASTER_ADDR" in self.environ:
            return self.environ["MASTER_ADDR"]
        return expand(self.environ["SLURM_JOB_NODELIST"])[0]

    @property
    def main_port(self) -> int:
        if "MASTER_PORT" in self.environ:
            return v.port(self.environ["MASTER_PORT"], "MASTER_PORT")
        job_id = v.integer(self.environ, "SLURM_JOB_ID")
        return 15000 + job_id % 5000

    @staticmethod
    def detect() -> bool:
        return "SLURM_NTASKS" in os.environ and os.environ.get("SLURM_JOB_NAME") not in (
            "bash", "interactive")

    def world_size(self) -> int:
        return v.integer(self.environ, "SLURM_NTASKS", 1)

    def global_rank(self) -> int:
        return v.integer(self.environ, "SLURM_PROCID")

    def local_rank(self) -> int:
        return v.integer(self.environ, "SLURM_LOCALID")

    def node_rank(self) -> int:
        return v.integer(self.environ, "SLURM_NODEID")

    def validate_settings(self, num_devices: int, num_nodes: int) -> None:
        v.require("SLURM", self.environ, REQUIRED)
        v.check_ranks("SLURM", self.world_size(), self.global_rank())
        _ = self.main_address, self.main_port  # the node list and port must read
        per_node = self.environ.get("SLURM_NTASKS_PER_NODE", "").split("(")[0]
        if per_node.isdigit() and int(per_node) != num_devices:
            raise ConfigurationError(
                f"SLURM runs {per_node} tasks per node (--ntasks-per-node), but the Trainer was "
                f"given devices={num_devices}; they must be equal")
        nodes = self.environ.get("SLURM_NNODES", "")
        if nodes.isdigit() and int(nodes) != num_nodes:
            raise ConfigurationError(
                f"the SLURM job has {nodes} nodes (--nodes), but the Trainer was given "
                f"num_nodes={num_nodes}; they must be equal")
        if self.world_size() != num_devices * num_nodes:
            raise ConfigurationError(
                f"SLURM started {self.world_size()} tasks (SLURM_NTASKS), but devices="
                f"{num_devices} x num_nodes={num_nodes} makes {num_devices * num_nodes}")
