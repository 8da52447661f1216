"""Lightning's ``HyperparametersMixin``: ``save_hyperparameters`` / ``hparams`` /
``hparams_initial`` for any class (a callback, a dataset, a config object), and the
``save_hyperparameters(obj, ...)`` function behind it (Lightning's
``lightning.pytorch.utilities.parsing.save_hyperparameters``). ``fulmen.Module`` and
``fulmen.DataModule`` have their own; ``isinstance`` answers True for them too, as Lightning's
``LightningModule`` and ``LightningDataModule`` are ``HyperparametersMixin``s."""

from __future__ import annotations

import copy
import inspect
import types
from argparse import Namespace
from collections.abc import MutableMapping, Sequence
from dataclasses import fields, is_dataclass
from typing import Any

from fulmen.hparams import AttributeDict, HasHyperparameters
from fulmen.utilities.parsing import collect_init_args
from fulmen.utilities.rank_zero import rank_zero_warn
from fulmen.utilities.virtual_bases import AlsoMatches

__all__ = ["HyperparametersMixin", "save_hyperparameters"]

_PRIMITIVE_TYPES = (bool, int, float, str)


class HyperparametersMixin(AlsoMatches):
    """Inherit it and call ``self.save_hyperparameters()`` in ``__init__``."""

    __also__ = ("fulmen.hparams:HasHyperparameters",)
    __jit_unused_properties__: list[str] = ["hparams", "hparams_initial"]

    _hparams_name: str | None = None
    _hparams_initial: AttributeDict

    def __init__(self) -> None:
        super().__init__()
        self._log_hyperparams = False

    def save_hyperparameters(self, *args: Any, ignore: Sequence[str] | str | None = None,
                             frame: types.FrameType | None = None, logger: bool = True) -> None:
        """Record the ``__init__`` arguments (all, those named, or the one dict/Namespace
        given) in ``self.hparams``; ``logger=False`` keeps them from the loggers."""
        self._log_hyperparams = logger
        if frame is None:
            current = inspect.currentframe()
            frame = current.f_back if current is not None else None
        save_hyperparameters(self, *args, ignore=ignore, frame=frame)

    @property
    def hparams(self) -> AttributeDict | MutableMapping[str, Any]:
        """The recorded hyper-parameters."""
        hparams = vars(self).get("_hparams")
        if hparams is None:  # save_hyperparameters not called (yet)
            hparams = self._hparams = AttributeDict()
        return hparams

    @property
    def hparams_initial(self) -> AttributeDict:
        """A copy of the hyper-parameters as first recorded."""
        return AttributeDict(copy.deepcopy(getattr(self, "_hparams_initial", {})))

    def remove_ignored_hparams(self, ignore_list: list[str]) -> None:
        """Drop hyper-parameters a base class recorded."""
        for key in ignore_list:
            self.hparams.pop(key, None)

    def _set_hparams(self, hp: MutableMapping[str, Any] | Namespace) -> None:
        converted = _as_hparams(hp)
        if isinstance(converted, dict) and isinstance(self.hparams, dict):
            self.hparams.update(converted)
        else:
            self._hparams = converted

    @staticmethod
    def store(obj: Any, hp: Any, name: str | None, ignore: list[str]) -> None:
        """Record ``hp`` as ``obj``'s hyper-parameters (what ``save_hyperparameters`` found):
        a subclass of this mixin keeps them and a deep copy as ``hparams_initial``; a fulmen
        Module or DataModule gets them in its ``hparams``."""
        if isinstance(obj, HasHyperparameters):
            obj.hparams.update({k: v for k, v in _as_hparams(hp).items() if k not in ignore})
            return
        if not isinstance(obj, HyperparametersMixin):
            from fulmen.errors import ConfigurationError

            raise ConfigurationError(f"save_hyperparameters({type(obj).__name__}): the object "
                                     "must be a HyperparametersMixin, a fulmen Module or a "
                                     "DataModule")
        obj._hparams_name = name
        obj._set_hparams(hp)
        obj.remove_ignored_hparams(ignore)
        obj._hparams_initial = AttributeDict(copy.deepcopy(dict(obj.hparams)))


def _as_hparams(hp: Any) -> Any:
    if isinstance(hp, Namespace):
        hp = vars(hp)
    if isinstance(hp, dict):
        return AttributeDict(hp)
    if isinstance(hp, _PRIMITIVE_TYPES):
        raise ValueError(f"Primitives {_PRIMITIVE_TYPES} are not allowed.")
    if not isinstance(hp, MutableMapping | Namespace):
        raise ValueError(f"Unsupported config type of {type(hp)}.")
    return hp


def save_hyperparameters(obj: Any, *args: Any, ignore: Sequence[str] | str | None = None,
                         frame: types.FrameType | None = None,
                         given_hparams: dict[str, Any] | None = None) -> None:
    """Lightning's function behind ``save_hyperparameters``: record in ``obj.hparams`` the
    ``__init__`` arguments found from ``frame`` (the caller's by default), all or those named
    in ``args``, or the one dict/Namespace given; a dataclass gives its init fields.
    ``obj`` is a :class:`~fulmen.utilities.hparams_mixin.HyperparametersMixin` (or a fulmen
    Module/DataModule, whose ``hparams`` is updated)."""
    if len(args) == 1 and not isinstance(args[0], str) and not args[0]:
        return  # an empty container
    if frame is None:
        current = inspect.currentframe()
        frame = current.f_back if current is not None else None
    if not isinstance(frame, types.FrameType):
        raise AttributeError("There is no `frame` available while being required.")
    if given_hparams is not None:
        init_args = dict(given_hparams)
    elif is_dataclass(obj):
        init_args = {f.name: getattr(obj, f.name) for f in fields(obj) if f.init}
    else:
        init_args = {}
        for local_args in collect_init_args(frame, [], classes=(HyperparametersMixin,)):
            init_args.update(local_args)
    if ignore is None:
        ignored: list[str] = []
    elif isinstance(ignore, str):
        ignored = [ignore]
    else:
        ignored = list({arg for arg in ignore if isinstance(arg, str)})
    init_args = {k: v for k, v in init_args.items() if k not in ignored}
    name: str | None
    if not args:
        hparams: Any = init_args
        name = "kwargs" if hparams else None
    else:
        non_str = [arg for arg in args if not isinstance(arg, str)]
        if len(non_str) == 1:
            hparams = non_str[0]
            name = next((k for k, v in init_args.items() if v == hparams), None)
        else:
            hparams = {arg: init_args[arg] for arg in args if isinstance(arg, str)}
            name = "kwargs"
    HyperparametersMixin.store(obj, hparams, name, ignored)
    for key, value in obj.hparams.items():
        if _is_module(value):
            rank_zero_warn(f"Attribute {key!r} is an instance of `nn.Module` and is already saved "
                           "during checkpointing. It is recommended to ignore them using "
                           f"`self.save_hyperparameters(ignore=[{key!r}])`.")


def _is_module(value: Any) -> bool:
    import torch

    return isinstance(value, torch.nn.Module)
