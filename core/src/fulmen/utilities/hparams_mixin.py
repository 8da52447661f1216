"""Lightning's ``HyperparametersMixin``: ``save_hyperparameters`` / ``hparams`` /
``hparams_initial`` for any class (a callback, a dataset, a config object). ``fulmen.Module`` and
``fulmen.DataModule`` have their own; ``isinstance`` answers True for them too, as Lightning's
``LightningModule`` and ``LightningDataModule`` are ``HyperparametersMixin``s."""

from __future__ import annotations

import copy
import inspect
import types
from abc import ABCMeta
from argparse import Namespace
from collections.abc import MutableMapping, Sequence
from typing import Any

from fulmen.hparams import AttributeDict, HasHyperparameters

__all__ = ["HyperparametersMixin"]

_PRIMITIVE_TYPES = (bool, int, float, str)


class HyperparametersMixin(metaclass=ABCMeta):
    """Inherit it and call ``self.save_hyperparameters()`` in ``__init__``."""

    __jit_unused_properties__: list[str] = ["hparams", "hparams_initial"]

    def __init__(self) -> None:
        super().__init__()
        self._log_hyperparams = False

    @classmethod
    def __subclasshook__(cls, other: type) -> Any:
        if cls is HyperparametersMixin and issubclass(other, HasHyperparameters):
            return True
        return NotImplemented

    def save_hyperparameters(self, *args: Any, ignore: Sequence[str] | str | None = None,
                             frame: types.FrameType | None = None, logger: bool = True) -> None:
        """Record the ``__init__`` arguments (all, those named, or the one dict/Namespace
        given) in ``self.hparams``; ``logger=False`` keeps them from the loggers."""
        from fulmen.utilities.parsing import save_hyperparameters

        self._log_hyperparams = logger
        if frame is None:
            current = inspect.currentframe()
            frame = current.f_back if current is not None else None
        save_hyperparameters(self, *args, ignore=ignore, frame=frame)

    @property
    def hparams(self) -> AttributeDict | MutableMapping[str, Any]:
        """The recorded hyper-parameters."""
        if not hasattr(self, "_hparams"):
            self._hparams: AttributeDict | MutableMapping[str, Any] = AttributeDict()
        return self._hparams

    @property
    def hparams_initial(self) -> AttributeDict:
        """A copy of the hyper-parameters as first recorded."""
        return AttributeDict(copy.deepcopy(getattr(self, "_hparams_initial", {})))

    def remove_ignored_hparams(self, ignore_list: list[str]) -> None:
        """Drop hyper-parameters a base class recorded."""
        for key in ignore_list:
            self.hparams.pop(key, None)

    def _set_hparams(self, hp: MutableMapping[str, Any] | Namespace) -> None:
        hp = _as_hparams(hp)
        if isinstance(hp, dict) and isinstance(self.hparams, dict):
            self.hparams.update(hp)
        else:
            self._hparams = hp

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
        obj._hparams_initial = copy.deepcopy(obj.hparams)


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
