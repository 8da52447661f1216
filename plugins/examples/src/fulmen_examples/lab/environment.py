"""``LabEnvironment``: the lab's scheduler starts every process and describes it in ``LAB_*``
variables (``LAB_WORLD_SIZE``, ``LAB_RANK``, ``LAB_LOCAL_RANK``, ``LAB_NODE_RANK``,
``LAB_MAIN_ADDRESS``, ``LAB_MAIN_PORT``). Outside the scheduler it is one process."""

import os

from fulmen import ClusterEnvironment, ConfigurationError


def _int(var: str, default: int) -> int:
    raw = os.environ.get(var, str(default))
    if not raw.strip().isdigit():
        raise ConfigurationError(f"{var}={raw!r} must be a non-negative integer")
    return int(raw)


class LabEnvironment(ClusterEnvironment):
    @property
    def creates_processes_externally(self) -> bool:
        return True

    @property
    def main_address(self) -> str:
        return os.environ.get("LAB_MAIN_ADDRESS", "127.0.0.1")

    @property
    def main_port(self) -> int:
        return _int("LAB_MAIN_PORT", 29555)

    @staticmethod
    def detect() -> bool:
        return "LAB_RANK" in os.environ

    def world_size(self) -> int:
        return _int("LAB_WORLD_SIZE", 1)

    def set_world_size(self, size: int) -> None:
        pass  # the scheduler decided

    def global_rank(self) -> int:
        return _int("LAB_RANK", 0)

    def set_global_rank(self, rank: int) -> None:
        pass

    def local_rank(self) -> int:
        return _int("LAB_LOCAL_RANK", 0)

    def node_rank(self) -> int:
        return _int("LAB_NODE_RANK", 0)
