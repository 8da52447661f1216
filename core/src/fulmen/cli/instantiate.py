"""Lightning's CLI helpers for building objects from a config: ``instantiate_class`` (a
``{"class_path": ..., "init_args": ...}`` dict, after positional arguments) and
``instantiate_module`` (a class and its init arguments, checked by jsonargparse)."""

from __future__ import annotations

import importlib
from typing import Any, TypeVar

__all__ = ["instantiate_class", "instantiate_module"]

ModuleType = TypeVar("ModuleType")


def instantiate_class(args: Any | tuple[Any, ...], init: dict[str, Any]) -> Any:
    """``init["class_path"]`` built with ``*args`` and ``init["init_args"]`` (a non-tuple
    ``args`` is one positional argument): how a config's optimizer gets its parameters."""
    if not isinstance(args, tuple):
        args = (args,)
    module, _, name = init["class_path"].rpartition(".")
    return getattr(importlib.import_module(module), name)(*args, **init.get("init_args", {}))


def instantiate_module(class_type: type[ModuleType], config: dict[str, Any]) -> ModuleType:
    """A ``class_type`` (or, with ``"_class_path"`` in ``config``, the subclass it names) built
    from ``config``'s arguments, checked against the signature by jsonargparse."""
    from jsonargparse import ArgumentParser

    parser = ArgumentParser(exit_on_error=False)
    if "_class_path" in config:
        parser.add_subclass_arguments(class_type, "module", fail_untyped=False)
        config = {"class_path": config["_class_path"],
                  "dict_kwargs": {k: v for k, v in config.items() if k != "_class_path"}}
    else:
        parser.add_class_arguments(class_type, "module", fail_untyped=False)
    built = parser.instantiate_classes(parser.parse_object({"module": config}))
    module: ModuleType = built.module
    return module
