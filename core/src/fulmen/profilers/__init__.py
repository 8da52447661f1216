"""Profilers (Lightning's API): ``Trainer(profiler="simple" | "advanced" | "pytorch" | instance)``.

Each times named actions (``with profiler.profile("training_step"): ...``) and writes a summary
at the end of the run: to ``dirpath/filename`` when given, else to the ``fulmen`` logger.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fulmen.lazy import lazy_exports
from fulmen.profilers.base import PassThroughProfiler, Profiler

_EXPORTS = {"AdvancedProfiler": "fulmen.profilers.advanced",
            "PyTorchProfiler": "fulmen.profilers.pytorch",
            "SimpleProfiler": "fulmen.profilers.simple"}
#: ``Trainer(profiler=name)``: the class each name selects (imported when selected).
NAMES = {"simple": "SimpleProfiler", "advanced": "AdvancedProfiler", "pytorch": "PyTorchProfiler"}

__all__ = ["NAMES", "AdvancedProfiler", "PassThroughProfiler", "Profiler", "PyTorchProfiler",
           "SimpleProfiler", "resolve"]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from fulmen.profilers.advanced import AdvancedProfiler
    from fulmen.profilers.pytorch import PyTorchProfiler
    from fulmen.profilers.simple import SimpleProfiler


def resolve(profiler: Profiler | str | None) -> Profiler:
    """``Trainer(profiler=...)``: None, a name, or an instance."""
    from fulmen.errors import ConfigurationError

    if profiler is None:
        return PassThroughProfiler()
    if isinstance(profiler, Profiler):
        return profiler
    if isinstance(profiler, str) and profiler.lower() in NAMES:
        return __getattr__(NAMES[profiler.lower()])()
    raise ConfigurationError(f"Trainer(profiler={profiler!r}): use one of "
                             f"{', '.join(map(repr, NAMES))}, a fulmen.profilers.Profiler "
                             "instance, or None")
