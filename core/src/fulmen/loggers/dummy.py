"""``DummyLogger``: the logger that stands in for the configured ones under ``fast_dev_run``."""

from __future__ import annotations

from typing import Any

from fulmen.api.logger import Logger, NoOpExperiment


class DummyLogger(Logger):
    """Logs nothing; ``experiment`` is an object whose every attribute, call and item does
    nothing, so user code such as ``self.logger.experiment.add_image(...)`` runs unchanged under
    ``Trainer(fast_dev_run=...)`` (Lightning's ``DummyLogger``, which the Trainer puts in place of
    the configured loggers there)."""

    @property
    def experiment(self) -> NoOpExperiment:
        return NoOpExperiment()

    @property
    def name(self) -> str:
        return ""

    @property
    def version(self) -> str:
        return ""

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        pass

    def log_hyperparams(self, params: dict[str, Any]) -> None:
        pass

    def __getitem__(self, index: int) -> DummyLogger:
        """``trainer.logger[0]`` works as on a list of loggers (Lightning's)."""
        return self

    def __iter__(self) -> Any:
        """Iterating gives nothing (Lightning's)."""
        yield from ()

    def __getattr__(self, name: str) -> Any:
        """Any other method a tracker has (``log_image``, ``log_text``...) does nothing."""
        if name.startswith("__"):
            raise AttributeError(name)

        def method(*args: Any, **kwargs: Any) -> None:
            return None

        return method
