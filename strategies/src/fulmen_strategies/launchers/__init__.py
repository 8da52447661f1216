"""Launchers: how a strategy's processes come to exist. Public: any strategy may return one of
these from :meth:`fulmen.Strategy.create_launcher`.

- ``ScriptLauncher(strategy)``: re-runs the user's command once per extra local process.
- ``MultiprocessingLauncher(strategy, start_method="spawn" | "fork")``: starts workers with
  multiprocessing and returns rank zero's result to the caller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fulmen.lazy import lazy_exports

if TYPE_CHECKING:
    from fulmen_strategies.launchers.multiprocessing import MultiprocessingLauncher
    from fulmen_strategies.launchers.script import ScriptLauncher

__all__ = ["MultiprocessingLauncher", "ScriptLauncher"]
# imported on first use: the multiprocessing launcher imports torch
__getattr__, __dir__ = lazy_exports(__name__, {
    "ScriptLauncher": "fulmen_strategies.launchers.script",
    "MultiprocessingLauncher": "fulmen_strategies.launchers.multiprocessing"})
