"""Reading a monitored metric, with an error that lists what was logged."""

from __future__ import annotations

from typing import Any

from fulmen.errors import ConfigurationError

MODES = {"min": float("inf"), "max": float("-inf")}


def check_mode(owner: str, mode: str) -> None:
    if mode not in MODES:
        raise ConfigurationError(f"{owner}(mode={mode!r}): use 'min' or 'max'")


def missing_message(owner: str, monitor: str, logged: Any) -> str:
    """Why ``monitor`` cannot be read, listing what was ``logged``."""
    return (f"{owner}(monitor={monitor!r}) found no metric named {monitor!r}. Logged metrics: "
            f"{sorted(logged) or '(none yet)'}. Log it with self.log({monitor!r}, value) or "
            "monitor one of these")


def read(owner: str, trainer: Any, monitor: str) -> float:
    metrics = trainer.callback_metrics
    if monitor not in metrics:
        raise ConfigurationError(missing_message(owner, monitor, metrics))
    return float(metrics[monitor])


def improved(mode: str, value: float, best: float, min_delta: float = 0.0) -> bool:
    return value < best - min_delta if mode == "min" else value > best + min_delta
