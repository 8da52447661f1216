"""``AdvancedProfiler``: cProfile per action, reported with ``pstats``."""

from __future__ import annotations

import cProfile
import io
import pstats
from pathlib import Path

from fulmen.profilers.base import Profiler


class AdvancedProfiler(Profiler):
    """``line_count_restriction``: how many lines of each action's profile to show (a count or
    a fraction, as ``pstats.Stats.print_stats``)."""

    def __init__(self, dirpath: str | Path | None = None, filename: str | None = None,
                 line_count_restriction: float = 1.0, dump_stats: bool = False) -> None:
        super().__init__(dirpath, filename)
        self.profiled_actions: dict[str, cProfile.Profile] = {}
        self.line_count_restriction = line_count_restriction
        self.dump_stats = dump_stats

    def start(self, action_name: str) -> None:
        profiler = self.profiled_actions.setdefault(action_name, cProfile.Profile())
        profiler.enable()

    def stop(self, action_name: str) -> None:
        self.profiled_actions[action_name].disable()

    def summary(self) -> str:
        parts = [f"{self.stage_title()}Profiler Report"]
        for action, profiler in self.profiled_actions.items():
            if self.dump_stats and self.dirpath:
                path = Path(self.dirpath) / self.prepare_filename(action, ".prof")
                path.parent.mkdir(parents=True, exist_ok=True)
                profiler.dump_stats(path)
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("cumulative").print_stats(
                self.line_count_restriction)
            parts += [f"Profile stats for: {action} rank: {self.local_rank}", out.getvalue()]
        return "\n".join(parts) if self.profiled_actions else ""

    def __getstate__(self) -> dict[str, object]:
        return {**super().__getstate__(), "profiled_actions": {}}
