"""``Launcher``: creates the processes a strategy needs and runs a function in each."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fulmen.api.strategy import Strategy


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


class Launcher(ABC):
    """Created by the strategy it launches (:meth:`fulmen.Strategy.create_launcher`), which
    passes itself as ``strategy``; never created when the cluster environment started the
    processes. fulmen's own launchers live in ``fulmen_strategies.launchers`` (``ScriptLauncher``,
    ``MultiprocessingLauncher``) and may be reused by any strategy.
    """

    def __init__(self, strategy: Strategy) -> None:
        self.strategy = strategy

    @property
    def is_interactive_compatible(self) -> bool:
        """Whether it can run in a notebook or REPL (re-running a script cannot)."""
        return False

    @abstractmethod
    def launch(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``function(*args, **kwargs)`` in every process and return rank zero's result."""
