"""The rich columns and progress classes of Lightning's ``rich_progress`` module, for code that
builds its own rich progress display from them (fulmen's ``RichProgressBar`` draws with its
own). ``CustomProgress`` accepts an infinite ``total`` (a loader without a length: the bar
pulses); ``MetricsTextColumn`` shows the metrics it was last given on the training bar."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from rich.console import RenderableType
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskID
from rich.progress_bar import ProgressBar as RichBar
from rich.style import Style
from rich.text import Text

__all__ = ["BatchesProcessedColumn", "CustomBarColumn", "CustomInfiniteTask", "CustomProgress",
           "CustomTimeColumn", "MetricsTextColumn", "ProcessingSpeedColumn"]


class CustomBarColumn(BarColumn):
    """A bar that pulses for a task of unknown or infinite size."""

    def render(self, task: Task) -> RichBar:
        total = task.total if task.total is not None else math.inf
        remaining = task.remaining if task.remaining is not None else math.inf
        return RichBar(total=max(0, total) if math.isfinite(total) else None,
                       completed=max(0, task.completed),
                       width=None if self.bar_width is None else max(1, self.bar_width),
                       pulse=not task.started or not math.isfinite(remaining),
                       animation_time=task.get_time(), style=self.style,
                       complete_style=self.complete_style, finished_style=self.finished_style,
                       pulse_style=self.pulse_style)


@dataclass
class CustomInfiniteTask(Task):
    """A task of infinite size: no time remaining."""

    @property
    def time_remaining(self) -> float | None:
        return None


class CustomProgress(Progress):
    """``Progress`` whose ``add_task`` takes an infinite ``total`` (shown as unknown)."""

    def add_task(self, description: str, start: bool = True, total: float | None = 100.0,
                 completed: int = 0, visible: bool = True, **fields: Any) -> TaskID:
        if total is not None and not math.isfinite(total):
            total = None
        return super().add_task(description, start, total, completed, visible, **fields)

    def soft_refresh(self) -> None:
        """Refresh the display."""
        self.refresh()


class CustomTimeColumn(ProgressColumn):
    """``elapsed • remaining``, refreshed twice a second."""

    max_refresh = 0.5

    def __init__(self, style: str | Style) -> None:
        self.style = style
        super().__init__()

    def render(self, task: Task) -> Text:
        elapsed = task.finished_time if task.finished else task.elapsed
        remaining = task.time_remaining

        def fmt(seconds: float | None) -> str:
            return "-:--:--" if seconds is None else str(timedelta(seconds=int(seconds)))

        return Text(f"{fmt(elapsed)} • {fmt(remaining)}", style=self.style)


class BatchesProcessedColumn(ProgressColumn):
    """``completed/total`` (``--`` for an infinite total)."""

    def __init__(self, style: str | Style) -> None:
        self.style = style
        super().__init__()

    def render(self, task: Task) -> RenderableType:
        total: Any = task.total
        if total is None or total == float("inf"):
            total = "--"
        return Text(f"{int(task.completed)}/{total}", style=self.style)


class ProcessingSpeedColumn(ProgressColumn):
    """The task's speed in ``it/s``."""

    def __init__(self, style: str | Style) -> None:
        self.style = style
        super().__init__()

    def render(self, task: Task) -> RenderableType:
        speed = f"{task.speed:>.2f}" if task.speed is not None else "0.00"
        return Text(f"{speed}it/s", style=self.style)


class MetricsTextColumn(ProgressColumn):
    """The metrics last given to :meth:`update`, on the training bar of the trainer's
    ``RichProgressBar`` only (not while it checks the validation loop)."""

    def __init__(self, trainer: Any, style: str | Style, text_delimiter: str,
                 metrics_format: str) -> None:
        self._trainer = trainer
        self._metrics: dict[Any, Any] = {}
        self._style = style
        self._text_delimiter = text_delimiter
        self._metrics_format = metrics_format
        super().__init__()

    def update(self, metrics: dict[Any, Any]) -> None:
        """Show ``metrics`` from now on."""
        self._metrics = metrics

    def render(self, task: Task) -> Text:
        from fulmen.callbacks.rich_progress import RichProgressBar

        bar = self._trainer.progress_bar_callback
        if self._trainer.sanity_checking or not isinstance(bar, RichProgressBar) or \
                bar.train_progress_bar_id != task.id:
            return Text()
        return Text(self._text_delimiter.join(self._texts()), justify="left", style=self._style)

    def _texts(self) -> Iterator[str]:
        for name, value in self._metrics.items():
            if not isinstance(value, str):
                try:
                    value = f"{value:{self._metrics_format}}"
                except (TypeError, ValueError):
                    value = str(value)
            yield f"{name}: {value}"
