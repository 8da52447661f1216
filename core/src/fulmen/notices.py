"""``SignalNotice``: POSIX signals as stop notices (SLURM's ``--signal``, the SIGTERM that
Kubernetes, torchrun's agent and most schedulers send before they kill a process)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any

from fulmen.api.notice import ACTIONS, Notice, PreemptionNotice
from fulmen.errors import ConfigurationError


class SignalNotice(PreemptionNotice):
    """Installs a handler for each of ``signals`` (``{signum: "stop" | "requeue"}``) while
    ``fit`` runs and puts the previous handlers back afterwards. ``window``: seconds between the
    signal and the hard kill (Kubernetes' ``terminationGracePeriodSeconds``, 30 by default;
    torchrun's agent also waits 30 s), when known.

    Python runs signal handlers on the main thread only: a Trainer fitting in another thread
    cannot watch signals, and says so."""

    name = "signal"

    def __init__(self, signals: Mapping[int, str], window: float | None = None) -> None:
        wrong = {int(s): a for s, a in signals.items() if a not in ACTIONS}
        if wrong:
            raise ConfigurationError(f"SignalNotice: signals map to {wrong}; the actions are "
                                     f"{', '.join(map(repr, ACTIONS))}")
        self.signals = {signal.Signals(s): a for s, a in signals.items()}
        self.window = window
        self._previous: dict[int, Any] = {}
        self._announce: Callable[[Notice], None] | None = None

    def start(self, announce: Callable[[Notice], None]) -> None:
        if threading.current_thread() is not threading.main_thread():
            from fulmen.status import configure_logging

            configure_logging().info(
                "%s not watched: Python handles signals on the main thread only, and this fit "
                "runs in thread %r", ", ".join(s.name for s in self.signals),
                threading.current_thread().name)
            return
        self._announce = announce
        for signum in self.signals:
            self._previous[signum] = signal.signal(signum, self._handle)

    def stop(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()
        self._announce = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._announce is not None:
            name = signal.Signals(signum).name
            self._announce(Notice(self.name, self.signals[signal.Signals(signum)], signum,
                                  self.window, name))

    def describe(self) -> str:
        window = f", {self.window:g} s window" if self.window is not None else ""
        return ", ".join(f"{s.name} ({a})" for s, a in self.signals.items()) + window
