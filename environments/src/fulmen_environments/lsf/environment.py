"""``LSFEnvironment``: ``jsrun`` started the processes. Ranks come from ``JSM_NAMESPACE_*``;
hosts from the rank file ``LSB_DJOB_RANKFILE`` (one host per line, the first is the launch node
and is skipped)."""

from __future__ import annotations

import os
from pathlib import Path

from fulmen import ConfigurationError
from fulmen_environments import variables as v
from fulmen_environments.lsf import SPEC
from fulmen_environments.scheduled import ScheduledEnvironment

REQUIRED = ("LSB_JOBID", "LSB_DJOB_RANKFILE", "JSM_NAMESPACE_SIZE", "JSM_NAMESPACE_RANK",
            "JSM_NAMESPACE_LOCAL_RANK")


def read_rank_file(path: str) -> list[str]:
    """Hosts of the job, in rank order, without the launch node."""
    try:
        lines = [line.strip() for line in Path(path).read_text().splitlines() if line.strip()]
    except OSError as exc:
        raise ConfigurationError(f"LSB_DJOB_RANKFILE={path!r} cannot be read: {exc}") from exc
    if len(lines) < 2:
        raise ConfigurationError(f"LSB_DJOB_RANKFILE={path!r} lists {len(lines)} host(s); "
                                 "expected the launch node followed by the compute hosts")
    return lines[1:]


class LSFEnvironment(ScheduledEnvironment):
    name = SPEC.name  # the registered name, from the plugin's record
    sigterm_window = 10.0  # bkill: SIGINT, SIGTERM, then SIGKILL after JOB_TERMINATE_INTERVAL

    @property
    def hosts(self) -> list[str]:
        return read_rank_file(self.environ["LSB_DJOB_RANKFILE"])

    @property
    def main_address(self) -> str:
        return self.hosts[0]

    @property
    def main_port(self) -> int:
        if "MASTER_PORT" in self.environ:
            return v.port(self.environ["MASTER_PORT"], "MASTER_PORT")
        return 10000 + v.integer(self.environ, "LSB_JOBID") % 1000

    @staticmethod
    def detect() -> bool:
        return all(n in os.environ for n in REQUIRED[:4])

    def world_size(self) -> int:
        return v.integer(self.environ, "JSM_NAMESPACE_SIZE", 1)

    def global_rank(self) -> int:
        return v.integer(self.environ, "JSM_NAMESPACE_RANK")

    def local_rank(self) -> int:
        return v.integer(self.environ, "JSM_NAMESPACE_LOCAL_RANK")

    def node_rank(self) -> int:
        """Position of this host among the distinct hosts of the rank file."""
        hosts = self.hosts
        distinct = list(dict.fromkeys(hosts))
        return distinct.index(hosts[self.global_rank()])

    def validate_settings(self, num_devices: int, num_nodes: int) -> None:
        v.require("LSF", self.environ, REQUIRED)
        v.check_ranks("LSF", self.world_size(), self.global_rank())
        hosts = self.hosts
        if len(hosts) != self.world_size():
            raise ConfigurationError(f"the LSF rank file lists {len(hosts)} ranks but "
                                     f"JSM_NAMESPACE_SIZE={self.world_size()}")
        nodes = len(set(hosts))
        if nodes != num_nodes or self.world_size() != num_devices * num_nodes:
            raise ConfigurationError(
                f"the LSF job runs {self.world_size()} processes on {nodes} hosts, but the "
                f"Trainer was given devices={num_devices} x num_nodes={num_nodes}")
