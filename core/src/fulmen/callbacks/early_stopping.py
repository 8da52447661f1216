"""``EarlyStopping``: stop when a monitored metric stops improving."""

from __future__ import annotations

import math
from enum import Enum
from typing import Any

import torch

from fulmen import arguments
from fulmen.callbacks import monitor as mon
from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError, MissingMetricError
from fulmen.utilities.rank_zero import log, rank_prefixed_message, rank_zero_warn


class EarlyStoppingReason(Enum):
    """Why :class:`EarlyStopping` stopped training."""

    NOT_STOPPED = 0
    STOPPING_THRESHOLD = 1
    DIVERGENCE_THRESHOLD = 2
    PATIENCE_EXHAUSTED = 3
    NON_FINITE_METRIC = 4


class EarlyStopping(Callback):
    """Stop ``fit`` after ``patience`` checks without an improvement of more than ``min_delta``.

    Checks at the end of each training epoch when validation runs once per epoch (or there is
    none), else after each validation run; ``check_on_train_epoch_end`` forces one or the
    other. ``stopping_threshold`` stops as soon as the metric is good enough,
    ``divergence_threshold`` as soon as it is worse than that, ``check_finite`` at a NaN or
    infinite value. ``strict=False`` skips a check where the metric was not logged (the
    default is an error listing what was). Every process stops if any decides to.
    ``stopping_reason`` (an :class:`EarlyStoppingReason`) and ``stopping_reason_message`` say
    why; ``verbose`` logs each check, on rank zero only with ``log_rank_zero_only``.
    """

    monitors = True
    mode_dict = {"min": torch.lt, "max": torch.gt}
    order_dict = {"min": "<", "max": ">"}

    def __init__(self, monitor: str, min_delta: float = 0.0, patience: int = 3,
                 verbose: bool = False, mode: str = "min", strict: bool = True,
                 check_finite: bool = True, stopping_threshold: float | None = None,
                 divergence_threshold: float | None = None,
                 check_on_train_epoch_end: bool | None = None,
                 log_rank_zero_only: bool = False) -> None:
        problems = []
        if mode not in self.mode_dict:
            problems.append(f"`mode` can be min, max, got {mode}")
        if isinstance(patience, bool) or not isinstance(patience, int | float) or \
                patience != patience:
            problems.append(f"patience={patience!r}: use an int >= 0")
        elif not isinstance(patience, int) or patience < 0:  # Lightning runs it
            rank_zero_warn(f"EarlyStopping(patience={patience!r}): expected an int >= 0; "
                           "training stops once that many checks in a row did not improve "
                           "(Lightning's rule, which it applies to this value too)",
                           category=UserWarning)
        if not isinstance(monitor, str) or not monitor:
            problems.append(f"monitor={monitor!r}: name a logged metric")
        if problems:
            raise ConfigurationError(f"EarlyStopping(monitor={monitor!r}, mode={mode!r}, "
                                     f"patience={patience!r}): " + "; ".join(problems))
        arguments.check_number("EarlyStopping", "min_delta", min_delta, optional=False)
        for flag, value in (("stopping_threshold", stopping_threshold),
                            ("divergence_threshold", divergence_threshold)):
            if isinstance(value, float) and math.isinf(value):
                continue  # Lightning takes ±inf (stopping_threshold=inf: stop at the first check)
            arguments.check_number("EarlyStopping", flag, value)
        flags = arguments.check_bool("EarlyStopping", {
            "verbose": verbose, "strict": strict, "check_finite": check_finite,
            "check_on_train_epoch_end": check_on_train_epoch_end, "log_rank_zero_only":
            log_rank_zero_only}, optional=("check_on_train_epoch_end",))
        verbose, strict, check_finite = flags["verbose"], flags["strict"], flags["check_finite"]
        check_on_train_epoch_end = flags["check_on_train_epoch_end"]
        log_rank_zero_only = flags["log_rank_zero_only"]
        self.monitor = monitor
        self.patience = patience
        self.verbose = verbose
        self.mode = mode
        self.strict = strict
        self.check_finite = check_finite
        self.stopping_threshold = stopping_threshold
        self.divergence_threshold = divergence_threshold
        self.log_rank_zero_only = log_rank_zero_only
        self._check_on_train_epoch_end = check_on_train_epoch_end
        self.min_delta = abs(min_delta) * (1 if mode == "max" else -1)
        self.wait_count = 0
        self.stopped_epoch = 0
        self.stopping_reason = EarlyStoppingReason.NOT_STOPPED
        self.stopping_reason_message: str | None = None
        self.best_score = torch.tensor(mon.MODES[mode])

    @property
    def monitor_op(self) -> Any:
        return self.mode_dict[self.mode]

    @property
    def stop_reason(self) -> str:
        """``stopping_reason_message``, or ``""`` while training was not stopped."""
        return self.stopping_reason_message or ""

    @property
    def state_key(self) -> str:
        return f"{type(self).__qualname__}{{'monitor': {self.monitor!r}, 'mode': {self.mode!r}}}"

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        if self._check_on_train_epoch_end is None:
            # validation more than once an epoch, or not every epoch: check after validation
            self._check_on_train_epoch_end = trainer.val_check_interval in (None, 1.0) and \
                trainer.check_val_every_n_epoch == 1

    def state_dict(self) -> dict[str, Any]:
        return {"wait_count": self.wait_count, "stopped_epoch": self.stopped_epoch,
                "best_score": self.best_score, "patience": self.patience,
                "stopping_reason": self.stopping_reason.value,
                "stopping_reason_message": self.stopping_reason_message}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.wait_count = state_dict["wait_count"]
        self.stopped_epoch = state_dict["stopped_epoch"]
        best = state_dict["best_score"]
        self.best_score = best if isinstance(best, torch.Tensor) else torch.tensor(float(best))
        self.patience = state_dict["patience"]
        self.stopping_reason = EarlyStoppingReason(
            state_dict.get("stopping_reason", EarlyStoppingReason.NOT_STOPPED.value))
        self.stopping_reason_message = state_dict.get("stopping_reason_message")

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        if self._check_on_train_epoch_end and not self._should_skip_check(trainer):
            self._run_early_stopping_check(trainer)

    def on_validation_end(self, trainer: Any, module: Any) -> None:
        if not self._check_on_train_epoch_end and not self._should_skip_check(trainer):
            self._run_early_stopping_check(trainer)

    def _should_skip_check(self, trainer: Any) -> bool:
        return trainer.state.fn != "fit" or trainer.sanity_checking

    def _validate_condition_metric(self, logs: dict[str, Any]) -> bool:
        if self.monitor in logs:
            return True
        message = mon.missing_message("EarlyStopping", self.monitor, logs)
        if self.strict:
            raise MissingMetricError(message + " (or pass strict=False to skip checks where "
                                     "it is missing)")
        if self.verbose:
            rank_zero_warn(message, category=RuntimeWarning)
        return False

    def _run_early_stopping_check(self, trainer: Any) -> None:
        logs = trainer.callback_metrics
        if trainer.fast_dev_run or not self._validate_condition_metric(logs):
            return
        value = logs[self.monitor]
        current = (value.detach().float().cpu() if isinstance(value, torch.Tensor)
                   else torch.tensor(float(value))).squeeze()
        should_stop, reason = self._evaluate_stopping_criteria(current)
        should_stop = trainer.strategy.reduce_boolean_decision(should_stop, all=False)
        trainer.should_stop = trainer.should_stop or should_stop
        if should_stop:
            self.stopped_epoch = trainer.current_epoch
            self.stopping_reason_message = reason
        if reason and self.verbose:
            self._log_info(trainer, reason, self.log_rank_zero_only)

    def _evaluate_stopping_criteria(self, current: torch.Tensor) -> tuple[bool, str | None]:
        op, name = self.monitor_op, self.monitor
        if self.check_finite and not torch.isfinite(current):
            self.stopping_reason = EarlyStoppingReason.NON_FINITE_METRIC
            return True, (f"Monitored metric {name} = {current} is not finite. Previous best "
                          f"value was {float(self.best_score):.3f}. Signaling Trainer to stop.")
        order = self.order_dict[self.mode]
        if self.stopping_threshold is not None and op(current, self.stopping_threshold):
            self.stopping_reason = EarlyStoppingReason.STOPPING_THRESHOLD
            return True, (f"Stopping threshold reached: {name} = {current} {order} "
                          f"{self.stopping_threshold}. Signaling Trainer to stop.")
        if self.divergence_threshold is not None and op(-current, -self.divergence_threshold):
            self.stopping_reason = EarlyStoppingReason.DIVERGENCE_THRESHOLD
            return True, (f"Divergence threshold reached: {name} = {current} {order} "
                          f"{self.divergence_threshold}. Signaling Trainer to stop.")
        if op(current - self.min_delta, self.best_score):
            if torch.isfinite(self.best_score):
                reason = (f"Metric {name} improved by {float(abs(self.best_score - current)):.3f}"
                          f" >= min_delta = {abs(self.min_delta)}. New best score: "
                          f"{float(current):.3f}")
            else:
                reason = f"Metric {name} improved. New best score: {float(current):.3f}"
            self.best_score, self.wait_count = current, 0
            return False, reason
        self.wait_count += 1
        if self.wait_count >= self.patience:
            self.stopping_reason = EarlyStoppingReason.PATIENCE_EXHAUSTED
            return True, (f"Monitored metric {name} did not improve in the last "
                          f"{self.wait_count} records. Best score: {float(self.best_score):.3f}. "
                          "Signaling Trainer to stop.")
        return False, None

    @staticmethod
    def _log_info(trainer: Any, message: str, log_rank_zero_only: bool) -> None:
        rank = trainer.global_rank if trainer.world_size > 1 else None
        if rank is None or not log_rank_zero_only or rank == 0:
            log.info(rank_prefixed_message(message, rank))
