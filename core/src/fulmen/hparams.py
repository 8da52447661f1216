"""``save_hyperparameters``: record the arguments a module or datamodule was built with."""

from __future__ import annotations

import inspect
import types
from collections.abc import Iterable
from typing import Any


class AttributeDict(dict):
    """A dict whose keys are also attributes: ``hparams.lr`` is ``hparams["lr"]``."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError as exc:
            raise AttributeError(f"no hyper-parameter {key!r}; saved: {sorted(self)}") from exc

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value


class HasHyperparameters:
    """What records its constructor arguments in ``hparams`` (``fulmen.Module`` and
    ``fulmen.DataModule`` through ``save_hyperparameters``): a checkpoint stores a reference
    to such an object as its class and ``hparams`` (:mod:`fulmen.references`)."""

    #: False after ``save_hyperparameters(logger=False)``: the Trainer keeps them from the loggers
    _log_hyperparams: bool = True

    @property
    def hparams(self) -> AttributeDict:
        """The recorded constructor arguments (empty when none were saved)."""
        raise NotImplementedError


def init_arguments(frame: types.FrameType, owner: object) -> dict[str, Any]:
    """The arguments of the ``__init__`` running in ``frame`` (and its callers for the same
    object, so subclasses contribute theirs)."""
    collected: dict[str, Any] = {}
    current: types.FrameType | None = frame
    while current is not None:
        if current.f_code.co_name != "__init__" or current.f_locals.get("self") is not owner:
            break
        info = inspect.getargvalues(current)
        values = {name: info.locals[name] for name in info.args[1:]}
        if info.varargs and info.locals.get(info.varargs):
            values[info.varargs] = list(info.locals[info.varargs])
        if info.keywords:
            values.update(info.locals[info.keywords])
        collected = {**values, **collected}
        current = current.f_back
    return collected


def select(arguments: dict[str, Any], names: Iterable[str],
           ignore: Iterable[str]) -> dict[str, Any]:
    names, ignore = list(names), set(ignore)
    missing = [n for n in names if n not in arguments]
    if missing:
        from fulmen.errors import ConfigurationError

        raise ConfigurationError(f"save_hyperparameters{tuple(names)}: {missing} are not "
                                 f"arguments of __init__; its arguments are {sorted(arguments)}")
    chosen = {n: arguments[n] for n in names} if names else dict(arguments)
    return {k: v for k, v in chosen.items() if k not in ignore}


def as_mapping(value: Any) -> dict[str, Any]:
    """The hyper-parameters in one ``save_hyperparameters`` argument: a dict (or
    ``AttributeDict``) or an ``argparse.Namespace``."""
    import argparse

    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, argparse.Namespace):
        return dict(vars(value))
    from fulmen.errors import ConfigurationError

    raise ConfigurationError(f"save_hyperparameters({type(value).__name__}): give argument "
                             "names (strings), one dict or one argparse.Namespace")
