"""Lightning's strategy and accelerator registries (``StrategyRegistry`` / ``STRATEGY_REGISTRY``,
``AcceleratorRegistry`` / ``ACCELERATOR_REGISTRY``) as views of fulmen's plugin catalog: reading
one lists the registered names (``available_strategies()``), ``get(name)`` constructs what the
name selects, and ``register(name, cls, description, **init_params)`` adds a name for this
process as a runtime plugin (``fulmen plugins`` lists it), so ``Trainer(strategy=name)`` and
``Lite(strategy=name)`` select it. fulmen's names come from plugins: removing one, or
overriding one with ``override=True``, is an error saying how to disable a plugin instead."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from fulmen.errors import ConfigurationError

__all__ = ["ACCELERATOR_REGISTRY", "STRATEGY_REGISTRY", "PluginRegistry",
           "call_register_accelerators"]


class PluginRegistry(Mapping[str, dict[str, Any]]):
    """The registered names of one plugin kind; ``registry[name]`` is Lightning's record:
    ``{"<kind>": class, "description": ..., "init_params": {...}, "<kind>_name": name}``."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    @staticmethod
    def _manager() -> Any:
        from fulmen.kernel.manager import get_plugin_manager

        return get_plugin_manager()

    def _entry(self, name: object) -> Any:
        return self._manager().catalog().find(self.kind, name)

    def __getitem__(self, name: str) -> dict[str, Any]:
        entry = self._entry(name)
        if entry is None:
            raise KeyError(name)
        return {self.kind: entry.load(), "description": entry.record.description,
                "init_params": dict(entry.record.init_kwargs), f"{self.kind}_name": entry.name}

    def __iter__(self) -> Iterator[str]:
        return iter(self._manager().catalog().names(self.kind))

    def __len__(self) -> int:
        return len(self._manager().catalog().names(self.kind))

    def __contains__(self, name: object) -> bool:
        return self._entry(name) is not None

    def get(self, name: str, default: Any = None) -> Any:
        """The plugin ``name`` selects, constructed with its registered arguments."""
        entry = self._entry(name)
        if entry is not None:
            return entry.create()
        if default is not None:
            return default
        raise KeyError(f"'{name}' not found in registry. Available names: "
                       f"{', '.join(sorted(self)) or 'none'}")

    def register(self, name: str, cls: Callable[..., Any] | None = None,
                 description: str | None = None, override: bool = False,
                 **init_params: Any) -> Callable[..., Any]:
        """Add ``name`` (constructing ``cls(**init_params)``) for this process; without
        ``cls`` a decorator."""
        if not isinstance(name, str):
            raise TypeError(f"`name` must be a str, found {name}")
        if name in self:
            hint = ("fulmen's names come from plugins and cannot be replaced here; disable the "
                    "plugin that registers it (FULMEN_DISABLE_PLUGINS=<plugin>) and register "
                    "yours" if override else "HINT: Use `override=True`.")
            raise ConfigurationError(f"'{name}' is already present in the registry. {hint}")

        def do_register(target: Callable[..., Any]) -> Callable[..., Any]:
            from fulmen.kernel.hookspecs import hookimpl
            from fulmen.kernel.kinds import HOOKS, RECORDS

            spec = RECORDS[self.kind](name=name, target=target,  # type: ignore[arg-type]
                                      description=description or "",
                                      init_kwargs=init_params)

            def records() -> Iterator[Any]:
                yield spec

            plugin = types.SimpleNamespace(**{HOOKS[self.kind]: hookimpl(records)})
            self._manager().register(plugin, name=f"lightning-registry-{self.kind}-{name}")
            return target

        return do_register(cls) if cls is not None else do_register

    def remove(self, name: str) -> None:
        raise ConfigurationError(f"{self.kind} {name!r}: fulmen's registered names come from "
                                 "plugins; disable the plugin that registers it with "
                                 "FULMEN_DISABLE_PLUGINS=<plugin> (`fulmen plugins` lists them)")

    def available_strategies(self) -> list[str]:
        return list(self)

    def available_accelerators(self) -> set[str]:
        return set(self)

    def __str__(self) -> str:
        label = "Strategies" if self.kind == "strategy" else "Accelerators"
        return f"Registered {label}: {', '.join(self)}"


STRATEGY_REGISTRY = PluginRegistry("strategy")
ACCELERATOR_REGISTRY = PluginRegistry("accelerator")


def call_register_accelerators(registry: Any, base_module: str) -> None:
    """Lightning registers the accelerators of ``base_module`` here; fulmen's accelerators are
    plugins, already in the catalog, so there is nothing to do."""
