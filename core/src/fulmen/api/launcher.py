"""``Launcher``: creates the processes a strategy needs and runs a function in each."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fulmen.api.strategy import Strategy


class Launcher(ABC):
    """Chosen by the strategy's record; skipped when the cluster environment creates processes.

    fulmen constructs it as ``LauncherClass(strategy=strategy)``.
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
