"""Lightning's ``lightning.pytorch.utilities.parsing``: reading constructor arguments from a
frame, and the ``lightning_*attr`` helpers the tuner uses to find ``lr`` / ``batch_size`` on a
module, its ``hparams`` or its datamodule (``save_hyperparameters`` for any object is in
:mod:`fulmen.utilities.hparams_mixin`)."""

from __future__ import annotations

import inspect
import pickle
import types
from collections.abc import MutableMapping
from typing import Any

from fulmen.hparams import AttributeDict
from fulmen.utilities.rank_zero import rank_zero_warn

__all__ = ["AttributeDict", "clean_namespace", "collect_init_args", "get_init_args",
           "is_picklable", "lightning_getattr", "lightning_hasattr", "lightning_setattr",
           "parse_class_init_keys"]


def is_picklable(obj: object) -> bool:
    """Whether ``pickle.dumps(obj)`` works."""
    try:
        pickle.dumps(obj)
        return True
    except (pickle.PickleError, AttributeError, RuntimeError, TypeError):
        return False


def clean_namespace(hparams: MutableMapping[str, Any]) -> None:
    """Remove (with a warning each) the entries of ``hparams`` that cannot be pickled."""
    for key in [k for k, v in hparams.items() if not is_picklable(v)]:
        rank_zero_warn(f"Attribute '{key}' removed from hparams because it cannot be pickled. You "
                       "can suppress this warning by setting "
                       f"`self.save_hyperparameters(ignore=['{key}'])`.")
        del hparams[key]


def parse_class_init_keys(cls: type) -> tuple[str, str | None, str | None]:
    """The names of ``self``, ``*args`` and ``**kwargs`` in ``cls.__init__`` (None when absent).

    >>> class Model:
    ...     def __init__(self, hparams, *my_args, anykw=42, **my_kwargs):
    ...         pass
    >>> parse_class_init_keys(Model)
    ('self', 'my_args', 'my_kwargs')
    """
    params = list(inspect.signature(cls.__init__).parameters.values())  # type: ignore[misc]

    def first(kind: Any) -> str | None:
        return next((p.name for p in params if p.kind == kind), None)

    return params[0].name, first(inspect.Parameter.VAR_POSITIONAL), \
        first(inspect.Parameter.VAR_KEYWORD)


def _init_args(frame: types.FrameType) -> tuple[Any, dict[str, Any]]:
    local_vars = frame.f_locals
    if "__class__" not in local_vars or frame.f_code.co_name != "__init__":
        return None, {}
    cls = local_vars["__class__"]
    parameters = inspect.signature(cls.__init__).parameters
    self_var, args_var, kwargs_var = parse_class_init_keys(cls)
    excluded = {n for n in (self_var, args_var, kwargs_var) if n} | \
        {"__class__", "frame", "frame_args"}
    local_args = {k: local_vars[k] for k in parameters if k in local_vars}
    if kwargs_var:
        local_args.update(local_args.get(kwargs_var, {}))
    return local_vars.get(self_var), {k: v for k, v in local_args.items() if k not in excluded}


def get_init_args(frame: types.FrameType) -> dict[str, Any]:
    """The arguments of the ``__init__`` running in ``frame`` (``{}`` for another frame)."""
    return _init_args(frame)[1]


def collect_init_args(frame: types.FrameType, path_args: list[dict[str, Any]],
                      inside: bool = False, classes: tuple[type, ...] = ()
                      ) -> list[dict[str, Any]]:
    """The constructor arguments of each ``__init__`` up the inheritance chain from ``frame``,
    outermost (most specific class) last; only frames whose ``self`` is one of ``classes`` when
    given."""
    while isinstance(frame.f_back, types.FrameType):
        local_self, local_args = _init_args(frame)
        if "__class__" in frame.f_locals and (not classes or isinstance(local_self, classes)):
            path_args.append(local_args)
            inside = True
        elif inside:
            break
        frame = frame.f_back
    return path_args


def _datamodule(model: Any) -> Any:
    """The datamodule of the Trainer ``model`` is attached to; None when it is attached to
    none (or runs under a Lite, which has no datamodule)."""
    from fulmen.errors import FulmenError

    try:
        return model.trainer.datamodule
    except (FulmenError, AttributeError):
        return None


def _holders(model: Any, attribute: str) -> list[Any]:
    """Where ``attribute`` lives: the model, its hparams, the trainer's datamodule, its hparams
    (Lightning's order; the last one wins for reading)."""
    found: list[Any] = []
    for owner in (model, _datamodule(model)):
        if owner is None:
            continue
        if hasattr(owner, attribute):
            found.append(owner)
        hparams = getattr(owner, "hparams", None)
        if hparams is not None and attribute in hparams:
            found.append(hparams)
    return found


def _not_found(attribute: str) -> AttributeError:
    return AttributeError(f"{attribute} is neither stored in the model namespace nor the "
                          "`hparams` namespace/dict, nor the datamodule.")


def lightning_hasattr(model: Any, attribute: str) -> bool:
    """Whether ``attribute`` is on the model, its ``hparams``, or the trainer's datamodule (or
    its ``hparams``)."""
    return bool(_holders(model, attribute))


def lightning_getattr(model: Any, attribute: str) -> Any:
    """``attribute`` from the last of the places :func:`lightning_hasattr` looks; an
    ``AttributeError`` when none has it."""
    found = _holders(model, attribute)
    if not found:
        raise _not_found(attribute)
    holder = found[-1]
    return holder[attribute] if isinstance(holder, dict) else getattr(holder, attribute)


def lightning_setattr(model: Any, attribute: str, value: Any) -> None:
    """Set ``attribute`` everywhere :func:`lightning_hasattr` finds it; an ``AttributeError``
    when nowhere."""
    found = _holders(model, attribute)
    if not found:
        raise _not_found(attribute)
    for holder in found:
        if isinstance(holder, dict):
            holder[attribute] = value
        else:
            setattr(holder, attribute, value)
