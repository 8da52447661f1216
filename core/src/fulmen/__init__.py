"""fulmen: hardware-agnostic PyTorch training on a minimal pluggy kernel.

``import fulmen`` is cheap: it imports neither torch nor any plugin. Every public name below is
imported on first access (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fulmen.lazy import lazy_exports
from fulmen.version import __version__

_EXPORTS: dict[str, str] = {
    "Trainer": "fulmen.trainer",
    "Module": "fulmen.module",
    "DataModule": "fulmen.datamodule",
    "Callback": "fulmen.callbacks.base",
    "seed_everything": "fulmen.seed",
    "Lite": "fulmen.lite",
    "Fabric": "fulmen.lite",
    "hookimpl": "fulmen.kernel.hookspecs",
    "hookspec": "fulmen.kernel.hookspecs",
    "Accelerator": "fulmen.api",
    "Strategy": "fulmen.api",
    "Precision": "fulmen.api",
    "ClusterEnvironment": "fulmen.api",
    "Launcher": "fulmen.api",
    "CheckpointIO": "fulmen.api",
    "AcceleratorSpec": "fulmen.kernel.records",
    "StrategySpec": "fulmen.kernel.records",
    "PrecisionSpec": "fulmen.kernel.records",
    "EnvironmentSpec": "fulmen.kernel.records",
    "LoggerSpec": "fulmen.kernel.records",
    "NoticeSpec": "fulmen.kernel.records",
    "FulmenError": "fulmen.errors",
    "ConfigurationError": "fulmen.errors",
    "PluginError": "fulmen.errors",
    "PluginWarning": "fulmen.errors",
    "FulmenDeprecationWarning": "fulmen.errors",
    "Selection": "fulmen.kernel.compose",
    "get_plugin_manager": "fulmen.kernel.manager",
    "reload_plugins": "fulmen.kernel.manager",
}

__all__ = [
    "Trainer",
    "Module",
    "DataModule",
    "Callback",
    "seed_everything",
    "Lite",
    "Fabric",
    "hookimpl",
    "hookspec",
    "Accelerator",
    "Strategy",
    "Precision",
    "ClusterEnvironment",
    "Launcher",
    "CheckpointIO",
    "AcceleratorSpec",
    "StrategySpec",
    "PrecisionSpec",
    "EnvironmentSpec",
    "LoggerSpec",
    "NoticeSpec",
    "FulmenError",
    "ConfigurationError",
    "PluginError",
    "PluginWarning",
    "FulmenDeprecationWarning",
    "Selection",
    "get_plugin_manager",
    "reload_plugins",
    "__version__",
]


_SUBMODULES = {"callbacks", "loggers", "compat", "utilities"}  # ``fulmen.callbacks.X``...
_lazy_getattr, __dir__ = lazy_exports(__name__, _EXPORTS)


def __getattr__(name: str) -> object:
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"fulmen.{name}")
    return _lazy_getattr(name)


if TYPE_CHECKING:
    from fulmen.api import (
        Accelerator,
        CheckpointIO,
        ClusterEnvironment,
        Launcher,
        Precision,
        Strategy,
    )
    from fulmen.callbacks.base import Callback
    from fulmen.datamodule import DataModule
    from fulmen.errors import (
        ConfigurationError,
        FulmenDeprecationWarning,
        FulmenError,
        PluginError,
        PluginWarning,
    )
    from fulmen.kernel.composed import Selection
    from fulmen.kernel.hookspecs import hookimpl, hookspec
    from fulmen.kernel.manager import get_plugin_manager, reload_plugins
    from fulmen.kernel.records import (
        AcceleratorSpec,
        EnvironmentSpec,
        LoggerSpec,
        NoticeSpec,
        PrecisionSpec,
        StrategySpec,
    )
    from fulmen.lite import Fabric, Lite
    from fulmen.module import Module
    from fulmen.seed import seed_everything
    from fulmen.trainer import Trainer
