"""Finding a hyper-parameter the user named (``lr``, ``batch_size``) on the module, its
``hparams``, the datamodule or the datamodule's ``hparams``, as Lightning's tuner does."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from fulmen.errors import ConfigurationError

_MISSING = object()


def holders(module: Any, datamodule: Any, name: str) -> list[Any]:
    """Where ``name`` lives: the module, ``module.hparams``, the datamodule, its hparams."""
    found = []
    for owner in (module, datamodule):
        if owner is None:
            continue
        value = getattr(owner, name, _MISSING)
        if value is not _MISSING and not callable(value):
            found.append(owner)
        hparams = getattr(owner, "hparams", None)
        if isinstance(hparams, MutableMapping) and name in hparams:
            found.append(hparams)
    return found


def has(module: Any, datamodule: Any, name: str) -> bool:
    return bool(holders(module, datamodule, name))


def get(module: Any, datamodule: Any, name: str) -> Any:
    found = holders(module, datamodule, name)
    if not found:
        raise ConfigurationError(where_missing(name))
    last = found[-1]  # Lightning's precedence: the datamodule's value over the module's
    return last[name] if isinstance(last, MutableMapping) else getattr(last, name)


def set_(module: Any, datamodule: Any, name: str, value: Any) -> None:
    """Set ``name`` everywhere it lives."""
    found = holders(module, datamodule, name)
    if not found:
        raise ConfigurationError(where_missing(name))
    for holder in found:
        if isinstance(holder, MutableMapping):
            holder[name] = value
        else:
            setattr(holder, name, value)


def where_missing(name: str) -> str:
    return (f"Field {name} not found in `model`, `datamodule`, nor their `hparams` attributes: "
            f"add `self.{name}` (or save_hyperparameters() with a `{name}` argument) to the "
            "module or datamodule, or name the attribute you use")
