"""``Timer``: stop training after a duration, and report how long each stage took."""

from __future__ import annotations

import re
import time
from datetime import timedelta
from typing import Any

from fulmen import arguments
from fulmen.callbacks.base import Callback
from fulmen.errors import ConfigurationError
from fulmen.utilities.rank_zero import rank_zero_info

STAGES = ("train", "validate", "test", "predict", "sanity_check")


def _parse(duration: str | timedelta | dict[str, int] | None) -> float | None:
    if duration is None:
        return None
    if isinstance(duration, timedelta):
        return duration.total_seconds()
    if isinstance(duration, dict):
        try:
            return timedelta(**duration).total_seconds()
        except TypeError as exc:
            raise ConfigurationError(f"`Timer(duration={duration!r})`: {exc}; the keys are "
                                     "datetime.timedelta's: days, hours, minutes, seconds, "
                                     "weeks") from None
    match = re.fullmatch(r"(\d+):(\d\d):(\d\d):(\d\d)", str(duration).strip())
    if not match:
        raise ConfigurationError(f"`Timer(duration={duration!r})` is not a valid duration. "
                                 "Expected a string in the format DD:HH:MM:SS, a "
                                 "datetime.timedelta or a dict like {'hours': 2}")
    days, hours, minutes, seconds = (int(g) for g in match.groups())
    return timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds).total_seconds()


class Timer(Callback):
    """Stop ``fit`` once ``duration`` (``"DD:HH:MM:SS"``, a ``timedelta`` or a dict) has
    passed, checked every ``interval`` (``"step"`` or ``"epoch"``); every rank stops together.
    ``time_elapsed(stage)``, ``start_time``, ``end_time`` and ``time_remaining`` report on
    ``"train"``, ``"validate"``, ``"test"``, ``"predict"``. The elapsed training time is saved
    in checkpoints, so a resumed run keeps counting."""

    def __init__(self, duration: str | timedelta | dict[str, int] | None = None,
                 interval: str = "step", verbose: bool = True) -> None:
        if interval not in ("step", "epoch"):
            raise ConfigurationError(f"Unsupported parameter value `Timer(interval={interval!r})`."
                                     " Possible choices are: step, epoch")
        arguments.check_bool("Timer", {"verbose": verbose})
        self._duration = _parse(duration)
        self._interval = interval
        self._verbose = verbose
        self._start_time: dict[str, float | None] = dict.fromkeys(STAGES)
        self._end_time: dict[str, float | None] = dict.fromkeys(STAGES)
        self._offset = 0.0

    def _stage(self, stage: str) -> str:
        if stage not in STAGES:
            raise ConfigurationError(f"Timer: unknown stage {stage!r}; use one of {STAGES}")
        return stage

    def start_time(self, stage: str = "train") -> float | None:
        return self._start_time[self._stage(stage)]

    def end_time(self, stage: str = "train") -> float | None:
        return self._end_time[self._stage(stage)]

    def time_elapsed(self, stage: str = "train") -> float:
        start, end = self.start_time(stage), self.end_time(stage)
        offset = self._offset if stage == "train" else 0.0
        if start is None:
            return offset
        return (time.monotonic() if end is None else end) - start + offset

    def time_remaining(self, stage: str = "train") -> float | None:
        return None if self._duration is None else self._duration - self.time_elapsed(stage)

    def _start(self, stage: str) -> None:
        self._start_time[stage], self._end_time[stage] = time.monotonic(), None

    def _end(self, stage: str) -> None:
        self._end_time[stage] = time.monotonic()

    def on_train_start(self, trainer: Any, module: Any) -> None:
        self._start("train")

    def on_train_end(self, trainer: Any, module: Any) -> None:
        self._end("train")

    def on_validation_start(self, trainer: Any, module: Any) -> None:
        self._start("validate")

    def on_validation_end(self, trainer: Any, module: Any) -> None:
        self._end("validate")

    def on_test_start(self, trainer: Any, module: Any) -> None:
        self._start("test")

    def on_test_end(self, trainer: Any, module: Any) -> None:
        self._end("test")

    def on_predict_start(self, trainer: Any, module: Any) -> None:
        self._start("predict")

    def on_predict_end(self, trainer: Any, module: Any) -> None:
        self._end("predict")

    def on_fit_start(self, trainer: Any, module: Any) -> None:
        if self._duration is not None:  # a restored timer may be used up already
            self._check_time_remaining(trainer)

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if self._interval == "step" and self._duration is not None:
            self._check_time_remaining(trainer)

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        if self._interval == "epoch" and self._duration is not None:
            self._check_time_remaining(trainer)

    def state_dict(self) -> dict[str, Any]:
        return {"time_elapsed": {stage: self.time_elapsed(stage) for stage in STAGES}}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._offset = float(state_dict.get("time_elapsed", {}).get("train", 0.0))

    def _check_time_remaining(self, trainer: Any) -> None:
        assert self._duration is not None
        should_stop = trainer.strategy.broadcast(self.time_elapsed() >= self._duration)
        trainer.should_stop = trainer.should_stop or should_stop
        if should_stop and self._verbose:
            elapsed = timedelta(seconds=int(self.time_elapsed("train")))
            rank_zero_info(f"Time limit reached. Elapsed time is {elapsed}. Signaling Trainer "
                           "to stop.")
