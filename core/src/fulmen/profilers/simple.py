"""``SimpleProfiler``: mean and total time per action, and its share of the run."""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

from fulmen.errors import FulmenError
from fulmen.profilers.base import Profiler


class SimpleProfiler(Profiler):
    """``extended=True`` adds the number of calls and the percentage of the total time."""

    def __init__(self, dirpath: str | Path | None = None, filename: str | None = None,
                 extended: bool = True) -> None:
        super().__init__(dirpath, filename)
        self.current_actions: dict[str, float] = {}
        self.recorded_durations: dict[str, list[float]] = defaultdict(list)
        self.extended = extended
        self.start_time = time.perf_counter()

    def start(self, action_name: str) -> None:
        if action_name in self.current_actions:
            raise FulmenError(f"profiler: {action_name!r} was started twice without a stop")
        self.current_actions[action_name] = time.perf_counter()

    def stop(self, action_name: str) -> None:
        end = time.perf_counter()
        if action_name not in self.current_actions:
            raise FulmenError(f"profiler: {action_name!r} was stopped but never started")
        self.recorded_durations[action_name].append(end - self.current_actions.pop(action_name))

    def summary(self) -> str:
        if not self.recorded_durations:
            return ""
        total = time.perf_counter() - self.start_time
        rows = sorted(((name, sum(d) / len(d), len(d), sum(d))
                       for name, d in self.recorded_durations.items()),
                      key=lambda r: r[3], reverse=True)
        width = max(len("Action"), *(len(r[0]) for r in rows))
        if self.extended:
            head = (f"{'Action':<{width}} | {'Mean duration (s)':>17} | {'Num calls':>9} | "
                    f"{'Total time (s)':>14} | {'Percentage %':>12}")
            lines = [f"{'Total':<{width}} | {'-':>17} | {sum(r[2] for r in rows):>9} | "
                     f"{total:>14.5f} | {100.0:>12.3f}"]
            lines += [f"{n:<{width}} | {m:>17.5f} | {c:>9} | {t:>14.5f} | "
                      f"{100.0 * t / total:>12.3f}" for n, m, c, t in rows]
        else:
            head = f"{'Action':<{width}} | {'Mean duration (s)':>17} | {'Total time (s)':>14}"
            lines = [f"{n:<{width}} | {m:>17.5f} | {t:>14.5f}" for n, m, _, t in rows]
        rule = "-" * len(head)
        return "\n".join([f"{self.stage_title()}Profiler Report", rule, head, rule, *lines, rule])
