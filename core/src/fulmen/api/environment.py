"""``ClusterEnvironment``: what a user implements to run fulmen under their own scheduler."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from fulmen.api.naming import Named

if TYPE_CHECKING:
    from fulmen.api.notice import PreemptionNotice

#: seconds between a stop notice and the hard kill, when the job knows better than its
#: environment (Kubernetes: the pod's terminationGracePeriodSeconds)
WINDOW_VARIABLE = "FULMEN_PREEMPTION_WINDOW"


class ClusterEnvironment(Named, ABC):
    """Tells fulmen how processes are laid out on a cluster.

    Implement the abstract members; ``validate_settings``, ``teardown`` and the preemption members
    (``preemption_signals``, ``preemption_window``, ``preemption_notices``, ``requeue``,
    ``restart_count``) are optional. Pass an
    instance with ``Trainer(plugins=[MyCluster()])`` or ship it as a plugin (``EnvironmentSpec`` +
    the ``fulmen_detect_environment`` hook).
    """

    @property
    @abstractmethod
    def creates_processes_externally(self) -> bool:
        """True when the cluster started every process (fulmen then launches none)."""

    @property
    @abstractmethod
    def main_address(self) -> str:
        """Address of the rank-0 process, for the rendezvous."""

    @property
    @abstractmethod
    def main_port(self) -> int:
        """Port of the rendezvous on ``main_address``."""

    @staticmethod
    @abstractmethod
    def detect() -> bool:
        """Whether this process runs under this environment. Reads the environment only."""

    @abstractmethod
    def world_size(self) -> int:
        """Total number of processes."""

    @abstractmethod
    def set_world_size(self, size: int) -> None:
        """Called by the strategy with the world size it computed; may be ignored."""

    @abstractmethod
    def global_rank(self) -> int:
        """Rank of this process among all processes."""

    @abstractmethod
    def set_global_rank(self, rank: int) -> None:
        """Called by the strategy with the rank it computed; may be ignored."""

    @abstractmethod
    def local_rank(self) -> int:
        """Rank of this process on its node."""

    @abstractmethod
    def node_rank(self) -> int:
        """Rank of this node."""

    def validate_settings(self, num_devices: int, num_nodes: int) -> None:
        """Raise ``fulmen.ConfigurationError`` when ``devices``/``num_nodes`` disagree with the
        cluster (name both sides)."""

    def teardown(self) -> None:
        """Clean up what the environment set (environment variables...) after training."""

    # ------------------------------------------------------------------ preemption (optional)

    def preemption_signals(self) -> Mapping[int, str]:
        """Signals the scheduler sends before it stops the job, and what the Trainer does on each.

        ``"requeue"``: finish the current batch, save a checkpoint, call :meth:`requeue` on rank
        zero, exit with status 0. ``"stop"``: the same without requeueing. All ranks act on the
        same batch. The default is none: signals keep Python's default behaviour.
        """
        return {}

    def preemption_window(self) -> float | None:
        """Seconds the scheduler leaves between its notice and the hard kill (None: unknown).

        The default reads ``FULMEN_PREEMPTION_WINDOW``; environments whose scheduler fixes the
        window return it when the variable is not set."""
        value = os.environ.get(WINDOW_VARIABLE)
        if value is None:
            return None
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if not seconds > 0:
            from fulmen.errors import ConfigurationError

            raise ConfigurationError(f"{WINDOW_VARIABLE}={value!r}: expected the seconds "
                                     "between a stop notice and the kill, such as 30")
        return seconds

    def preemption_notices(self) -> Sequence[PreemptionNotice]:
        """The sources of stop notices under this scheduler, started for each ``fit``.

        The default watches :meth:`preemption_signals` (a ``fulmen.notices.SignalNotice`` with
        :meth:`preemption_window`). Override to add others, such as a cloud provider's spot
        notice (``fulmen_environments.notices``); ``Trainer(plugins=[...])`` adds more."""
        signals = self.preemption_signals()
        if not signals:
            return ()
        from fulmen.notices import SignalNotice

        return (SignalNotice(signals, self.preemption_window()),)

    def requeue(self) -> None:
        """Put this job back into the scheduler's queue (called on global rank zero only, after
        the preemption checkpoint is written). Raise ``fulmen.FulmenError`` if it fails."""
        raise NotImplementedError(f"the {self.name!r} environment cannot requeue a job")

    def restart_count(self) -> int:
        """How often the scheduler restarted this job (0 on the first start). On a restart,
        ``trainer.fit(ckpt_path=None)`` resumes from the newest checkpoint it finds."""
        return 0
