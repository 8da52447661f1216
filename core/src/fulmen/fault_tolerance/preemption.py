"""Stop notices answered at a step boundary every rank agrees on.

A notice source (``fulmen.api.notice.PreemptionNotice``: the cluster environment's
``preemption_notices()`` and those passed in ``plugins=[...]``) only *announces*;
:meth:`Preemption.poll`, called at each step boundary, makes every rank agree on it without a
per-step collective, so every rank checkpoints after the same step; :meth:`Preemption.conclude`
records the committed checkpoint against the notice window, requeues when asked, and returns the
:class:`Preempted` exit. The Trainer (``fulmen.trainer.preemption``) and Lite
(``fulmen.lite_preemption``) each decide where the checkpoint is written.
"""

from __future__ import annotations

import signal
import time
from typing import TYPE_CHECKING, Any

from fulmen.api.notice import Notice, PreemptionNotice
from fulmen.errors import ConfigurationError, FulmenError
from fulmen.fault_tolerance.lost_work import Ledger, describe_preemption
from fulmen.look import show_banner
from fulmen.status import configure_logging

if TYPE_CHECKING:
    from collections.abc import Callable

    from fulmen.fault_tolerance.run import TrainingRun

#: how often (seconds of training) distributed ranks vote on a preemption signal
VOTE_SECONDS = 0.5
_INTERVAL_BASE = 1 << 20  # a vote packs (request, next interval) as request * base + interval
_CODES = {None: 0, "stop": 1, "requeue": 2}  # the strongest request any rank received wins
_ACTIONS = {code: action for action, code in _CODES.items()}


class Preempted(Exception):
    """The preemption checkpoint is written: the run ends with :attr:`exit_code`."""

    def __init__(self, action: str, signum: int, path: str) -> None:
        super().__init__(action, signum, path)
        self.action, self.signum, self.path = action, signum, path

    @property
    def exit_code(self) -> int:
        """0 after a requeue (the job goes on later); 128 + the signal number after a stop
        (143 after SIGTERM or a cloud notice), so a supervisor that restarts failed jobs
        (torchrun's agent, a Kubernetes restart policy) restarts this one."""
        return 0 if self.action == "requeue" else 128 + self.signum


class Preemption:
    """One run's stop notices and lost-work ledger. :meth:`start` starts every notice source,
    :meth:`stop` stops them; a source only records a notice (:meth:`announce`); :meth:`poll`
    makes all ranks agree on it, so every rank checkpoints after the same step."""

    def __init__(self, run: TrainingRun, ledger: Ledger) -> None:
        self.run = run
        env = run.cluster_environment
        sources = [*env.preemption_notices(), *run.preemption_notices]
        wrong = [s for s in sources if not isinstance(s, PreemptionNotice)]
        if wrong:
            raise ConfigurationError(
                f"the {env.name!r} environment's preemption_notices() returned {wrong!r}; "
                "it must return fulmen.api.notice.PreemptionNotice instances (such as "
                "fulmen.notices.SignalNotice)")
        #: every configured source (the same on every rank); ``watching``: those started here
        self.sources: list[PreemptionNotice] = sources
        self.watching: list[PreemptionNotice] = []
        self.received: str | None = None
        self.signum = 0
        #: the first notice this rank received, and the step it arrived at
        self.notice: Notice | None = None
        self.notice_step: int | None = None
        self.ledger = ledger
        self.reason = "periodic"  # why the checkpoint being written is written
        self._pending: Callable[[], int] | None = None
        self._polls = 0  # polls so far (one per step boundary)
        #: agreements started so far (distributed runs): far fewer than the steps
        self.votes = 0
        self._due = 1  # the poll that votes next: the same on every rank
        self._world_size: int | None = None  # the run's, read once (poll runs every step)
        self._last_vote: tuple[int, float] | None = None  # rank zero: (poll, time) of its last

    def __getstate__(self) -> dict[str, Any]:
        """A pickled run keeps what happened, not the sources (threads, handlers)."""
        return {**self.__dict__, "sources": [], "watching": [], "_pending": None}

    def start(self) -> None:
        """Start every source this process watches (a per-node source on local rank 0 only)."""
        local_zero = self.run.local_rank == 0
        self._world_size = self.run.world_size  # fixed for the run; poll() runs every step
        try:
            for source in self.sources:
                if source.per_node and not local_zero:
                    continue
                source.start(self.announce)
                self.watching.append(source)
        except BaseException:
            self.stop()
            raise
        if self.watching and self.run.is_global_zero and show_banner():
            configure_logging().info("watching for stop notices: %s",
                                     "; ".join(s.describe() for s in self.watching))

    def stop(self) -> None:
        """Stop the sources (in reverse order) and the heartbeat."""
        self._pending = None
        for source in reversed(self.watching):
            source.stop()
        self.watching.clear()
        self.ledger.stop()

    def announce(self, notice: Notice) -> None:
        """Record ``notice`` (from any thread or a signal handler); the strongest action wins."""
        if _CODES[notice.action] > _CODES[self.received]:
            self.received, self.signum = notice.action, notice.signum
            if self.notice is None:
                self.notice, self.notice_step = notice, self.run.global_step

    def poll(self) -> str | None:
        """The action every rank takes now (None: go on).

        Distributed, the ranks agree without waiting (``Strategy.start_agreement``), and not at
        every step: a vote carries, besides each rank's request, rank zero's proposal for how
        many polls to skip before the next one (about ``VOTE_SECONDS`` of training), so every
        rank votes at the same polls and the steps between votes run no collective. Each vote
        is read at the next one, so a signal any rank saw is acted on by every rank, after the
        same step, within about two vote intervals.
        """
        if not self.ledger.reported:
            self.ledger.report()
        code = _CODES[self.received]
        world = self._world_size
        if world is None:
            world = self._world_size = self.run.world_size
        if world <= 1:
            return _ACTIONS[code]
        self._polls += 1
        if self._polls < self._due:
            return None
        pending, self._pending = self._pending, None
        agreed = pending() if pending is not None else 0
        request, interval = divmod(agreed, _INTERVAL_BASE)
        if request // 256:  # every rank acts now: nothing more to agree on
            self.signum = self.signum or request % 256
            return _ACTIONS[request // 256]
        self._due = self._polls + max(interval, 1)
        mine = (code * 256 + self.signum) * _INTERVAL_BASE + self._proposal()
        self._pending = self.run.strategy.start_agreement(mine)
        self.votes += 1
        return None

    def _proposal(self) -> int:
        """Rank zero: the polls that take about ``VOTE_SECONDS`` at the pace since its last
        vote; other ranks propose 0, so the agreed maximum is rank zero's."""
        if not self.run.is_global_zero:
            return 0
        now, last = time.monotonic(), self._last_vote
        self._last_vote = (self._polls, now)
        if last is None:
            return 1
        per_poll = (now - last[1]) / max(self._polls - last[0], 1)
        return int(min(max(VOTE_SECONDS / max(per_poll, 1e-6), 1), _INTERVAL_BASE - 1))

    def finish(self) -> None:
        """Read the agreement still in flight after the last step (every rank has one)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending()

    def conclude(self, action: str, path: str, save_seconds: float) -> Preempted:
        """The preemption checkpoint ``path`` is committed (every rank): record it against the
        notice window, requeue on rank zero when asked, log, and return the exit."""
        record = self.record(save_seconds)
        self.ledger.preempted(record)
        name = self.notice.detail if self.notice is not None else \
            signal.Signals(self.signum).name if self.signum else "a stop notice"
        log = configure_logging()
        run = self.run
        if run.is_global_zero:
            log.warning("%s; saved %s", describe_preemption(record), path)
        if action == "requeue" and run.is_global_zero:
            try:
                run.cluster_environment.requeue()
            except (FulmenError, OSError, NotImplementedError) as exc:
                log.error("%s received; saved %s, but requeueing failed: %s", name, path, exc)
            else:
                log.warning("%s received; saved %s and requeued the job", name, path)
        elif run.is_global_zero:
            log.warning("%s received; saved %s; stopping (%s)", name, path, self.resume_hint(path))
        return Preempted(action, self.signum, path)

    def resume_hint(self, path: str) -> str:
        """How the restarted job resumes from ``path`` (for the log)."""
        return f"resume from {path}"

    def notice_entry(self) -> dict[str, Any]:
        """The notice as this rank knows it: its own, or (received by another rank and carried
        by the vote) the signal and the configured window."""
        notice = self.notice
        if notice is not None:
            return {"source": notice.source, "detail": notice.detail, "window": notice.window,
                    "received": notice.received, "step": self.notice_step}
        windows = [s.window for s in self.sources if s.window is not None]
        detail = signal.Signals(self.signum).name if self.signum else "?"
        return {"source": "another rank", "detail": detail,
                "window": min(windows) if windows else None, "received": None,
                "step": self.run.global_step}

    def record(self, save_seconds: float) -> dict[str, Any]:
        """What a preemption was: the notice, the step the checkpoint holds, the save time."""
        entry = self.notice_entry()
        entry["save_seconds"] = save_seconds
        entry["checkpoint_step"] = self.run.global_step
        if entry["received"] is not None:
            entry["seconds_since_notice"] = time.time() - entry["received"]
        return entry

    def checkpoint_entry(self) -> dict[str, Any]:
        """What the checkpoint being written records under ``fault_tolerance``."""
        entry = self.ledger.checkpoint_entry(self.reason)
        if self.reason == "preemption":
            entry["notice"] = self.notice_entry()
        return entry
