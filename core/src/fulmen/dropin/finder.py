"""The import hook behind ``fulmen run``: Lightning's module names, served by fulmen.

:class:`LightningFinder` sits first on ``sys.meta_path`` and answers every module under
``lightning``, ``pytorch_lightning`` and ``lightning_fabric`` itself (so an installed Lightning is
never half-mixed in), with an :class:`AliasModule` whose attributes are fulmen's objects, looked
up on first use (:mod:`fulmen.dropin.names`). Other names are left to the next finder, and
``sys.modules`` is touched only for the Lightning names a script imports.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Sequence
from typing import Any

from fulmen.dropin import names
from fulmen.errors import LightningNameError


def _missing(what: str, fullname: str, nearby: list[str]) -> LightningNameError:
    hint = (f"; what fulmen serves there: {', '.join(nearby)}" if nearby else "")
    return LightningNameError(
        f"{what} has no fulmen counterpart (fulmen run serves Lightning's names from fulmen)"
        f"{hint}. "
        "Import fulmen's own name instead, or see docs/migrating.md.", name=fullname)


class AliasModule(types.ModuleType):
    """A Lightning module whose attributes are fulmen objects, resolved on first access."""

    __fulmen_map__: names.ModuleMap

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            if attr == "__all__":
                value: Any = self.__public_names__()
                self.__dict__[attr] = value
                return value
            raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")
        value = self.__resolve__(attr)
        self.__dict__[attr] = value  # later lookups skip __getattr__
        return value

    def __resolve__(self, attr: str) -> Any:
        fullname = f"{self.__name__}.{attr}"
        module_map = self.__fulmen_map__
        if names.canonical(fullname) in names.MODULES:
            return importlib.import_module(fullname)
        target = module_map.names.get(attr)
        if target is not None:
            module, _, name = target.partition(":")
            return getattr(importlib.import_module(module), name)
        for source in module_map.sources:
            found = importlib.import_module(source)
            if attr in names.exports(found):
                return getattr(found, attr)
        if attr.startswith("_"):
            raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")
        raise _missing(f"{fullname!r}", fullname, self.__public_names__())

    def __public_names__(self) -> list[str]:
        module_map = self.__fulmen_map__
        found = set(module_map.names)
        for source in module_map.sources:
            found.update(names.exports(importlib.import_module(source)))
        return sorted(found)

    def __dir__(self) -> list[str]:
        return sorted({*self.__dict__, *self.__public_names__()})


class AliasLoader(importlib.abc.Loader):
    """Creates the :class:`AliasModule` for one Lightning module name."""

    def __init__(self, module_map: names.ModuleMap) -> None:
        self.module_map = module_map

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = AliasModule(spec.name, f"Lightning's {spec.name}, served by fulmen "
                             "(fulmen run; see docs/migrating.md)")
        module.__fulmen_map__ = self.module_map
        if "." not in spec.name:
            module.__version__ = names.LIGHTNING_VERSION  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class LightningFinder(importlib.abc.MetaPathFinder):
    """Answers every module under Lightning's roots; an unknown one is a
    :class:`~fulmen.errors.LightningNameError` naming it (never the next finder's Lightning)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.partition(".")[0] not in names.ROOTS:
            return None
        module_map = names.lookup(fullname)
        if module_map is None:
            raise _missing(f"module {fullname!r}", fullname, names.counterparts(fullname))
        return importlib.machinery.ModuleSpec(fullname, AliasLoader(module_map),
                                              is_package=True)


def install() -> LightningFinder:
    """Put the finder first on ``sys.meta_path`` (once) and drop Lightning modules a real
    Lightning may have loaded already, so every Lightning name resolves to fulmen."""
    for finder in sys.meta_path:
        if isinstance(finder, LightningFinder):
            return finder
    for name in [n for n in sys.modules if n.partition(".")[0] in names.ROOTS]:
        del sys.modules[name]
    finder = LightningFinder()
    sys.meta_path.insert(0, finder)
    return finder


def uninstall() -> None:
    """Remove the finder and the Lightning modules it served."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, LightningFinder)]
    for name, module in list(sys.modules.items()):
        if isinstance(module, AliasModule):
            del sys.modules[name]
