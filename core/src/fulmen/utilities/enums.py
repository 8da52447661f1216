"""Lightning's enums: ``GradClipAlgorithmType`` (``Trainer(gradient_clip_algorithm=)``) and the
string enum base ``LightningEnum`` (``lightning_utilities``' ``StrEnum``)."""

from __future__ import annotations

from lightning_utilities.core.enums import StrEnum as LightningEnum

__all__ = ["GradClipAlgorithmType", "Interval", "LightningEnum"]


class GradClipAlgorithmType(LightningEnum):
    """``"norm"``: clip the norm of all gradients together; ``"value"``: clip each value."""

    VALUE = "value"
    NORM = "norm"

    @staticmethod
    def supported_type(val: str) -> bool:
        return any(x.value == val for x in GradClipAlgorithmType)

    @staticmethod
    def supported_types() -> list[str]:
        return [x.value for x in GradClipAlgorithmType]


class Interval(LightningEnum):
    """When ``Timer`` checks the time (Lightning's ``lightning.pytorch.callbacks.timer.Interval``):
    after each ``"step"`` or each ``"epoch"``."""

    step = "step"
    epoch = "epoch"
