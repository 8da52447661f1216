"""``ProgressBar``: the base of progress bars — totals, descriptions and the metrics shown.

The bars themselves: ``TQDMProgressBar`` (``fulmen.callbacks.tqdm_progress``, the default) and
``RichProgressBar`` (``fulmen.callbacks.rich_progress``).
"""

from __future__ import annotations

import math
import sys
from typing import Any

from fulmen.callbacks.base import Callback
from fulmen.utilities.rank_zero import rank_zero_warn


class ProgressBar(Callback):
    """Base class for progress bars: the Trainer adds its default bar unless one of these is
    among the callbacks. Subclasses implement ``disable``/``enable`` and draw in the hooks;
    ``get_metrics`` is what they show, the totals below how far there is to go."""

    def __init__(self) -> None:
        self._trainer: Any = None
        self._current_eval_dataloader_idx: int | None = None

    @property
    def trainer(self) -> Any:
        if self._trainer is None:
            raise TypeError(f"The `{type(self).__name__}._trainer` reference has not been set "
                            "yet: it is set when a Trainer stage starts (setup)")
        return self._trainer

    @property
    def sanity_check_description(self) -> str:
        return "Sanity Checking"

    @property
    def train_description(self) -> str:
        return "Training"

    @property
    def validation_description(self) -> str:
        return "Validation"

    @property
    def test_description(self) -> str:
        return "Testing"

    @property
    def predict_description(self) -> str:
        return "Predicting"

    @property
    def total_train_batches(self) -> int | float:
        """Batches in this training epoch (``inf`` for an endless loader), capped by the steps
        left when only ``max_steps`` bounds the run."""
        trainer = self.trainer
        if trainer.max_epochs == -1 and trainer.max_steps is not None and trainer.max_steps > 0:
            return min(trainer.num_training_batches, trainer.max_steps - trainer.global_step)
        return trainer.num_training_batches

    def _current(self, batches: list[int | float]) -> int | float:
        index = self._current_eval_dataloader_idx or 0
        return batches[index] if index < len(batches) else 0

    @property
    def total_val_batches_current_dataloader(self) -> int | float:
        trainer = self.trainer
        return self._current(trainer.num_sanity_val_batches if trainer.sanity_checking
                             else trainer.num_val_batches)

    @property
    def total_test_batches_current_dataloader(self) -> int | float:
        return self._current(self.trainer.num_test_batches)

    @property
    def total_predict_batches_current_dataloader(self) -> int | float:
        return self._current(self.trainer.num_predict_batches)

    @property
    def total_val_batches(self) -> int | float:
        return sum(self.trainer.num_val_batches)

    def has_dataloader_changed(self, dataloader_idx: int) -> bool:
        old = self._current_eval_dataloader_idx
        self._current_eval_dataloader_idx = dataloader_idx
        return old != dataloader_idx

    def reset_dataloader_idx_tracker(self) -> None:
        self._current_eval_dataloader_idx = None

    def disable(self) -> None:
        """Stop drawing (the Trainer calls it on every rank but zero)."""
        raise NotImplementedError

    def enable(self) -> None:
        """Draw again."""
        raise NotImplementedError

    def print(self, *args: Any, **kwargs: Any) -> None:
        """``print`` without breaking the bars."""
        print(*args, **kwargs)

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        self._trainer = trainer
        if not trainer.is_global_zero:
            self.disable()

    def get_metrics(self, trainer: Any, module: Any) -> dict[str, int | str | float]:
        """What the bar shows: ``v_num`` (the logger's version) and every value logged with
        ``prog_bar=True``. Override to change it. Called only when a bar redraws: reading the
        metrics copies device values to the host."""
        standard = get_standard_metrics(trainer)
        logged = trainer.progress_bar_metrics
        duplicates = list(standard.keys() & logged.keys())
        if duplicates:
            rank_zero_warn(f"The progress bar already tracks a metric with the name(s) "
                           f"'{', '.join(duplicates)}' and `self.log('{duplicates[0]}', ..., "
                           "prog_bar=True)` will overwrite this value.  If this is undesired, "
                           "change the name or override `get_metrics()` in the progress bar "
                           "callback.")
        return {**standard, **logged}


class RefreshingBar(ProgressBar):
    """A bar drawn every ``refresh_rate`` (0: never), switched by ``disable``/``enable``."""

    _refresh_rate = 1
    _enabled = True

    @property
    def refresh_rate(self) -> int:
        return self._refresh_rate

    @property
    def is_enabled(self) -> bool:
        return self._enabled and self.refresh_rate > 0

    @property
    def is_disabled(self) -> bool:
        return not self.is_enabled

    def disable(self) -> None:
        self._enabled = False

    def enable(self) -> None:
        self._enabled = True


def get_standard_metrics(trainer: Any) -> dict[str, int | str]:
    """``{"v_num": version}`` of the first logger with one (long string versions: last four
    characters); empty without loggers."""
    items: dict[str, int | str] = {}
    for logger in trainer.loggers:
        version = logger.version
        if version not in ("", None):
            items["v_num"] = version[-4:] if isinstance(version, str) else version
            break
    return items


def convert_inf(x: int | float | None) -> int | float | None:
    """None for an infinite total (tqdm and rich show no total then)."""
    return None if x is None or math.isinf(x) or math.isnan(x) else x


def interactive() -> bool:
    """Whether output goes to a terminal or a notebook (bars are drawn only then)."""
    try:
        from IPython import get_ipython

        if get_ipython() is not None:
            return True
    except ImportError:
        pass
    return sys.stdout.isatty()

