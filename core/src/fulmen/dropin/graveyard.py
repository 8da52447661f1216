"""Lightning's removed precision names (``lightning.pytorch._graveyard``): ``PrecisionPlugin``,
``MixedPrecisionPlugin``... Each warns that it is deprecated (showing the current name) and
then is the current class, as in Lightning; ``LightningDoublePrecisionModule`` is Lightning's
deprecated float64 wrapper."""

from __future__ import annotations

from typing import Any

import torch

from fulmen.api import Precision
from fulmen.dropin import unavailable
from fulmen.dropin.precision_names import DeepSpeedPrecision, FSDPPrecision
from fulmen.errors import FulmenDeprecationWarning
from fulmen.utilities.apply_func import apply_to_collection
from fulmen.utilities.rank_zero import rank_zero_warn
from fulmen_precision import HalfPrecision, MixedPrecision, Precision64

__all__ = ["BitsandbytesPrecisionPlugin", "DeepSpeedPrecisionPlugin", "DoublePrecisionPlugin",
           "FSDPMixedPrecisionPlugin", "FSDPPrecisionPlugin", "HalfPrecisionPlugin",
           "LightningDoublePrecisionModule", "MixedPrecisionPlugin", "PrecisionPlugin",
           "TransformerEnginePrecisionPlugin", "XLAPrecisionPlugin"]


def _warn(old: str, new: str) -> None:
    rank_zero_warn(f"The `{old}` is deprecated. Use "
                   f"`lightning.pytorch.plugins.precision.{new}` instead.",
                   category=FulmenDeprecationWarning)


class PrecisionPlugin(Precision):
    """Deprecated: ``Precision``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _warn(type(self).__name__, "Precision")
        super().__init__(*args, **kwargs)


class MixedPrecisionPlugin(MixedPrecision):
    """Deprecated: ``MixedPrecision``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _warn(type(self).__name__, "MixedPrecision")
        super().__init__(*args, **kwargs)


class DoublePrecisionPlugin(Precision64):
    """Deprecated: ``DoublePrecision``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _warn(type(self).__name__, "DoublePrecision")
        super().__init__(*args, **kwargs)


class HalfPrecisionPlugin(HalfPrecision):
    """Deprecated: ``HalfPrecision``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _warn(type(self).__name__, "HalfPrecision")
        super().__init__(*args, **kwargs)


class FSDPPrecisionPlugin(FSDPPrecision):
    """Deprecated: ``FSDPPrecision``."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        _warn(cls.__name__, "FSDPPrecision")
        return FSDPPrecision(*args, **kwargs)


class FSDPMixedPrecisionPlugin(FSDPPrecision):
    """Deprecated: ``FSDPPrecision`` (Lightning's signature: ``precision, device, scaler``)."""

    def __new__(cls, precision: str, device: str = "", scaler: Any = None) -> Any:
        _warn(cls.__name__, "FSDPPrecision")
        return FSDPPrecision(precision, scaler)


class DeepSpeedPrecisionPlugin(DeepSpeedPrecision):
    """Deprecated: ``DeepSpeedPrecision``."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        _warn(cls.__name__, "DeepSpeedPrecision")
        return DeepSpeedPrecision(*args, **kwargs)


class BitsandbytesPrecisionPlugin(unavailable.BitsandbytesPrecision):
    """Deprecated: ``BitsandbytesPrecision``."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        _warn(cls.__name__, "BitsandbytesPrecision")
        return super().__new__(cls, *args, **kwargs)


class TransformerEnginePrecisionPlugin(unavailable.TransformerEnginePrecision):
    """Deprecated: ``TransformerEnginePrecision``."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        _warn(cls.__name__, "TransformerEnginePrecision")
        return super().__new__(cls, *args, **kwargs)


class XLAPrecisionPlugin(unavailable.XLAPrecision):
    """Deprecated: ``XLAPrecision``."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        _warn(cls.__name__, "XLAPrecision")
        return super().__new__(cls, *args, **kwargs)


def _to_double(collection: Any) -> Any:
    return apply_to_collection(collection, torch.Tensor,
                               lambda t: t.double() if torch.is_floating_point(t) else t)


class LightningDoublePrecisionModule(torch.nn.Module):
    """Deprecated: wraps a module so the floating inputs of ``forward`` and the ``*_step``
    methods are float64 (convert inputs with the precision plugin's ``convert_input``)."""

    def __init__(self, pl_module: torch.nn.Module) -> None:
        super().__init__()
        rank_zero_warn(f"The `{type(self).__name__}` is deprecated and no longer needed. Convert "
                       "the inputs to the `*_step` methods directly using "
                       "`trainer.precision_plugin.convert_input(...)`.",
                       category=FulmenDeprecationWarning)
        self.module = pl_module

    def training_step(self, *args: Any, **kwargs: Any) -> Any:
        step: Any = self.module.training_step
        return step(*_to_double(args), **_to_double(kwargs))

    def validation_step(self, *args: Any, **kwargs: Any) -> Any:
        step: Any = self.module.validation_step
        return step(*_to_double(args), **_to_double(kwargs))

    def test_step(self, *args: Any, **kwargs: Any) -> Any:
        step: Any = self.module.test_step
        return step(*_to_double(args), **_to_double(kwargs))

    def predict_step(self, *args: Any, **kwargs: Any) -> Any:
        step: Any = self.module.predict_step
        return step(*_to_double(args), **_to_double(kwargs))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*_to_double(args), **_to_double(kwargs))
