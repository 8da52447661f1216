"""Progress bars: tqdm bars on a terminal; one line per epoch when output is not a terminal."""

from __future__ import annotations

import math
import sys
import time
from typing import Any

from fulmen import arguments
from fulmen.callbacks.base import Callback
from fulmen.status import configure_logging


class ProgressBar(Callback):
    """Base class: the Trainer adds a ``TQDMProgressBar`` unless one of these is given."""

    def metrics_text(self, trainer: Any) -> str:
        metrics = trainer.progress_bar_metrics
        return ", ".join(f"{k}={v:.4g}" for k, v in sorted(metrics.items()))


class TQDMProgressBar(ProgressBar):
    """Training and validation bars with the ``prog_bar=True`` metrics.

    On a terminal the bars redraw at most every ``refresh_seconds`` (metrics are read only
    then, so the bar never forces a device sync per step). Without a terminal (CI logs, files)
    there are no bars, and each epoch ends with one summary line on rank zero.
    """

    def __init__(self, refresh_seconds: float = 0.5, leave: bool = True,
                 enabled: bool | None = None) -> None:
        arguments.check_number("TQDMProgressBar", "refresh_seconds", refresh_seconds, minimum=0,
                               optional=False)
        arguments.check_bool("TQDMProgressBar", {"leave": leave, "enabled": enabled},
                             optional=("enabled",))
        self.refresh_seconds = refresh_seconds
        self.leave = leave
        self.enabled = sys.stdout.isatty() if enabled is None else enabled
        self._bar: Any = None
        self._eval_bar: Any = None
        self._last = 0.0

    def _new_bar(self, trainer: Any, total: float, desc: str, leave: bool) -> Any:
        from tqdm.auto import tqdm

        return tqdm(total=None if total == math.inf else int(total), desc=desc, leave=leave,
                    dynamic_ncols=True, file=sys.stdout, disable=not trainer.is_global_zero,
                    mininterval=self.refresh_seconds, smoothing=0)

    # ------------------------------------------------------------------ training

    def on_train_epoch_start(self, trainer: Any, module: Any) -> None:
        if self.enabled:
            self._bar = self._new_bar(trainer, trainer.num_training_batches,
                                      f"Epoch {trainer.current_epoch}", self.leave)
            self._last = time.monotonic()

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        bar = self._bar
        if bar is None:
            return
        bar.update(1)
        now = time.monotonic()
        if now - self._last >= self.refresh_seconds:
            self._last = now
            bar.set_postfix_str(self.metrics_text(trainer), refresh=False)

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        text = self.metrics_text(trainer)
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=True)
            self._bar.close()
            self._bar = None
        elif trainer.is_global_zero:
            configure_logging().info("Epoch %d: %d steps%s", trainer.current_epoch,
                                     trainer.global_step, f", {text}" if text else "")

    # ------------------------------------------------------------------ evaluation

    def _eval_start(self, trainer: Any, desc: str) -> None:
        if self.enabled:
            total = sum(n for n in trainer.num_val_batches if n != math.inf) if (
                desc.startswith("Valid") or desc.startswith("Sanity")) else None
            self._eval_bar = self._new_bar(trainer, total or math.inf, desc,
                                           leave=trainer.state != "fit")

    def _eval_step(self) -> None:
        if self._eval_bar is not None:
            self._eval_bar.update(1)

    def _eval_end(self) -> None:
        if self._eval_bar is not None:
            self._eval_bar.close()
            self._eval_bar = None

    def on_validation_start(self, trainer: Any, module: Any) -> None:
        self._eval_start(trainer, "Sanity check" if trainer.sanity_checking else "Validation")

    def on_validation_batch_end(self, *args: Any, **kwargs: Any) -> None:
        self._eval_step()

    def on_validation_end(self, trainer: Any, module: Any) -> None:
        self._eval_end()

    def on_test_start(self, trainer: Any, module: Any) -> None:
        self._eval_start(trainer, "Testing")

    def on_test_batch_end(self, *args: Any, **kwargs: Any) -> None:
        self._eval_step()

    def on_test_end(self, trainer: Any, module: Any) -> None:
        self._eval_end()

    def on_predict_start(self, trainer: Any, module: Any) -> None:
        self._eval_start(trainer, "Predicting")

    def on_predict_batch_end(self, *args: Any, **kwargs: Any) -> None:
        self._eval_step()

    def on_predict_end(self, trainer: Any, module: Any) -> None:
        self._eval_end()

    def on_exception(self, trainer: Any, module: Any, exception: BaseException) -> None:
        for bar in (self._bar, self._eval_bar):
            if bar is not None:
                bar.close()
        self._bar = self._eval_bar = None
