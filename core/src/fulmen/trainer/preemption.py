"""Preemption: the cluster environment names the signals its scheduler sends before it stops a job
(``ClusterEnvironment.preemption_signals``); the fit loop answers them between two batches."""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

from fulmen import storage
from fulmen.errors import ConfigurationError, FulmenError
from fulmen.status import configure_logging

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
        """0 after a requeue (the job goes on later); 128 + the signal number after a stop."""
        return 0 if self.action == "requeue" else 128 + self.signum


class Preemption:
    """Installs the environment's signal handlers for one ``fit`` (main thread only) and restores
    the previous handlers afterwards. A handler only records the request; :meth:`poll` makes all
    ranks agree on it, so every rank checkpoints after the same batch."""

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer
        env = trainer.cluster_environment
        self.actions = dict(env.preemption_signals())
        wrong = {s: a for s, a in self.actions.items() if a not in ("requeue", "stop")}
        if wrong:
            raise ConfigurationError(f"the {env.name!r} environment's preemption_signals() maps "
                                     f"signals to {wrong}; the actions are 'requeue' and 'stop'")
        self.received: str | None = None
        self.signum = 0
        self._previous: dict[int, Any] = {}
        self._pending: Callable[[], int] | None = None
        self._polls = 0  # polls so far (one per stepped batch)
        #: agreements started so far (distributed runs): far fewer than the steps
        self.votes = 0
        self._due = 1  # the poll that votes next: the same on every rank
        self._last_vote: tuple[int, float] | None = None  # rank zero: (poll, time) of its last

    @property
    def active(self) -> bool:
        return bool(self._previous)

    def __enter__(self) -> Preemption:
        if self.actions and threading.current_thread() is threading.main_thread():
            for signum in self.actions:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.finish()
        self._pending = None
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        action = self.actions[signum]
        if _CODES[action] > _CODES[self.received]:
            self.received, self.signum = action, signum

    def poll(self) -> str | None:
        """The action every rank takes now (None: go on).

        Distributed, the ranks agree without waiting (``Strategy.start_agreement``), and not at
        every step: a vote carries, besides each rank's request, rank zero's proposal for how
        many polls to skip before the next one (about ``VOTE_SECONDS`` of training), so every
        rank votes at the same polls and the steps between votes run no collective. Each vote
        is read at the next one, so a signal any rank saw is acted on by every rank, after the
        same batch, within about two vote intervals.
        """
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
        """Write the preemption checkpoint, requeue on rank zero, return the exception that ends
        the run."""
        trainer = self.trainer
        path = trainer.strategy.broadcast(
            next_hpc_path(trainer.default_root_dir) if trainer.is_global_zero
            else None)
        trainer.save_checkpoint(path)
        name = signal.Signals(self.signum).name if self.signum else "a signal"
        log = configure_logging()
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


def hpc_checkpoints(root: str) -> list[tuple[int, str]]:
    """Preemption checkpoints in ``root`` (``hpc_ckpt_<n>.ckpt``; a folder or a URL) with their
    numbers, oldest first."""
    return sorted((int(m.group(1)), storage.join(root, name)) for name in storage.listdir(root)
                  if (m := HPC_CHECKPOINT.match(name)))


def next_hpc_path(root: str) -> str:
    existing = hpc_checkpoints(root)
    return storage.join(root, f"hpc_ckpt_{existing[-1][0] + 1 if existing else 1}.ckpt")
