"""What runs a function through ``Strategy.launch`` (``LaunchOwner``), and ``Launcher``: what
creates the processes a strategy needs and runs a function in each. ``Launcher`` is defined
beside the ``Strategy`` that creates it (:mod:`fulmen.api.strategy`) and importable from here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fulmen.api.strategy import Launcher

__all__ = ["LaunchOwner", "Launcher", "launch_owner"]


class LaunchOwner:
    """What runs a function through ``Strategy.launch`` (the Trainer and Lite are ones).

    A launcher whose ranks all run in new processes (``MultiprocessingLauncher``) must hand
    global rank zero's results back to the process that called ``launch``. When ``function`` is
    a bound method of a ``LaunchOwner``, the launcher calls ``worker_state()`` on rank zero after
    the function returned, sends it over (pickled), and calls ``load_worker_state(state)`` on the
    caller's owner. A launcher that keeps the caller as rank zero calls neither.
    """

    def worker_state(self) -> Any:
        """On global rank zero, after the launched function returned: picklable state (trained
        weights, metrics...) for the caller; None when there is nothing to hand back."""
        return None

    def load_worker_state(self, state: Any) -> None:
        """In the process that called ``launch``: adopt what ``worker_state`` returned."""


def launch_owner(function: Callable[..., Any]) -> LaunchOwner | None:
    """The ``LaunchOwner`` whose bound method ``function`` is, or None."""
    owner = getattr(function, "__self__", None)
    return owner if isinstance(owner, LaunchOwner) else None
