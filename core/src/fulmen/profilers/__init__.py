"""Profilers (Lightning's API): ``Trainer(profiler="simple" | "advanced" | "pytorch" | instance)``.

Each times named actions (``with profiler.profile("training_step"): ...``) and writes a summary
at the end of the run: to ``dirpath/filename`` when given, else to the ``fulmen`` logger.
"""

from __future__ import annotations

from fulmen.profilers.advanced import AdvancedProfiler
from fulmen.profilers.base import PassThroughProfiler, Profiler
from fulmen.profilers.pytorch import PyTorchProfiler
from fulmen.profilers.simple import SimpleProfiler

NAMES = {"simple": SimpleProfiler, "advanced": AdvancedProfiler, "pytorch": PyTorchProfiler}

__all__ = ["NAMES", "AdvancedProfiler", "PassThroughProfiler", "Profiler", "PyTorchProfiler",
           "SimpleProfiler", "resolve"]


def resolve(profiler: Profiler | str | None) -> Profiler:
    """``Trainer(profiler=...)``: None, a name, or an instance."""
    from fulmen.errors import ConfigurationError

    if profiler is None:
        return PassThroughProfiler()
    if isinstance(profiler, Profiler):
        return profiler
    if isinstance(profiler, str) and profiler.lower() in NAMES:
        return NAMES[profiler.lower()]()
    raise ConfigurationError(f"Trainer(profiler={profiler!r}): use one of "
                             f"{', '.join(map(repr, NAMES))}, a fulmen.profilers.Profiler "
                             "instance, or None")
