"""``MPIEnvironment``: ``mpirun`` started the processes; ranks come from the MPI
implementation's variables (Open MPI, MPICH/PMI, MVAPICH)."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

from fulmen import ConfigurationError
from fulmen_environments import variables as v
from fulmen_environments.mpi import SPEC
from fulmen_environments.scheduled import ScheduledEnvironment

_PREFIXES = {"OMPI_COMM_WORLD": ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                                 "OMPI_COMM_WORLD_LOCAL_RANK"),
             "PMI": ("PMI_SIZE", "PMI_RANK", "MPI_LOCALRANKID"),
             "MV2": ("MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_LOCAL_RANK")}


class MPIEnvironment(ScheduledEnvironment):
    name = SPEC.name  # the registered name, from the plugin's record

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        super().__init__(environ)
        self._address: str | None = None

    def _names(self) -> tuple[str, str, str]:
        for names in _PREFIXES.values():
            if names[0] in self.environ and names[1] in self.environ:
                return names
        raise ConfigurationError("no MPI rank variables found (OMPI_COMM_WORLD_*, PMI_*, "
                                 "MV2_COMM_WORLD_*): was this process started by mpirun?")

    @property
    def main_address(self) -> str:
        if "MASTER_ADDR" in self.environ:
            return self.environ["MASTER_ADDR"]
        if self._address is None:
            try:
                from mpi4py import MPI
            except ImportError as exc:
                raise ConfigurationError(
                    "the mpi environment needs MASTER_ADDR, or mpi4py to ask rank 0 for its "
                    "address: pip install 'fulmen-environments[mpi]'") from exc
            self._address = MPI.COMM_WORLD.bcast(socket.gethostname(), root=0)
        return self._address

    @property
    def main_port(self) -> int:
        if "MASTER_PORT" in self.environ:
            return v.port(self.environ["MASTER_PORT"], "MASTER_PORT")
        return 12910

    @staticmethod
    def detect() -> bool:
        return any(n[0] in os.environ and n[1] in os.environ for n in _PREFIXES.values())

    def world_size(self) -> int:
        return v.integer(self.environ, self._names()[0], 1)

    def global_rank(self) -> int:
        return v.integer(self.environ, self._names()[1])

    def local_rank(self) -> int:
        name = self._names()[2]
        return v.integer(self.environ, name) if name in self.environ else 0

    def node_rank(self) -> int:
        """Rank // processes per node (MPI places ranks by node); 0 when the size is unknown."""
        for name in ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE"):
            if name in self.environ:
                return self.global_rank() // v.integer(self.environ, name, 1)
        return 0

    def validate_settings(self, num_devices: int, num_nodes: int) -> None:
        v.check_ranks("MPI", self.world_size(), self.global_rank())
        if self.world_size() != num_devices * num_nodes:
            raise ConfigurationError(
                f"mpirun started {self.world_size()} processes, but devices={num_devices} x "
                f"num_nodes={num_nodes} makes {num_devices * num_nodes}; make them agree (-np)")
