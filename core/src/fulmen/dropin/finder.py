"""The import hook behind ``fulmen run``: Lightning's module names, served by fulmen.

:class:`LightningFinder` sits first on ``sys.meta_path`` and answers every module under
``lightning``, ``pytorch_lightning`` and ``lightning_fabric`` itself (so an installed Lightning is
never half-mixed in), with an :class:`AliasModule` whose attributes are fulmen's objects, looked
up on first use (:mod:`fulmen.dropin.names`). It also answers ``importlib.metadata`` for the
distributions ``lightning``, ``pytorch-lightning`` and ``lightning-fabric`` with the Lightning
version fulmen follows (:mod:`fulmen.dropin.distributions`). Other names are left to the next
finder, and ``sys.modules`` is touched only for the Lightning names a script imports.

A name a served module does not have reads as an ``AttributeError``
(:class:`~fulmen.errors.LightningAttributeError`, so ``hasattr`` and ``getattr(m, n, None)``
work), ``from module import name`` of it is an ``ImportError``
(:class:`~fulmen.errors.LightningNameError`) and ``import`` of a module fulmen does not serve a
``ModuleNotFoundError`` (:class:`~fulmen.errors.LightningModuleNotFoundError`); each message
names what was asked for and what fulmen serves next to it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import opcode
import sys
import types
from collections.abc import Iterable, Sequence
from typing import Any

from fulmen.dropin import names
from fulmen.errors import LightningAttributeError, LightningModuleNotFoundError, LightningNameError

_IMPORT_FROM = opcode.opmap["IMPORT_FROM"]
#: the served modules that carry ``__version__``, as Lightning's do
_VERSIONED = ("lightning", "lightning.pytorch", "lightning.fabric")


def _message(what: str, nearby: list[str], cause: str = "") -> str:
    hint = f"; what fulmen serves there: {', '.join(nearby)}" if nearby else ""
    if cause:
        return (f"{what} is served by {cause}, which cannot be used in this environment. "
                "Install what it needs, import fulmen's own name instead, or see "
                "docs/migrating.md.")
    return (f"{what} has no fulmen counterpart (fulmen run serves Lightning's names from fulmen)"
            f"{hint}. Import fulmen's own name instead, or see docs/migrating.md.")


def _from_import(frame: types.FrameType | None) -> bool:
    """Whether ``frame`` is running ``from module import name`` (CPython's ``IMPORT_FROM``
    turns an ``AttributeError`` into its own ``ImportError``, losing the message, so that case
    raises :class:`LightningNameError` itself)."""
    if frame is None:
        return False
    code, offset = frame.f_code.co_code, frame.f_lasti
    return 0 <= offset < len(code) and code[offset] == _IMPORT_FROM


class _Unserved(Exception):
    """Internal: ``attr`` cannot be served; the message says why."""


class AliasModule(types.ModuleType):
    """A Lightning module whose attributes are fulmen objects, resolved on first access."""

    __fulmen_map__: names.ModuleMap

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            if attr == "__all__":  # what ``from module import *`` can import here
                value: Any = [n for n in self.__public_names__() if self.__serves__(n)]
                self.__dict__[attr] = value
                return value
            raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")
        try:
            value = self.__resolve__(attr)
        except _Unserved as exc:
            fullname = f"{self.__name__}.{attr}"
            if _from_import(sys._getframe(1)):
                raise LightningNameError(str(exc), name=fullname) from exc.__cause__
            raise LightningAttributeError(str(exc), name=attr, obj=self) from exc.__cause__
        self.__dict__[attr] = value  # later lookups skip __getattr__
        return value

    def __resolve__(self, attr: str) -> Any:
        """The fulmen object serving ``attr``; :class:`_Unserved` when there is none."""
        fullname = f"{self.__name__}.{attr}"
        module_map = self.__fulmen_map__
        if names.canonical(fullname) in names.MODULES:
            return importlib.import_module(fullname)
        target = module_map.names.get(attr)
        if target is None:
            for source in module_map.sources:
                found = importlib.import_module(source)
                if attr in names.exports(found):
                    return getattr(found, attr)
            if attr in module_map.shared:
                target = names.SHARED[attr]
        if target is None:
            if attr.startswith("_"):
                raise _Unserved(f"module {self.__name__!r} has no attribute {attr!r}")
            raise _Unserved(_message(repr(fullname), self.__public_names__()))
        module, _, name = target.partition(":")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise _Unserved(_message(repr(fullname), [], f"fulmen's {target} "
                                     f"({type(exc).__name__}: {exc})")) from exc

    def __serves__(self, attr: str) -> bool:
        """Whether ``attr`` resolves here (its fulmen counterpart can be imported)."""
        try:
            self.__dict__[attr] = self.__resolve__(attr)
        except _Unserved:
            return False
        return True

    def __public_names__(self) -> list[str]:
        module_map = self.__fulmen_map__
        found = set(module_map.names) | module_map.shared
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
        if names.canonical(spec.name) in _VERSIONED:
            module.__version__ = names.LIGHTNING_VERSION  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class LightningFinder(importlib.abc.MetaPathFinder):
    """Answers every module under Lightning's roots; an unknown one is a
    :class:`~fulmen.errors.LightningModuleNotFoundError` naming it (never the next finder's
    Lightning)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.partition(".")[0] not in names.ROOTS:
            return None
        module_map = names.lookup(fullname)
        if module_map is None:
            raise LightningModuleNotFoundError(
                _message(f"module {fullname!r}", names.counterparts(fullname)), name=fullname)
        return importlib.machinery.ModuleSpec(fullname, AliasLoader(module_map),
                                              is_package=True)

    def find_distributions(self, context: Any = None) -> Iterable[Any]:
        """``importlib.metadata``'s question: Lightning's distributions, as fulmen serves them
        (:mod:`fulmen.dropin.distributions`)."""
        from fulmen.dropin.distributions import find_distributions

        return find_distributions(context)


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
