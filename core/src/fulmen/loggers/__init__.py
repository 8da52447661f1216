"""Loggers: where logged metrics and hyper-parameters go."""

from __future__ import annotations

from typing import Any

from fulmen.errors import ConfigurationError
from fulmen.loggers.base import Logger
from fulmen.loggers.csv import CSVLogger

__all__ = ["CSVLogger", "Logger", "TensorBoardLogger", "resolve_loggers"]


def __getattr__(name: str) -> Any:
    if name == "TensorBoardLogger":  # imports tensorboard only when asked for
        from fulmen.loggers.tensorboard import TensorBoardLogger

        return TensorBoardLogger
    raise AttributeError(f"module 'fulmen.loggers' has no attribute {name!r}")


def tensorboard_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("tensorboard") is not None


def resolve_loggers(logger: Any, root: str) -> list[Logger]:
    """``True``: TensorBoard when installed, else CSV; ``False``/``None``: none; or loggers."""
    if logger is True:
        if tensorboard_available():
            from fulmen.loggers.tensorboard import TensorBoardLogger

            return [TensorBoardLogger(root)]
        return [CSVLogger(root)]
    if logger in (False, None):
        return []
    items = list(logger) if isinstance(logger, list | tuple) else [logger]
    for item in items:
        if not isinstance(item, Logger):
            raise ConfigurationError(f"Trainer(logger=...) got a {type(item).__name__}; use True, "
                                     "False, a fulmen.loggers.Logger or a list of them")
    return items
