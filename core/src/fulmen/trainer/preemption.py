"""Preemption: stop notices (``fulmen.api.notice.PreemptionNotice``) from the cluster
environment (``ClusterEnvironment.preemption_notices()``: its signals by default) and from
``Trainer(plugins=[...])``; the fit loop answers them between two batches, every rank after the
same one, with one checkpoint and the scheduler's exit convention."""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fulmen import storage
from fulmen.api.notice import Notice, PreemptionNotice
from fulmen.errors import ConfigurationError, FulmenError
from fulmen.status import configure_logging
from fulmen.trainer.lost_work import Ledger, describe_preemption

if TYPE_CHECKING:
    from fulmen.trainer.trainer import Trainer

#: how often (seconds of training) distributed ranks vote on a preemption signal
VOTE_SECONDS = 0.5
_INTERVAL_BASE = 1 << 20  # a vote packs (request, next interval) as request * base + interval
_CODES = {None: 0, "stop": 1, "requeue": 2}  # the strongest request any rank received wins
_ACTIONS = {code: action for action, code in _CODES.items()}
HPC_CHECKPOINT = re.compile(r"^hpc_ckpt_(\d+)\.ckpt$")


class Preempted(Exception):
    """Raised by the fit loop once the preemption checkpoint is written; the Trainer exits."""

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
    """One ``fit``'s stop notices and lost-work ledger: starts every notice source when the fit
    starts and stops them afterwards. A source only records a notice (:meth:`announce`);
    :meth:`poll` makes all ranks agree on it, so every rank checkpoints after the same batch."""

    def __init__(self, trainer: Trainer, requested: Any = None) -> None:
        """``requested``: the ``ckpt_path`` the user gave ``fit`` (see :class:`Ledger`)."""
        self.trainer = trainer
        env = trainer.cluster_environment
        sources = [*env.preemption_notices(), *trainer.preemption_notices]
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
        self.ledger = Ledger(trainer, requested)
        self.reason = "periodic"  # why the checkpoint being written is written
        self._pending: Callable[[], int] | None = None
        self._polls = 0  # polls so far (one per stepped batch)
        #: agreements started so far (distributed runs): far fewer than the steps
        self.votes = 0
        self._due = 1  # the poll that votes next: the same on every rank
        self._last_vote: tuple[int, float] | None = None  # rank zero: (poll, time) of its last

    def __getstate__(self) -> dict[str, Any]:
        """A pickled Trainer keeps what happened, not the sources (threads, handlers)."""
        return {**self.__dict__, "sources": [], "watching": [], "_pending": None}

    @property
    def active(self) -> bool:
        """Whether the fit loop polls: a source is configured (on every rank alike), or a
        resumed run has its lost work to report after the first step."""
        return bool(self.sources) or self.ledger.resume is not None

    def __enter__(self) -> Preemption:
        trainer = self.trainer
        self.ledger.start(trainer.run_state.restore, trainer.ckpt_path)
        local_zero = trainer.local_rank == 0
        try:
            for source in self.sources:
                if source.per_node and not local_zero:
                    continue
                source.start(self.announce)
                self.watching.append(source)
        except BaseException:
            self.__exit__(None)
            raise
        if self.watching and trainer.is_global_zero:
            configure_logging().info("watching for stop notices: %s",
                                     "; ".join(s.describe() for s in self.watching))
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.finish()
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
                self.notice, self.notice_step = notice, self.trainer.global_step

    def poll(self) -> str | None:
        """The action every rank takes now (None: go on).

        Distributed, the ranks agree without waiting (``Strategy.start_agreement``), and not at
        every step: a vote carries, besides each rank's request, rank zero's proposal for how
        many polls to skip before the next one (about ``VOTE_SECONDS`` of training), so every
        rank votes at the same polls and the steps between votes run no collective. Each vote
        is read at the next one, so a signal any rank saw is acted on by every rank, after the
        same batch, within about two vote intervals.
        """
        if not self.ledger.reported:
            self.ledger.report()
        code = _CODES[self.received]
        if self.trainer.world_size <= 1:
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
        self._pending = self.trainer.strategy.start_agreement(mine)
        self.votes += 1
        return None

    def _proposal(self) -> int:
        """Rank zero: the polls that take about ``VOTE_SECONDS`` at the pace since its last
        vote; other ranks propose 0, so the agreed maximum is rank zero's."""
        if not self.trainer.is_global_zero:
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

    def act(self, action: str) -> Preempted:
        """Write the preemption checkpoint and wait until it is committed (an asynchronous
        save included), requeue on rank zero, log the notice against its window, and return
        the exception that ends the run."""
        trainer = self.trainer
        started = time.monotonic()
        path = trainer.strategy.broadcast(
            next_hpc_path(trainer.default_root_dir) if trainer.is_global_zero
            else None)
        self.reason = "preemption"
        try:
            trainer.save_checkpoint(path)
            trainer.strategy.checkpoint_io.teardown()  # an asynchronous save: wait for it
            trainer.strategy.barrier("preemption-committed")
        finally:
            self.reason = "periodic"
        record = self.record(time.monotonic() - started)
        self.ledger.preempted(record)
        name = self.notice.detail if self.notice is not None else \
            signal.Signals(self.signum).name if self.signum else "a stop notice"
        log = configure_logging()
        if trainer.is_global_zero:
            log.warning("%s; saved %s", describe_preemption(record), path)
        if action == "requeue" and trainer.is_global_zero:
            try:
                trainer.cluster_environment.requeue()
            except (FulmenError, OSError, NotImplementedError) as exc:
                log.error("%s received; saved %s, but requeueing failed: %s", name, path, exc)
            else:
                log.warning("%s received; saved %s and requeued the job", name, path)
        elif trainer.is_global_zero:
            log.warning("%s received; saved %s; stopping (resume with ckpt_path=%r or "
                        "ckpt_path='last')", name, path, path)
        return Preempted(action, self.signum, path)

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
                "step": self.trainer.global_step}

    def record(self, save_seconds: float) -> dict[str, Any]:
        """What a preemption was: the notice, the step the checkpoint holds, the save time."""
        entry = self.notice_entry()
        entry["save_seconds"] = save_seconds
        entry["checkpoint_step"] = self.trainer.global_step
        if entry["received"] is not None:
            entry["seconds_since_notice"] = time.time() - entry["received"]
        return entry

    def checkpoint_entry(self) -> dict[str, Any]:
        """What the checkpoint being written records under ``fault_tolerance``."""
        entry = self.ledger.checkpoint_entry(self.reason)
        if self.reason == "preemption":
            entry["notice"] = self.notice_entry()
        return entry


def hpc_checkpoints(root: str) -> list[tuple[int, str]]:
    """Preemption checkpoints in ``root`` (``hpc_ckpt_<n>.ckpt``; a folder or a URL) with their
    numbers, oldest first."""
    return sorted((int(m.group(1)), storage.join(root, name)) for name in storage.listdir(root)
                  if (m := HPC_CHECKPOINT.match(name)))


def next_hpc_path(root: str) -> str:
    existing = hpc_checkpoints(root)
    return storage.join(root, f"hpc_ckpt_{existing[-1][0] + 1 if existing else 1}.ckpt")
