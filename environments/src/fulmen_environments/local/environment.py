"""The machine fulmen runs on, with no scheduler: fulmen's own launcher creates the processes."""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Mapping

from fulmen import ClusterEnvironment, ConfigurationError
from fulmen_environments.local import SPEC


class LocalEnvironment(ClusterEnvironment):
    """Reads what fulmen's launcher (or the user) set: ``MASTER_ADDR``, ``MASTER_PORT``,
    ``LOCAL_RANK``, ``NODE_RANK``, ``WORLD_SIZE``, ``RANK``. Without them it is process 0 of a
    run it will launch."""

    name = SPEC.name  # the registered name, from the plugin's record

    def __init__(self) -> None:
        self._world_size = 1
        self._global_rank = 0
        self._main_port: int | None = None

    @property
    def creates_processes_externally(self) -> bool:
        """True when ``LOCAL_RANK`` is set: this process was started by a launcher already."""
        return "LOCAL_RANK" in os.environ

    @property
    def main_address(self) -> str:
        return os.environ.get("MASTER_ADDR", "127.0.0.1")

    @property
    def main_port(self) -> int:
        if "MASTER_PORT" in os.environ:
            return _port(os.environ["MASTER_PORT"], "MASTER_PORT")
        if self._main_port is None:
            self._main_port = find_free_port()
        return self._main_port

    @staticmethod
    def detect() -> bool:
        return True

    def preemption_signals(self) -> Mapping[int, str]:
        """SIGTERM (``kill``, a container runtime stopping the container, Kubernetes evicting a
        pod): save a checkpoint at the next step boundary and exit with 143."""
        return {signal.SIGTERM: "stop"}

    def preemption_window(self) -> float | None:
        """``FULMEN_PREEMPTION_WINDOW`` if set; in a Kubernetes pod, 30 s (the default
        ``terminationGracePeriodSeconds``); otherwise unknown."""
        window = super().preemption_window()
        if window is None and "KUBERNETES_SERVICE_HOST" in os.environ:
            return 30.0
        return window

    def world_size(self) -> int:
        if self.creates_processes_externally and "WORLD_SIZE" in os.environ:
            return _rank(os.environ["WORLD_SIZE"], "WORLD_SIZE")
        return self._world_size

    def set_world_size(self, size: int) -> None:
        self._world_size = size

    def global_rank(self) -> int:
        if self.creates_processes_externally and "RANK" in os.environ:
            return _rank(os.environ["RANK"], "RANK")
        return self._global_rank

    def set_global_rank(self, rank: int) -> None:
        self._global_rank = rank

    def validate_settings(self, num_devices: int, num_nodes: int) -> None:
        """Variables set by hand (or by another launcher) must agree with each other."""
        if not self.creates_processes_externally:
            _refuse_stray_ranks(num_devices * num_nodes)
            return
        if "WORLD_SIZE" not in os.environ:
            return
        world = self.world_size()
        for var in ("RANK", "LOCAL_RANK"):
            if var in os.environ and _rank(os.environ[var], var) >= world:
                raise ConfigurationError(
                    f"{var}={os.environ[var]} but WORLD_SIZE={os.environ['WORLD_SIZE']}: a rank "
                    "must be below the world size (ranks count from 0). Fix the variables, or "
                    "unset LOCAL_RANK, RANK and WORLD_SIZE and let fulmen start the processes")

    def local_rank(self) -> int:
        return _rank(os.environ.get("LOCAL_RANK", "0"), "LOCAL_RANK")

    def node_rank(self) -> int:
        return _rank(os.environ.get("NODE_RANK", os.environ.get("GROUP_RANK", "0")), "NODE_RANK")


def _refuse_stray_ranks(processes: int) -> None:
    """``RANK``/``WORLD_SIZE`` without ``LOCAL_RANK``: this process would start its own processes
    and ignore them, so a job started by hand as "rank 1 of 2" would run twice. Only the
    harmless ``RANK=0``/``WORLD_SIZE=1`` pass."""
    given = {var: os.environ[var] for var in ("RANK", "WORLD_SIZE") if var in os.environ}
    if not given:
        return
    for var, value in given.items():
        _rank(value, var)
    if given.get("WORLD_SIZE") == "0":
        raise ConfigurationError("WORLD_SIZE=0: a world has at least one process; unset it (fulmen "
                                 "counts the processes from devices and num_nodes)")
    if given.get("RANK", "0").strip() == "0" and given.get("WORLD_SIZE", "1").strip() == "1":
        return
    shown = " and ".join(f"{var}={value}" for var, value in given.items())
    raise ConfigurationError(
        f"{shown} {'is' if len(given) == 1 else 'are'} set but LOCAL_RANK is not: fulmen reads "
        "the rank variables only in a process a launcher started (torchrun sets LOCAL_RANK, RANK "
        f"and WORLD_SIZE together), so this process would start {processes} process(es) of its "
        "own and ignore them. Set LOCAL_RANK as well (and MASTER_ADDR/MASTER_PORT), or unset "
        f"{' and '.join(given)} and let fulmen start the processes")


def find_free_port() -> int:
    """A TCP port that is free on the loopback interface right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rank(value: str, var: str) -> int:
    if not value.strip().isdigit():
        raise ConfigurationError(f"{var}={value!r} must be a non-negative integer")
    return int(value)


def _port(value: str, var: str) -> int:
    port = int(value) if value.strip().isdigit() else -1
    if not 1 <= port <= 65535:
        raise ConfigurationError(f"{var}={value!r} must be a port number between 1 and 65535")
    return port
