"""Lightning's precision plugins of FSDP and DeepSpeed. In fulmen those strategies read their
dtypes from the Trainer's (or Lite's) precision plugin, so ``FSDPPrecision("bf16-mixed")`` and
``DeepSpeedPrecision("16-mixed")`` give the precision plugin that name selects
(``Trainer(plugins=[FSDPPrecision("bf16-mixed")])`` works as in Lightning); the object is
that plugin, not an instance of these classes (see docs/migrating.md)."""

from __future__ import annotations

from typing import Any

from fulmen.api import Precision

__all__ = ["DeepSpeedPrecision", "FSDPPrecision", "by_name"]


def by_name(precision: str | int, owner: str, scaler: Any = None) -> Precision:
    """The precision plugin ``precision`` names (``"bf16-mixed"``, ``"16-true"``...), as
    ``Trainer(precision=...)`` would build it; ``scaler`` goes to a plugin that scales."""
    from fulmen.kernel.manager import get_plugin_manager

    entry = get_plugin_manager().catalog().select("precision", precision,
                                                  argument=f"{owner}(precision=)")
    plugin: Precision = entry.create(**({"scaler": scaler} if scaler is not None else {}))
    return plugin


class FSDPPrecision(Precision):
    """``FSDPPrecision(precision, scaler=None)``: the precision plugin ``precision`` names."""

    def __new__(cls, precision: str | int = "32-true", scaler: Any = None) -> Any:
        return by_name(precision, cls.__name__, scaler)


class DeepSpeedPrecision(Precision):
    """``DeepSpeedPrecision(precision)``: the precision plugin ``precision`` names."""

    def __new__(cls, precision: str | int = "32-true") -> Any:
        return by_name(precision, cls.__name__)
