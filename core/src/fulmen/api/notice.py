"""``PreemptionNotice``: a source of stop notices — whatever tells a run, ahead of time, that its
processes are about to be stopped (a POSIX signal from a scheduler, a cloud provider's spot or
preemption notice on its instance-metadata endpoint).

A cluster environment names its own (``ClusterEnvironment.preemption_notices()``); more are
passed as ``Trainer(plugins=[AWSSpotNotice()])``. The Trainer starts every source when ``fit``
begins and stops it when ``fit`` ends. A source only *announces*; the Trainer makes every rank
agree on the next step boundary, writes one checkpoint there, and exits with the scheduler's
convention (see docs/fault-tolerance.md).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

from fulmen.api.naming import Named

#: what a notice asks for: ``"requeue"`` (save, put the job back in the queue, exit 0) or
#: ``"stop"`` (save, exit with 128 + the signal number, so a supervisor restarts the job)
ACTIONS = ("stop", "requeue")


@dataclass(frozen=True)
class Notice:
    """One announcement that this process will be stopped.

    ``source``: the announcing plugin's ``name``; ``action``: one of :data:`ACTIONS`;
    ``signum``: the signal the exit status reports (``128 + signum`` after a stop; SIGTERM for
    a notice that is no signal); ``window``: seconds from the notice to the hard stop, when the
    source knows it; ``detail``: what was received, for people; ``received``: wall-clock time.
    """

    source: str
    action: str
    signum: int
    window: float | None = None
    detail: str = ""
    received: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            from fulmen.errors import ConfigurationError

            raise ConfigurationError(f"notice from {self.source!r}: action={self.action!r}; "
                                     f"the actions are {', '.join(map(repr, ACTIONS))}")


class PreemptionNotice(Named, ABC):
    """Watches for stop notices and announces each one.

    Implement :meth:`start` (and :meth:`stop` when it holds a resource). ``announce`` may be
    called from any thread or from a signal handler: it only records the notice.
    """

    #: True when the notice describes the machine rather than the process (a cloud VM's
    #: metadata endpoint): then only local rank 0 of each node watches, and the ranks' vote
    #: carries the notice to the others.
    per_node: bool = False
    #: seconds between a notice and the hard stop, when known before any notice arrives (the
    #: log names it for a notice another rank received)
    window: float | None = None

    @abstractmethod
    def start(self, announce: Callable[[Notice], None]) -> None:
        """Begin watching (called on the training thread when ``fit`` starts). Raise
        ``fulmen.ConfigurationError`` when this source cannot watch here, saying why."""

    def stop(self) -> None:
        """Stop watching and release what :meth:`start` took (called when ``fit`` ends, also
        after an error)."""

    def describe(self) -> str:
        """One line for the log: what this source watches."""
        return self.name
