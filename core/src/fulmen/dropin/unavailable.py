"""Lightning's names for hardware and libraries fulmen does not drive: TPUs through
``torch_xla`` (``XLAAccelerator``, ``XLAStrategy``, ``XLAPrecision``...), ``bitsandbytes``
quantization, NVIDIA Transformer Engine, the ``litlogger`` tracker and Lightning's model serving
check. They behave as Lightning's do where the library is missing: the availability answers
are False or zero, and constructing one is a :class:`~fulmen.errors.MissingDependencyError`
(a ``ModuleNotFoundError``, as Lightning raises) that names what is missing and what to use.
``NeptuneLogger`` raises ``RuntimeError`` as in Lightning 2.6 (Neptune was shut down).

Each class derives from the fulmen base class of its kind, so ``isinstance`` checks against
``Accelerator``, ``Strategy``, ``Precision``... answer as in Lightning."""

from __future__ import annotations

import importlib.util
from typing import Any, NoReturn

from fulmen.api import Accelerator, ClusterEnvironment, Precision, Strategy, TorchCheckpointIO
from fulmen.api.logger import Logger
from fulmen.errors import ConfigurationError, MissingDependencyError
from fulmen.profilers.base import Profiler

__all__ = ["BitsandbytesPrecision", "LitLogger", "NeptuneLogger", "ServableModuleValidator",
           "SingleDeviceXLAStrategy", "SingleTPUStrategy", "TPUAccelerator",
           "TransformerEnginePrecision", "XLAAccelerator", "XLACheckpointIO", "XLAEnvironment",
           "XLAFSDPStrategy", "XLAPrecision", "XLAProfiler", "XLAStrategy"]


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _xla_missing(owner: str) -> NoReturn:
    state = "is not installed here" if not _installed("torch_xla") else "is installed, but"
    raise MissingDependencyError(
        f"{owner} runs on TPUs through the torch_xla library, which {state} fulmen has no XLA "
        "plugin to drive it: train with accelerator='cpu', 'cuda' or 'mps', or install a plugin "
        "package that registers an XLA accelerator (`fulmen plugins` lists what is installed)",
        name="torch_xla")


class _NeedsXLA:
    """Constructing one is an error (before the base class's abstract-method check)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        _xla_missing(cls.__name__)


class XLAAccelerator(_NeedsXLA, Accelerator):
    """Lightning's TPU accelerator: never available under fulmen."""

    name = "xla"
    device_type = "xla"

    @classmethod
    def is_available(cls) -> bool:
        return False

    @classmethod
    def auto_device_count(cls) -> int:
        return 0

    @classmethod
    def availability_note(cls) -> str:
        return "fulmen has no XLA (TPU) plugin"


class TPUAccelerator(XLAAccelerator):
    """Lightning's legacy name of :class:`XLAAccelerator`."""

    name = "tpu"


class XLAEnvironment(_NeedsXLA, ClusterEnvironment):
    """Lightning's cluster environment of a TPU pod."""

    @staticmethod
    def detect() -> bool:
        return False


class XLACheckpointIO(_NeedsXLA, TorchCheckpointIO):
    """Lightning's checkpoint writer for TPUs."""


class XLAPrecision(_NeedsXLA, Precision):
    """Lightning's precision plugin for TPUs."""


class XLAStrategy(_NeedsXLA, Strategy):
    """Lightning's multi-TPU strategy."""


class SingleDeviceXLAStrategy(_NeedsXLA, Strategy):
    """Lightning's one-TPU strategy."""


class SingleTPUStrategy(SingleDeviceXLAStrategy):
    """Lightning's legacy name of :class:`SingleDeviceXLAStrategy`."""


class XLAFSDPStrategy(_NeedsXLA, Strategy):
    """Lightning's fully sharded strategy on TPUs."""


class XLAProfiler(_NeedsXLA, Profiler):
    """Lightning's profiler of TPU runs."""


class BitsandbytesPrecision(Precision):
    """Lightning's quantization of ``nn.Linear`` layers through ``bitsandbytes``: fulmen has
    no counterpart; constructing it says so."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        raise MissingDependencyError(
            "BitsandbytesPrecision quantizes Linear layers with the bitsandbytes library, "
            f"{'which is not installed here' if not _installed('bitsandbytes') else 'which'} "
            "fulmen has no precision plugin for: quantize the model yourself (e.g. "
            "bitsandbytes.nn.Linear8bitLt) and train with precision='bf16-mixed' or '16-mixed'",
            name="bitsandbytes")


class TransformerEnginePrecision(Precision):
    """Lightning's FP8 training through NVIDIA Transformer Engine: fulmen has no counterpart;
    constructing it says so."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        raise MissingDependencyError(
            "TransformerEnginePrecision trains in FP8 with NVIDIA's transformer_engine, "
            f"{'which is not installed here' if not _installed('transformer_engine') else 'which'}"
            " fulmen has no precision plugin for: use precision='bf16-mixed', or call "
            "transformer_engine's fp8_autocast in your module", name="transformer_engine")


class LitLogger(Logger):
    """Lightning's logger for lightning.ai's experiment tracking (``litlogger``): fulmen has no
    logger plugin for it; constructing it says so."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        raise MissingDependencyError(
            "LitLogger logs to lightning.ai through the litlogger library, "
            f"{'which is not installed here' if not _installed('litlogger') else 'which'} fulmen "
            "has no logger plugin for: use CSVLogger, TensorBoardLogger, WandbLogger, "
            "MLFlowLogger or CometLogger (`fulmen plugins` lists the installed loggers)",
            name="litlogger")


class NeptuneLogger:
    """Lightning 2.6's ``NeptuneLogger``: Neptune has been shut down; constructing it raises
    ``RuntimeError``, as in Lightning."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("NeptuneLogger is no longer supported. Neptune has been sunset.\n\n"
                           "Please migrate to another logger: fulmen serves CSVLogger, "
                           "TensorBoardLogger, WandbLogger, MLFlowLogger and CometLogger.\n")


class ServableModuleValidator:
    """Lightning's check that a ``ServableModule`` serves requests (it starts a FastAPI server
    at the start of fit): fulmen has no counterpart; constructing it says so."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        missing = [m for m in ("fastapi", "uvicorn") if not _installed(m)]
        if missing:
            raise MissingDependencyError(
                f"ServableModuleValidator needs {' and '.join(missing)}, which "
                f"{'is' if len(missing) == 1 else 'are'} not installed here; fulmen has no "
                "counterpart either: test your ServableModule's serve_step yourself",
                name=missing[0])
        raise ConfigurationError(
            "ServableModuleValidator (Lightning's serving check) has no fulmen counterpart: "
            "call your ServableModule's configure_payload / serve_step in a test instead")
