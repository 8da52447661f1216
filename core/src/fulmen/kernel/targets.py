"""Why a record's target cannot be imported, told apart by what is missing, not by messages.

Three cases, each a :class:`TargetProblem` with its own :attr:`~TargetProblem.case`:

``TARGET``      the plugin's own target does not exist: the module the target names is
                missing (``acme.strategi`` for ``acme.strategy``), or a module of the plugin's
                own distribution it imports, or the class is not in the module. The plugin
                is broken.
``DEPENDENCY``  a third-party module the target imports is missing: the plugin cannot run
                here until that library is installed (the command, where the record or the
                distribution's requirements say it).
``RAISED``      importing the target raised: the plugin is broken where the traceback's last
                frame in the plugin's own files says.

Which module was missing is ``ModuleNotFoundError.name``; which modules are the plugin's own is
read from its distribution (:attr:`PluginInfo.own_modules`). :func:`find_missing_module` tells
whether a target's module exists without importing any of the plugin's code.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.machinery
import importlib.util
import os
import pkgutil
import re
import sys
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from fulmen.kernel.plugin_info import PluginInfo

TARGET, DEPENDENCY, RAISED = "target", "dependency", "raised"


@dataclass(frozen=True)
class TargetProblem:
    """Why ``target`` cannot be imported (see the module docstring for ``case``).

    detail: what is wrong, in full (it names the missing module or class, or the error);
    error: the exception, as ``"Type: message"`` ("" when nothing was raised);
    module: the module that is missing (``TARGET`` and ``DEPENDENCY``), else "";
    install: how to install ``module`` (``DEPENDENCY``), "" when nothing says how;
    where: ``file:line`` of the traceback's last frame in the plugin's own files, or "".
    """

    case: str
    target: str
    detail: str
    error: str = ""
    module: str = ""
    install: str = ""
    where: str = ""

    @property
    def is_missing_dependency(self) -> bool:
        """A third-party library is missing here: the plugin is not at fault."""
        return self.case == DEPENDENCY

    def sentence(self, install: bool = True) -> str:
        """``detail``, with the location and (``install``) the install command when known."""
        where = f" (at {self.where})" if self.where else ""
        install_it = f"; install it with: {self.install}" if self.install and install else ""
        return f"{self.detail}{where}{install_it}"

    def way_out(self, plugin: PluginInfo, kind: str) -> str:
        """What to do, for a user who selected the target's name."""
        dist = plugin.distribution
        disable = (f"disable the plugin with FULMEN_DISABLE_PLUGINS={plugin.name} and choose "
                   f"another {kind}")
        if self.is_missing_dependency:
            reinstall = (f"pip install --force-reinstall {dist} (installs what it declares)"
                         if dist else "")
            how = self.install or reinstall or f"install what provides {self.module!r}"
            return f"To use it, install {self.module.split('.')[0]!r}: {how}; or {disable}."
        fix = (f"upgrade or reinstall {dist} (pip install --force-reinstall {dist}), or report "
               "it to its authors" if dist else "fix the plugin")
        return f"The plugin is broken: {fix}; meanwhile {disable}."


def load(target: str | type, plugin: PluginInfo) -> tuple[type | None, TargetProblem | None]:
    """Import ``target`` (``"package.module:Attr"``) for ``plugin``: (the class, None), or
    (None, why not). A ``KeyboardInterrupt`` passes through."""
    if isinstance(target, type):
        return target, None
    module_name, _, attr = target.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:
        return None, from_error(exc, target, plugin)
    owner = module_name
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            names = [n for n in dir(obj) if not n.startswith("_")]
            return None, TargetProblem(
                TARGET, target, f"the target does not exist: {owner!r} has no attribute "
                f"{part!r}{_close(part, names)}", _error(exc), where=_defined_at(obj))
        except (Exception, SystemExit) as exc:  # a module __getattr__ that raised
            return None, _raised(exc, target, plugin)
        owner = f"{owner}.{part}"
    if not isinstance(obj, type):
        return None, TargetProblem(TARGET, target, f"the target is a {type(obj).__name__}, "
                                   "not a class")
    return obj, None


def from_error(exc: BaseException, target: str, plugin: PluginInfo) -> TargetProblem:
    """Which case an exception raised while importing ``target`` (or building it: a module
    imported late) is: a missing module is ``TARGET`` when it is the target's or one of its
    distribution's, else ``DEPENDENCY``; anything else is ``RAISED``."""
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return _missing(exc, exc.name, target, plugin)
    return _raised(exc, target, plugin)


def find_missing_module(target: str | type, plugin: PluginInfo) -> TargetProblem | None:
    """Why the module ``target`` names does not exist (``TARGET``, or ``DEPENDENCY`` when it
    is in a library the plugin's distribution requires), found without importing it or its
    parent packages (``importlib.util.find_spec`` of ``a.b`` would import ``a``); None when it
    exists (its import may still fail: only :func:`load` can tell)."""
    if isinstance(target, type):
        return None
    module = target.partition(":")[0]
    missing = _first_missing(module)
    if missing is None:
        return None
    return _missing_target(missing, target, plugin)


def _first_missing(module: str) -> str | None:
    """The shortest prefix of the dotted name ``module`` that no finder finds, or None."""
    parts = module.split(".")
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        if _find_spec(name) is None:
            return name
    return None


def _find_spec(name: str) -> Any:
    """The spec of module ``name``, found without importing it or its parent packages (a
    parent that is imported already is read from ``sys.modules``); None when none is found."""
    if name in sys.modules:
        return getattr(sys.modules[name], "__spec__", None) or importlib.machinery.ModuleSpec(
            name, None)
    parent, _, _ = name.rpartition(".")
    try:
        if not parent:
            return importlib.util.find_spec(name)
        locations = _locations(parent)
        return importlib.machinery.PathFinder.find_spec(name, locations) if locations else None
    except (ImportError, ValueError):
        return None


def _locations(package: str) -> list[str] | None:
    """Where the submodules of ``package`` are (None for a module that is not a package, or
    one that does not exist)."""
    loaded = sys.modules.get(package)
    path = getattr(loaded, "__path__", None) if loaded is not None else None
    if path is None and loaded is None:
        spec = _find_spec(package)
        path = spec.submodule_search_locations if spec is not None else None
    return list(path) if path is not None else None


def _siblings(missing: str) -> list[str]:
    """The modules beside ``missing`` in its parent package (found, not imported)."""
    parent, _, _ = missing.rpartition(".")
    locations = _locations(parent) if parent else None
    if not locations:
        return []
    return [f"{parent}.{m.name}" for m in pkgutil.iter_modules(locations)]


def _close(given: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(given, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _missing(exc: ModuleNotFoundError, missing: str, target: str,
             plugin: PluginInfo) -> TargetProblem:
    """A missing module: the target's own (or its distribution's) or a third party's."""
    module = target.partition(":")[0]
    if module == missing or module.startswith(missing + "."):
        return _missing_target(missing, target, plugin, _error(exc))
    where = last_frame_in(exc, roots_of(plugin))
    own = plugin.own_modules
    if missing.split(".")[0] in own:
        return TargetProblem(
            TARGET, target, f"the target's module {module!r} imports {missing!r}, which "
            f"{plugin.distribution or 'the plugin'} does not have"
            f"{_close(missing, _siblings(missing))}", _error(exc), missing, where=where)
    top = missing.split(".")[0]
    installed = _installed(top)
    if installed is not None and missing != top:
        what = (f"the target's module {module!r} imports {missing!r}, which the installed "
                f"{installed} does not have (the plugin needs another version of it)")
    else:
        what = (f"the target's module {module!r} imports {missing!r}, a library that is not "
                "installed here")
    return TargetProblem(DEPENDENCY, target, what, _error(exc), missing,
                         install_command(missing, plugin), where)


def _missing_target(missing: str, target: str, plugin: PluginInfo,
                    error: str = "") -> TargetProblem:
    """The module the target names is missing: a typo in the plugin (``TARGET``), unless it is
    in another distribution the plugin's own requires (``DEPENDENCY``, with how to install)."""
    top = missing.split(".")[0]
    install = install_command(missing, plugin) if top not in plugin.own_modules else ""
    if install:
        return TargetProblem(DEPENDENCY, target, f"the target's module is in {top!r}, a "
                             f"library {plugin.distribution} requires that is not installed "
                             "here", error, missing, install)
    dist = plugin.distribution or "the plugin"
    return TargetProblem(TARGET, target, f"the target does not exist: {dist} has no module "
                         f"{missing!r}{_close(missing, _siblings(missing))}", error,
                         module=missing)


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split()) or '(no message)'}"


def _installed(top: str) -> str | None:
    """``"torch 2.13.0"`` when the top-level module ``top`` is importable (found, not
    imported), else None."""
    try:
        if importlib.util.find_spec(top) is None:
            return None
    except (ImportError, ValueError):
        return None
    from importlib import metadata

    dists = metadata.packages_distributions().get(top, [])
    if dists:
        try:
            return f"{dists[0]} {metadata.version(dists[0])}"
        except metadata.PackageNotFoundError:
            return dists[0]
    return top


def _raised(exc: BaseException, target: str, plugin: PluginInfo) -> TargetProblem:
    return TargetProblem(RAISED, target, f"importing the target raised {_error(exc)}",
                         _error(exc), where=last_frame_in(exc, roots_of(plugin)))


_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*([^;]*)(;.*)?$")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def install_command(module: str, plugin: PluginInfo, requires: Sequence[str] = (),
                    install: str = "") -> str:
    """How to install what provides ``module``: ``install`` when ``requires`` (a record's)
    names it; else the plugin distribution's own requirement of that name (``pip install
    'fulmen-acme[extra]'`` for an optional one); "" when nothing says."""
    top = module.split(".")[0]
    if install and any(r.split(".")[0] == top for r in requires):
        return install
    dist = plugin.dist
    if dist is None:
        return ""
    for line in dist.requires or []:
        found = _REQUIREMENT.match(line)
        if found is None or _normal(found.group(1)) != _normal(top):
            continue
        extra = _EXTRA.search(found.group(4) or "")
        if extra is not None and plugin.distribution:
            return f"pip install '{plugin.distribution}[{extra.group(1)}]'"
        spec = f"{found.group(1)}{found.group(3).strip()}"
        return f"pip install '{spec}'" if spec != found.group(1) else f"pip install {spec}"
    return ""


def roots_of(plugin: PluginInfo) -> tuple[str, ...]:
    """The folders (or files) of the plugin's own top-level modules, found without importing
    them."""
    roots = []
    for name in sorted(plugin.own_modules):
        spec = _find_spec(name)
        if spec is None:
            continue
        if spec.submodule_search_locations:
            roots += [os.path.abspath(p) for p in spec.submodule_search_locations]
        elif spec.origin and os.path.isfile(spec.origin):
            roots.append(os.path.abspath(spec.origin))
    return tuple(roots)


def inside(filename: str, roots: Sequence[str]) -> bool:
    path = os.path.abspath(filename)
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def last_frame_in(exc: BaseException, roots: Sequence[str]) -> str:
    """``file:line`` of the last frame of ``exc``'s traceback in ``roots``, or ""."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if inside(f.filename, roots)]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""


def _defined_at(module: Any) -> str:
    origin = getattr(getattr(module, "__spec__", None), "origin", None)
    return origin if isinstance(origin, str) and os.path.isfile(origin) else ""


__all__ = ["DEPENDENCY", "RAISED", "TARGET", "TargetProblem", "find_missing_module",
           "from_error", "inside", "install_command", "last_frame_in", "load", "roots_of"]
