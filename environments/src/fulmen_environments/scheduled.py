"""``ScheduledEnvironment``: what every environment whose processes a scheduler started shares;
``EnvVariablesEnvironment``: those whose launcher sets torch's ``env://`` variables."""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping

from fulmen import ClusterEnvironment
from fulmen_environments import variables as v


class ScheduledEnvironment(ClusterEnvironment):
    """The scheduler created the processes and decided world size and ranks: the strategy's
    ``set_world_size``/``set_global_rank`` are ignored. ``environ`` defaults to ``os.environ``
    (pass a dict to read another process's variables, as tests do)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = environ

    @property
    def environ(self) -> Mapping[str, str]:
        return os.environ if self._environ is None else self._environ

    @property
    def creates_processes_externally(self) -> bool:
        return True

    def set_world_size(self, size: int) -> None:
        pass

    #: seconds the scheduler waits between SIGTERM and SIGKILL, when it is fixed
    sigterm_window: float | None = None

    def preemption_signals(self) -> Mapping[int, str]:
        """SIGTERM (what a scheduler sends before it kills the job): save a checkpoint at the
        next step boundary and exit with 143, so the supervisor (torchrun's agent, a Job's
        restart policy) restarts the job, which resumes with ``ckpt_path="last"``."""
        return {signal.SIGTERM: "stop"}

    def preemption_window(self) -> float | None:
        window = super().preemption_window()
        return self.sigterm_window if window is None else window

    def set_global_rank(self, rank: int) -> None:
        pass


class EnvVariablesEnvironment(ScheduledEnvironment):
    """The launcher set torch's ``env://`` variables: ``MASTER_ADDR``, ``MASTER_PORT``,
    ``WORLD_SIZE`` and ``RANK`` (torchrun, a Kubeflow PyTorchJob)."""

    @property
    def main_address(self) -> str:
        return self.environ["MASTER_ADDR"]

    @property
    def main_port(self) -> int:
        return v.port(self.environ["MASTER_PORT"], "MASTER_PORT")

    def world_size(self) -> int:
        return v.integer(self.environ, "WORLD_SIZE", 1)

    def global_rank(self) -> int:
        return v.integer(self.environ, "RANK")
