"""``Launcher``: creates the processes a strategy needs and runs a function in each."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fulmen.api.strategy import Strategy


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
