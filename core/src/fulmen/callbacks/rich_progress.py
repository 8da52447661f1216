"""``RichProgressBar``: progress bars drawn with ``rich`` (themes, rate, ETA, metrics)."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from fulmen.callbacks.progress import RefreshingBar, convert_inf


@dataclass
class RichProgressBarTheme:
    """Styles (rich style strings or ``rich.style.Style``) of each part of the bars:
    ``description`` (``Epoch 3``, ``Validation``...), ``progress_bar`` (running),
    ``progress_bar_finished``, ``progress_bar_pulse`` (a loader without a length),
    ``batch_progress`` (``10/50``), ``time`` (elapsed • remaining), ``processing_speed``
    (``it/s``), ``metrics``; ``metrics_text_delimiter`` between metrics and
    ``metrics_format`` for numbers."""

    description: Any = ""
    progress_bar: Any = "#6206E0"
    progress_bar_finished: Any = "#6206E0"
    progress_bar_pulse: Any = "#6206E0"
    batch_progress: Any = ""
    time: Any = "dim"
    processing_speed: Any = "dim underline"
    metrics: Any = "italic"
    metrics_text_delimiter: str = " "
    metrics_format: str = ".3f"


class RichProgressBar(RefreshingBar):
    """Training, validation, test and predict bars drawn by ``rich`` (Jupyter included): for
    each its batches, elapsed • remaining time, it/s, and below the training bar the
    ``get_metrics()`` values.

    Args:
        refresh_rate: redraws per second; 0 turns the bars off.
        leave: keep each finished epoch's bar on screen (else one bar is reused).
        theme: a ``RichProgressBarTheme``.
        console_kwargs: arguments of the ``rich.console.Console`` the bars draw on.

    Metrics are read (a copy of logged device values to the host) at most twice a second.
    """

    metrics_interval = 0.5

    def __init__(self, refresh_rate: int = 100, leave: bool = False,
                 theme: RichProgressBarTheme | None = None,
                 console_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__()
        self._refresh_rate = refresh_rate
        self._leave = leave
        self._console_kwargs = console_kwargs or {}
        self._enabled = True
        self.theme = theme or RichProgressBarTheme()
        self.progress: Any = None
        self._metrics: dict[str, Any] = {}
        self._metrics_read = 0.0
        self._reset_progress_bar_ids()

    def _reset_progress_bar_ids(self) -> None:
        self.train_progress_bar_id: Any = None
        self.val_sanity_progress_bar_id: Any = None
        self.val_progress_bar_id: Any = None
        self.test_progress_bar_id: Any = None
        self.predict_progress_bar_id: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**vars(self), "progress": None}  # the live display holds a thread

    # ------------------------------------------------------------------ the display

    def _init_progress(self, trainer: Any) -> None:
        if not self.is_enabled or (self.progress is not None and not self._stopped):
            return
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn

        theme = self.theme
        console = Console(**self._console_kwargs)
        _Batches, _Times, _Speed, _Metrics = _columns()
        self._stopped = False
        self.progress = Progress(
            TextColumn("[progress.description]{task.description}", style=theme.description),
            BarColumn(complete_style=theme.progress_bar,
                      finished_style=theme.progress_bar_finished,
                      pulse_style=theme.progress_bar_pulse),
            _Batches(theme.batch_progress), _Times(theme.time), _Speed(theme.processing_speed),
            _Metrics(self), console=console, refresh_per_second=self.refresh_rate,
            transient=False, auto_refresh=True)
        self.progress.start()

    _stopped = True

    def _stop_progress(self) -> None:
        if self.progress is not None and not self._stopped:
            self.progress.stop()
            self._stopped = True

    def _add_task(self, total: int | float, description: str, visible: bool = True) -> Any:
        assert self.progress is not None
        return self.progress.add_task(f"[{self.theme.description}]{description}"
                                      if self.theme.description else description,
                                      total=convert_inf(total), visible=visible)

    def _update(self, task_id: Any, current: int, visible: bool = True) -> None:
        if self.progress is not None and task_id is not None and self.is_enabled:
            self.progress.update(task_id, completed=current, visible=visible)

    def _update_metrics(self, trainer: Any, module: Any, force: bool = False) -> None:
        now = time.monotonic()
        if self.progress is not None and (force or now - self._metrics_read
                                          >= self.metrics_interval):
            self._metrics_read = now
            self._metrics = self.get_metrics(trainer, module)

    def metrics_text(self) -> str:
        """The metrics line under the training bar."""
        parts = []
        for name, value in self._metrics.items():
            if not isinstance(value, str):
                try:
                    value = f"{value:{self.theme.metrics_format}}"
                except (TypeError, ValueError):
                    value = str(value)
            parts.append(f"{name}: {value}")
        return self.theme.metrics_text_delimiter.join(parts)

    # ------------------------------------------------------------------ hooks

    def on_sanity_check_start(self, trainer: Any, module: Any) -> None:
        self._init_progress(trainer)

    def on_sanity_check_end(self, trainer: Any, module: Any) -> None:
        if self.progress is not None and self.val_sanity_progress_bar_id is not None:
            self.progress.update(self.val_sanity_progress_bar_id, advance=0, visible=False)
        self.val_sanity_progress_bar_id = None

    def on_train_start(self, trainer: Any, module: Any) -> None:
        self._init_progress(trainer)

    def on_train_epoch_start(self, trainer: Any, module: Any) -> None:
        if self.is_disabled:
            return
        self._init_progress(trainer)
        description = f"Epoch {trainer.current_epoch}"
        total = self.total_train_batches
        if self.train_progress_bar_id is not None and self._leave:
            self.train_progress_bar_id = None  # keep the finished bar, start a new one
        if self.train_progress_bar_id is None:
            self.train_progress_bar_id = self._add_task(total, description)
        else:
            self.progress.reset(self.train_progress_bar_id, total=convert_inf(total),
                                description=description, visible=True)

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        self._update(self.train_progress_bar_id, batch_idx + 1)
        self._update_metrics(trainer, module)

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        self._update_metrics(trainer, module, force=True)

    def on_validation_batch_start(self, trainer: Any, module: Any, batch: Any, batch_idx: int,
                                  dataloader_idx: int = 0) -> None:
        if self.is_disabled or not self.has_dataloader_changed(dataloader_idx):
            return
        assert self.progress is not None
        total = self.total_val_batches_current_dataloader
        if trainer.sanity_checking:
            if self.val_sanity_progress_bar_id is not None:
                self.progress.update(self.val_sanity_progress_bar_id, visible=False)
            self.val_sanity_progress_bar_id = self._add_task(total,
                                                             self.sanity_check_description)
        else:
            if self.val_progress_bar_id is not None:
                self.progress.update(self.val_progress_bar_id, visible=False)
            self.val_progress_bar_id = self._add_task(total, self.validation_description)

    def on_validation_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                                batch_idx: int, dataloader_idx: int = 0) -> None:
        task = self.val_sanity_progress_bar_id if trainer.sanity_checking else \
            self.val_progress_bar_id
        self._update(task, batch_idx + 1)

    def on_validation_end(self, trainer: Any, module: Any) -> None:
        if trainer.state.fn == "fit":
            if self.progress is not None and self.val_progress_bar_id is not None:
                self.progress.update(self.val_progress_bar_id, visible=False)
            self._update_metrics(trainer, module, force=True)
        elif trainer.state.fn == "validate":
            self._stop_progress()
        self.reset_dataloader_idx_tracker()

    def on_test_start(self, trainer: Any, module: Any) -> None:
        self._init_progress(trainer)

    def on_test_batch_start(self, trainer: Any, module: Any, batch: Any, batch_idx: int,
                            dataloader_idx: int = 0) -> None:
        if self.is_disabled or not self.has_dataloader_changed(dataloader_idx):
            return
        if self.test_progress_bar_id is not None:
            self.progress.update(self.test_progress_bar_id, visible=False)
        self.test_progress_bar_id = self._add_task(self.total_test_batches_current_dataloader,
                                                   self.test_description)

    def on_test_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                          batch_idx: int, dataloader_idx: int = 0) -> None:
        self._update(self.test_progress_bar_id, batch_idx + 1)

    def on_test_end(self, trainer: Any, module: Any) -> None:
        self._stop_progress()
        self.reset_dataloader_idx_tracker()

    def on_predict_start(self, trainer: Any, module: Any) -> None:
        self._init_progress(trainer)

    def on_predict_batch_start(self, trainer: Any, module: Any, batch: Any, batch_idx: int,
                               dataloader_idx: int = 0) -> None:
        if self.is_disabled or not self.has_dataloader_changed(dataloader_idx):
            return
        if self.predict_progress_bar_id is not None:
            self.progress.update(self.predict_progress_bar_id, visible=False)
        self.predict_progress_bar_id = self._add_task(
            self.total_predict_batches_current_dataloader, self.predict_description)

    def on_predict_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                             batch_idx: int, dataloader_idx: int = 0) -> None:
        self._update(self.predict_progress_bar_id, batch_idx + 1)

    def on_predict_end(self, trainer: Any, module: Any) -> None:
        self._stop_progress()
        self.reset_dataloader_idx_tracker()

    def on_train_end(self, trainer: Any, module: Any) -> None:
        self._stop_progress()

    def teardown(self, trainer: Any, module: Any, stage: str) -> None:
        self._stop_progress()
        self._reset_progress_bar_ids()

    def on_exception(self, trainer: Any, module: Any, exception: BaseException) -> None:
        self._stop_progress()

    def print(self, *args: Any, **kwargs: Any) -> None:
        """Print above the bars."""
        if self.progress is not None and not self._stopped:
            self.progress.console.print(*args, **kwargs)
        else:
            print(*args, **kwargs)


@functools.cache
def _columns() -> tuple[type, type, type, type]:
    """The bar's rich columns, defined on first use (importing rich costs only when drawn)."""
    from rich.progress import ProgressColumn, Task
    from rich.text import Text

    class _Batches(ProgressColumn):
        """``completed/total`` (``--`` for a loader without a length)."""

        def __init__(self, style: Any) -> None:
            self.style = style
            super().__init__()

        def render(self, task: Task) -> Text:
            total = "--" if task.total is None else int(task.total)
            return Text(f"{int(task.completed)}/{total}", style=self.style)


    class _Times(ProgressColumn):
        """``elapsed • remaining``, refreshed twice a second (no jitter)."""

        max_refresh = 0.5

        def __init__(self, style: Any) -> None:
            self.style = style
            super().__init__()

        def render(self, task: Task) -> Text:
            elapsed = task.finished_time if task.finished else task.elapsed
            remaining = task.time_remaining

            def fmt(t: float | None) -> str:
                return "-:--:--" if t is None else str(timedelta(seconds=int(t)))

            return Text(f"{fmt(elapsed)} • {fmt(remaining)}", style=self.style)


    class _Speed(ProgressColumn):
        """``it/s`` of the task."""

        def __init__(self, style: Any) -> None:
            self.style = style
            super().__init__()

        def render(self, task: Task) -> Text:
            speed = f"{task.speed:>.2f}" if task.speed is not None else "0.00"
            return Text(f"{speed}it/s", style=self.style)


    class _Metrics(ProgressColumn):
        """The bar's metrics, on the training task only."""

        def __init__(self, bar: RichProgressBar) -> None:
            self.bar = bar
            super().__init__()

        def render(self, task: Task) -> Text:
            if task.id != self.bar.train_progress_bar_id:
                return Text()
            return Text(self.bar.metrics_text(), justify="left", style=self.bar.theme.metrics)

    return _Batches, _Times, _Speed, _Metrics
