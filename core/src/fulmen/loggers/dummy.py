"""Lightning's ``DummyLogger`` (accepts everything, records nothing: it stands in for the
configured loggers under ``fast_dev_run`` and in the tuner), ``DummyExperiment`` and
``merge_dicts``."""

from __future__ import annotations

import functools
import operator
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fulmen.api.logger import Logger, NoOpExperiment

__all__ = ["DummyExperiment", "DummyLogger", "merge_dicts"]

#: Lightning's name for the experiment object whose every attribute and call does nothing
DummyExperiment = NoOpExperiment


class DummyLogger(Logger):
    """Logs nothing; ``experiment`` is an object whose every attribute, call and item does
    nothing, so user code such as ``self.logger.experiment.add_image(...)`` runs unchanged under
    ``Trainer(fast_dev_run=...)`` (Lightning's ``DummyLogger``, which the Trainer puts in place of
    the configured loggers there)."""

    def __init__(self) -> None:
        super().__init__()
        self._experiment = DummyExperiment()

    @property
    def experiment(self) -> NoOpExperiment:
        return self._experiment

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


def merge_dicts(dicts: Sequence[Mapping[str, Any]], agg_key_funcs: Mapping[str, Any] | None = None,
                default_func: Callable[[Sequence[float]], float] = statistics.mean
                ) -> dict[str, Any]:
    """One dict from several: each key's values (None skipped) aggregated by its function in
    ``agg_key_funcs`` (nested dicts recursively) or ``default_func``.

    >>> merge_dicts([{'a': 1, 'b': {'c': 2}}, {'a': 3, 'b': {'c': 4}}], {'b': {'c': sum}})
    {'a': 2, 'b': {'c': 6}}
    """
    agg_key_funcs = agg_key_funcs or {}
    keys = list(functools.reduce(operator.or_, [set(d.keys()) for d in dicts]))
    out: dict[str, Any] = defaultdict(dict)
    for key in keys:
        fn = agg_key_funcs.get(key)
        values = [v for v in (d.get(key) for d in dicts) if v is not None]
        if isinstance(values[0], dict):
            out[key] = merge_dicts(values, fn, default_func)
        else:
            out[key] = (fn or default_func)(values)
    return dict(out)
