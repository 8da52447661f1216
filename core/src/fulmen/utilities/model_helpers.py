"""``is_overridden`` (Lightning's ``lightning.pytorch.utilities.model_helpers.is_overridden``)."""

from __future__ import annotations


def is_overridden(method_name: str, instance: object | None = None,
                  parent: type | None = None) -> bool:
    """Whether ``instance``'s class overrides ``parent``'s ``method_name`` (``parent`` defaults to
    ``fulmen.Module``, ``fulmen.DataModule`` or ``fulmen.Callback``, whichever ``instance`` is).
    ``instance=None`` is False, as in Lightning; another object without ``parent`` is a
    ``ConfigurationError`` (Lightning: ``ValueError``, which it also is)."""
    from fulmen.callbacks.base import Callback
    from fulmen.datamodule import DataModule
    from fulmen.errors import ConfigurationError
    from fulmen.module import Module

    if instance is None:
        return False
    if parent is None:
        parent = next((c for c in (Module, DataModule, Callback) if isinstance(instance, c)), None)
        if parent is None:
            raise ConfigurationError(
                f"is_overridden({method_name!r}, {type(instance).__name__} instance): expected a "
                "parent class (parent=...) for an object that is not a fulmen Module, DataModule "
                "or Callback")
    instance_attr = getattr(instance, method_name, None)
    if instance_attr is None:
        return False
    # a method patched on the instance (a mock, a functools.wraps wrapper) counts from its target
    instance_attr = getattr(instance_attr, "__wrapped__", instance_attr)
    instance_func = getattr(instance_attr, "__func__", instance_attr)
    parent_attr = getattr(parent, method_name, None)
    if parent_attr is None:
        raise ConfigurationError(f"is_overridden({method_name!r}): {parent.__name__} has no "
                                 f"method {method_name!r}")
    return instance_func is not getattr(parent_attr, "__func__", parent_attr)
