"""Lightning's tracker loggers (``WandbLogger``, ``MLFlowLogger``, ``CometLogger``) where
fulmen's plugin for the tracker is not installed (or is disabled). As in Lightning, where the
class imports without its library and fails only when created, these import (so a module
that names them in a signature or an ``isinstance`` check loads), and constructing one is a
:class:`~fulmen.errors.MissingDependencyError` (a ``ModuleNotFoundError``) that names the
plugin package and the tracker library to install, and why the plugin is not active."""

from __future__ import annotations

from typing import Any

from fulmen.api.logger import Logger
from fulmen.errors import MissingDependencyError

__all__ = ["CometLogger", "MLFlowLogger", "MissingTrackerLogger", "WandbLogger",
           "missing_tracker_class"]


class MissingTrackerLogger(Logger):
    """A tracker logger whose fulmen plugin is not active: constructing it raises."""

    #: the registered logger name the plugin provides, and the tracker's library
    plugin_name = ""
    library = ""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        from fulmen.kernel.manager import get_plugin_manager

        why = get_plugin_manager().catalog().unknown("logger", cls.plugin_name)
        raise MissingDependencyError(
            f"{cls.__name__} needs fulmen's {cls.plugin_name!r} logger plugin, which is not "
            f"active here: install it with `pip install fulmen[{cls.plugin_name}]` (it brings "
            f"the {cls.library!r} library), or use CSVLogger / TensorBoardLogger. ({why})",
            name=f"fulmen_{cls.plugin_name}")


class WandbLogger(MissingTrackerLogger):
    """Lightning's Weights & Biases logger; fulmen's ``wandb`` plugin is not active."""

    plugin_name, library = "wandb", "wandb"


class MLFlowLogger(MissingTrackerLogger):
    """Lightning's MLflow logger; fulmen's ``mlflow`` plugin is not active."""

    plugin_name, library = "mlflow", "mlflow"


class CometLogger(MissingTrackerLogger):
    """Lightning's Comet logger; fulmen's ``comet`` plugin is not active."""

    plugin_name, library = "comet", "comet_ml"


def missing_tracker_class(name: str) -> Any:
    """The stand-in class for Lightning's tracker logger class ``name``."""
    classes: dict[str, Any] = {"WandbLogger": WandbLogger, "MLFlowLogger": MLFlowLogger,
                               "CometLogger": CometLogger}
    return classes[name]
