"""``EarlyStopping``: stop when a monitored metric stops improving."""

from __future__ import annotations

import math
from typing import Any

from fulmen.callbacks import monitor as mon
from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError


class EarlyStopping(Callback):
    """Stop ``fit`` after ``patience`` checks without an improvement of ``min_delta``.

    Checks after each validation run (or at each training epoch end when there is no
    validation, or with ``check_on_train_epoch_end=True``). ``stopping_threshold`` stops as soon
    as the metric is good enough; ``divergence_threshold`` and non-finite values stop at once.
    Every process reaches the same decision.
    """

    monitors = True

    def __init__(self, monitor: str, min_delta: float = 0.0, patience: int = 3,
                 mode: str = "min", strict: bool = True, check_finite: bool = True,
                 stopping_threshold: float | None = None,
                 divergence_threshold: float | None = None,
                 check_on_train_epoch_end: bool | None = None, verbose: bool = False) -> None:
        mon.check_mode("EarlyStopping", mode)
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 0:
            raise ConfigurationError(f"EarlyStopping(patience={patience!r}): use an int >= 0")
        self.monitor, self.mode, self.strict = monitor, mode, strict
        self.min_delta, self.patience = abs(min_delta), patience
        self.check_finite = check_finite
        self.stopping_threshold, self.divergence_threshold = stopping_threshold, \
            divergence_threshold
        self.check_on_train_epoch_end = check_on_train_epoch_end
        self.verbose = verbose
        self.wait_count = 0
        self.stopped_epoch = 0
        self.best_score = mon.MODES[mode]
        self.stop_reason = ""

    @property
    def state_key(self) -> str:
        return f"EarlyStopping{{'monitor': {self.monitor!r}, 'mode': {self.mode!r}}}"

    def state_dict(self) -> dict[str, Any]:
        return {"wait_count": self.wait_count, "stopped_epoch": self.stopped_epoch,
                "best_score": self.best_score, "patience": self.patience}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.wait_count = state_dict["wait_count"]
        self.stopped_epoch = state_dict["stopped_epoch"]
        self.best_score = state_dict["best_score"]

    def on_validation_end(self, trainer: Any, module: Any) -> None:
        if trainer.state == "fit" and not trainer.sanity_checking and \
                not self.check_on_train_epoch_end:
            self._check(trainer)

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        on_train = self.check_on_train_epoch_end
        if on_train or (on_train is None and not trainer.num_val_batches):
            self._check(trainer)

    def _check(self, trainer: Any) -> None:
        if self.monitor not in trainer.callback_metrics and not self.strict:
            return
        current = mon.read("EarlyStopping", trainer, self.monitor)
        stop, reason = self._evaluate(current)
        stop = trainer.strategy.reduce_boolean_decision(stop, all=False)
        if stop:
            trainer.should_stop = True
            self.stopped_epoch = trainer.current_epoch
            self.stop_reason = reason
            if self.verbose:
                trainer.print(f"EarlyStopping: {reason}")

    def _evaluate(self, current: float) -> tuple[bool, str]:
        name = self.monitor
        if self.check_finite and not math.isfinite(current):
            return True, f"{name}={current} is not finite; stopping"
        if self.stopping_threshold is not None and mon.improved(self.mode, current,
                                                                 self.stopping_threshold):
            return True, f"{name}={current:.6g} reached stopping_threshold="\
                f"{self.stopping_threshold}"
        if self.divergence_threshold is not None and mon.improved(
                "max" if self.mode == "min" else "min", current, self.divergence_threshold):
            return True, f"{name}={current:.6g} passed divergence_threshold="\
                f"{self.divergence_threshold}"
        if mon.improved(self.mode, current, self.best_score, self.min_delta):
            self.best_score, self.wait_count = current, 0
            return False, ""
        self.wait_count += 1
        if self.wait_count >= self.patience:
            return True, (f"{name} did not improve by {self.min_delta} in {self.wait_count} "
                          f"checks; best {self.best_score:.6g}")
        return False, ""
