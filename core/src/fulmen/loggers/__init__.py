"""Loggers: where logged metrics and hyper-parameters go. Every logger is a plugin of the
``logger`` kind (``fulmen plugins`` lists them): ``csv`` and ``tensorboard`` come with fulmen,
``wandb``, ``mlflow`` and ``comet`` with ``fulmen[wandb]``, ``fulmen[mlflow]``,
``fulmen[comet]``, others with their own packages.

``fulmen.loggers.WandbLogger``, ``MLFlowLogger`` and ``CometLogger`` (Lightning's names) are the
classes of the installed plugins, imported on first access; the tracker's own library is
imported only when such a logger is constructed. Without the plugin the name still imports
(:mod:`fulmen.loggers.missing_tracker`) and constructing it says what to install.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fulmen.api.logger import Logger
from fulmen.errors import ConfigurationError
from fulmen.loggers.csv import CSVLogger
from fulmen.loggers.dummy import DummyLogger

__all__ = ["CSVLogger", "CometLogger", "DummyLogger", "Logger", "MLFlowLogger",
           "TensorBoardLogger", "WandbLogger", "resolve_loggers"]

#: Lightning's class names of the trackers -> the registered logger name that provides them
TRACKER_CLASSES = {"TensorBoardLogger": "tensorboard", "WandbLogger": "wandb",
                   "MLFlowLogger": "mlflow", "CometLogger": "comet"}


def __getattr__(name: str) -> Any:
    if name in TRACKER_CLASSES:  # the plugin's class; its module imports no tracker library
        from fulmen.kernel.manager import get_plugin_manager

        catalog = get_plugin_manager().catalog()
        entry = catalog.find("logger", TRACKER_CLASSES[name])
        if entry is None:  # imports, and constructing it says what to install (as Lightning)
            from fulmen.loggers.missing_tracker import missing_tracker_class

            return missing_tracker_class(name)
        return entry.record.load()
    raise AttributeError(f"module 'fulmen.loggers' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def tensorboard_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("tensorboard") is not None


def resolve_loggers(logger: Any, root: str, argument: str = "logger") -> list[Logger]:
    """``True``: TensorBoard when installed, else CSV; ``False``/``None``: none; else a registered
    name, a ``Logger``, a ``{"class_path": ..., "init_args": ...}`` mapping (``class_path``: a
    registered name or ``package.module.Class``), or any iterable of them (as Lightning)."""
    if logger is True:
        return default_loggers(root, argument)
    if logger in (False, None):
        return []
    # one logger, or any iterable of them (a list, a tuple, a generator, Hydra's ListConfig)
    items = [logger] if isinstance(logger, Logger | str | bytes | Mapping) or \
        not isinstance(logger, Iterable) else list(logger)
    out: list[Logger] = []
    for item in items:
        if isinstance(item, Logger):
            out.append(item)
        elif isinstance(item, str):
            out.append(by_name(item, root, {}, argument))
        elif isinstance(item, Mapping) and "class_path" in item:
            out.append(by_class_path(item, root, argument))
        else:
            given = f"{argument}={item!r} ({type(item).__name__})" if item is logger else \
                f"{argument}={logger!r}: the entry {item!r} ({type(item).__name__}) is not a logger"
            raise ConfigurationError(
                f"{given}; use True, False, a "
                "registered logger name (see `fulmen plugins`), a fulmen.loggers.Logger, a "
                "{'class_path': ..., 'init_args': {...}} mapping, or a list of these")
    return out


def default_loggers(root: str, argument: str) -> list[Logger]:
    """``logger=True`` (the default): ``tensorboard`` when it and its package are there, else
    ``csv``; none (with a warning saying why) when neither logger plugin is active."""
    from fulmen.kernel.manager import get_plugin_manager

    catalog = get_plugin_manager().catalog()
    for name in ("tensorboard", "csv"):
        entry = catalog.find("logger", name)
        if entry is not None and not entry.record.missing():
            return [by_name(name, root, {}, argument)]
    from fulmen.utilities.rank_zero import rank_zero_warn

    why = catalog.unavailable("logger", "csv", argument)
    rank_zero_warn(f"{argument}=True: no default logger, so nothing is logged "
                   f"({why or 'the csv logger is not registered'}); pass logger=False to say so, "
                   "or a logger")
    return []


def by_name(name: str, root: str, init_args: Mapping[str, Any], argument: str) -> Logger:
    """The logger a registered name (or alias) selects, built with ``for_root_dir``."""
    from fulmen.kernel.manager import get_plugin_manager

    record = get_plugin_manager().catalog().select("logger", name, argument).record
    missing = record.missing()
    if missing:
        how = f"; {record.install}" if record.install else ""
        raise ConfigurationError(f"{argument}: logger {name!r} needs {', '.join(missing)}, "
                                 f"which is not installed{how}")
    try:
        logger: Logger = record.create(root, **init_args)
    except TypeError as exc:  # an argument the class does not take
        raise ConfigurationError(f"{argument}: logger {name!r} ({record.target_path}) with "
                                 f"{dict(init_args)!r}: {exc}") from exc
    return logger


def by_class_path(item: Mapping[str, Any], root: str, argument: str) -> Logger:
    """``{"class_path": "mlflow" or "pkg.mod.Class", "init_args": {...}}`` (LightningCLI's)."""
    path, init_args = str(item["class_path"]), dict(item.get("init_args") or {})
    unknown = sorted(set(item) - {"class_path", "init_args"})
    if unknown:
        raise ConfigurationError(f"{argument}: {dict(item)!r} has keys {unknown}; a logger "
                                 "entry has class_path and init_args only")
    if "." not in path and ":" not in path:
        return by_name(path, root, init_args, argument)
    from fulmen.kernel.records import load_target

    target = path if ":" in path else "{}:{}".format(*path.rsplit(".", 1))
    cls = load_target(target, f"{argument} class_path")
    if not issubclass(cls, Logger):
        raise ConfigurationError(f"{argument}: class_path {path!r} is not a "
                                 "fulmen.loggers.Logger subclass")
    try:
        return cls(**init_args)
    except TypeError as exc:
        raise ConfigurationError(f"{argument}: {path}({', '.join(init_args)}): {exc}") from exc
