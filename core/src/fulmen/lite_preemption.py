"""Lite's stop notices and lost work: the same guarantees as the Trainer's, in the user's loop.

The loop asks at each step boundary, ``if lite.should_stop(): lite.save(path, state); break``.
The first call starts the notice sources (the cluster environment's, SIGTERM under torchrun,
Kubernetes or a plain machine; and those in ``Lite(plugins=[...])``); every call after passes
one step boundary, and the ranks agree on a notice with the Trainer's vote
(:class:`fulmen.fault_tolerance.preemption.Preemption`: no collective in a single process, an
asynchronous one about every half second otherwise), so ``should_stop()`` turns True on every
rank after the same step. The next ``lite.save`` is the preemption checkpoint: committed (an
asynchronous save waited for), timed against the notice window, logged; when the loop's
function returns, each process exits with the scheduler's convention (a SLURM requeue and 0;
else 128 + the signal: 143, which torchrun and Kubernetes restart).

Lost work: once the loop calls ``should_stop()``, every dictionary ``lite.save`` writes records
``fault_tolerance`` (when and why, the resumes so far), and global rank zero keeps the
heartbeat ``fulmen_progress.json`` beside the checkpoints. ``lite.load`` of such a checkpoint
sets the step count to the checkpoint's and, after the first step, logs and sends to the loggers
the steps and seconds redone and the time from the failure to that step
(:mod:`fulmen.fault_tolerance.lost_work`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fulmen import storage
from fulmen.errors import FulmenError
from fulmen.fault_tolerance.lost_work import KEY, Ledger, Resume
from fulmen.fault_tolerance.preemption import Preempted, Preemption
from fulmen.status import configure_logging

if TYPE_CHECKING:
    from collections.abc import Callable

    from fulmen.api import ClusterEnvironment, Strategy
    from fulmen.api.logger import Logger
    from fulmen.api.notice import Notice, PreemptionNotice
    from fulmen.kernel.selection import SelectionReport


class LitePreemption:
    """``lite.preemption``: one process's notices, step count and lost-work ledger.

    Read: :attr:`global_step` (step boundaries passed, set by ``lite.load``), :attr:`action`
    (``"stop"`` or ``"requeue"`` once the ranks agreed on a notice), :attr:`notice` (the first
    one this process received), :attr:`resume` (what the restart that led here cost),
    :attr:`checkpoint` (the preemption checkpoint written), :attr:`exit_code`."""

    def __init__(self, lite: SelectionReport, loggers: Callable[[], Sequence[Logger]]) -> None:
        """``lite``: the Lite (its selection and ranks); ``loggers``: its loggers, when asked."""
        self.lite = lite
        self._loggers = loggers
        #: step boundaries passed (``should_stop`` calls, or the step it was given)
        self.global_step = 0
        self.current_epoch = 0
        self.ledger = Ledger(self, None, restartable=True)
        self.handler: Preemption | None = None  # once the loop asked: the sources run
        self.action: str | None = None
        self.checkpoint: str | None = None
        self._exit: Preempted | None = None
        self._closed: SystemExit | None = None  # the exit, once the loop ended after a notice
        self._stopped = False  # the sources were stopped (the loop ended)

    # ------------------------------------------------------------------ the run, for the ledger

    @property
    def strategy(self) -> Strategy:
        return self.lite.strategy

    @property
    def cluster_environment(self) -> ClusterEnvironment:
        return self.lite.cluster_environment

    @property
    def preemption_notices(self) -> Sequence[PreemptionNotice]:
        return self.lite.preemption_notices

    @property
    def is_global_zero(self) -> bool:
        return self.lite.is_global_zero

    @property
    def local_rank(self) -> int:
        return self.lite.local_rank

    @property
    def world_size(self) -> int:
        return self.lite.world_size

    @property
    def loggers(self) -> Sequence[Logger]:
        return self._loggers()

    # ------------------------------------------------------------------ what users read

    @property
    def armed(self) -> bool:
        """Whether the sources are watched: the loop asked (``should_stop``), and has not
        ended."""
        return self.handler is not None and not self._stopped

    @property
    def notice(self) -> Notice | None:
        return self.handler.notice if self.handler is not None else None

    @property
    def resume(self) -> Resume | None:
        return self.ledger.resume

    @property
    def exit_code(self) -> int | None:
        """What the process exits with after the preemption checkpoint (None before)."""
        return self._exit.exit_code if self._exit is not None else None

    # ------------------------------------------------------------------ the loop's calls

    def should_stop(self, step: int | None = None) -> bool:
        """One step boundary (see ``Lite.should_stop``)."""
        if self.action is not None:
            return True
        if self._stopped:
            raise FulmenError("lite.should_stop() after the loop's function ended: the stop "
                              "notices are no longer watched")
        if self.handler is None:
            self.handler = Preemption(self, self.ledger)
            self.handler.start()
            self.ledger.begin()
        self.global_step = self.global_step + 1 if step is None else int(step)
        self.action = self.handler.poll()
        return self.action is not None

    def entry(self) -> dict[str, Any] | None:
        """What a checkpoint saved now records under ``fault_tolerance`` (None: nothing, the
        loop never asked)."""
        if self.handler is None and self.ledger.resume is None:
            return None
        if self.handler is not None and self.action is not None and self._exit is None:
            self.handler.reason = "preemption"
        entry = (self.handler.checkpoint_entry() if self.handler is not None
                 else self.ledger.checkpoint_entry("periodic"))
        if self.handler is not None:
            self.handler.reason = "periodic"
        return entry

    def saving(self, path: Any) -> None:
        """``lite.save(path, ...)`` begins: the heartbeat lives beside the first checkpoint."""
        if self.ledger.root is None:
            self.ledger.root = storage.parent(storage.normalize(os.fspath(path)))

    @property
    def preempting(self) -> bool:
        """Whether the save in progress is the preemption checkpoint."""
        return self.action is not None and self._exit is None and self.handler is not None

    def saved(self, path: Any, seconds: float) -> None:
        """The preemption checkpoint is committed on every rank: record it, requeue, log."""
        assert self.handler is not None and self.action is not None
        self.checkpoint = storage.normalize(os.fspath(path))
        self._exit = self.handler.conclude(self.action, self.checkpoint, seconds)

    def restored(self, checkpoint: Mapping[str, Any], path: Any) -> None:
        """``lite.load`` read a checkpoint that records ``fault_tolerance``: continue its step
        count and account for the work the previous attempt lost."""
        found = checkpoint.get(KEY)
        if not isinstance(found, dict):
            return
        self.global_step = int(found.get("global_step", 0))
        if self.ledger.root is None:
            self.ledger.root = storage.parent(storage.normalize(os.fspath(path)))
        self.ledger.restore(dict(checkpoint), storage.normalize(os.fspath(path)))
        self.ledger.begin()

    def close(self, failed: bool) -> SystemExit | None:
        """The loop ended (``failed``: by an exception): read the vote in flight (every rank has
        one), stop the sources and the heartbeat. After a notice, the exit with the scheduler's
        convention, for the caller to raise."""
        handler = self.handler
        if self._closed is not None or handler is None or self._stopped:
            self.ledger.stop()
            if not failed:
                self.ledger.report()  # a run that ended before the heartbeat saw its first step
            if handler is None and self.lite.preemption_notices and not failed and \
                    self.lite.is_global_zero:
                configure_logging().warning(
                    "Lite(plugins=[%s]): the loop never called lite.should_stop(), so no stop "
                    "notice was watched. Call it at each step boundary: if lite.should_stop(): "
                    "lite.save(path, state); break",
                    ", ".join(repr(n.name) for n in self.lite.preemption_notices))
            return self._closed
        if not failed and self.action is None:
            handler.finish()
        handler.stop()
        self._stopped = True
        if not failed:
            self.ledger.report()  # a run that ended before the heartbeat saw its first step
        if failed or self.action is None:
            return None
        if self._exit is None:
            if self.lite.is_global_zero:
                configure_logging().error(
                    "a stop notice was agreed at step %d, but the loop saved no checkpoint "
                    "after it (lite.save): the work since the last one will be redone",
                    self.global_step)
            self._exit = Preempted(self.action, handler.signum, "")
        self._closed = SystemExit(self._exit.exit_code)
        return self._closed

    def is_exit(self, exc: BaseException) -> bool:
        """Whether ``exc`` is the exit :meth:`exit` raised."""
        return exc is self._closed

    def exit(self) -> None:
        """Leave now with the scheduler's convention: after ``should_stop()`` returned True and
        the loop saved its checkpoint (``lite.launch(fn)`` and ``run()`` do this when the
        function returns; a script that called ``lite.launch()`` without a function calls it)."""
        if self.action is None:
            raise FulmenError("lite.preemption.exit(): no stop notice was agreed on; call it "
                              "when lite.should_stop() returned True, after lite.save(...)")
        stop = self.close(failed=False)
        assert stop is not None
        raise stop
