"""The plugin manager: finds, filters, loads and isolates plugins.

Plugins are the entry points of the ``fulmen.plugins`` group, loaded in a deterministic order
(entry-point name, then distribution). Settings, read when plugins are first needed:

``FULMEN_DISABLE_PLUGINS=a,b``  block these entry points before they are imported.
``FULMEN_PLUGIN_AUTOLOAD=0``    load only the entry points named in ``FULMEN_PLUGINS=a,b``.
``FULMEN_STRICT_PLUGINS=1``     a plugin that fails to import or to answer a hook is an error
                                (``PluginError``) instead of a ``PluginWarning``.
``FULMEN_TRACE_HOOKS=1``        log every hook call and its result (pluggy's tracing) to the
                                ``fulmen.hooks`` logger, or to stderr when it has no handler.

pluggy calls the hooks (``pm.hook.<name>(...)``), so plugin hook wrappers (``wrapper=True`` or
``hookwrapper=True``) work as pluggy documents. Each hook implementation is guarded when its
plugin is registered: one that raises (or calls ``sys.exit()``) is reported with its plugin and
distribution and left out, and the others keep answering.

Discovery is lazy and cached per process; a forked child rediscovers on first use.
"""

from __future__ import annotations

import functools
import importlib.metadata as metadata
import os
import re
import sys
import threading
import warnings
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pluggy
from pluggy import HookImpl

from fulmen.errors import PluginError, PluginWarning, did_you_mean, format_choices
from fulmen.kernel import hookspecs
from fulmen.kernel.hookspecs import ENTRY_POINT_GROUP, PROJECT
from fulmen.kernel.kinds import HOOKS, RECORDS
from fulmen.kernel.plugin_info import ACTIVE, DISABLED, FAILED, PluginInfo

if TYPE_CHECKING:
    from fulmen.kernel.catalog import Catalog

#: collect hooks besides the kinds' record hooks (kinds.HOOKS)
_OTHER_COLLECT_HOOKS = frozenset({"fulmen_check_selection", "fulmen_checkpoint_layouts"})
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Settings:
    """The plugin settings read from the environment."""

    disabled: tuple[str, ...] = ()
    autoload: bool = True
    selected: tuple[str, ...] = ()
    strict: bool = False
    trace: bool = False

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Settings:
        def names(var: str) -> tuple[str, ...]:
            return tuple(n.strip() for n in environ.get(var, "").split(",") if n.strip())

        def flag(var: str, default: bool) -> bool:
            raw = environ.get(var, "").strip().lower()
            if not raw:
                return default
            if raw in _TRUE | _FALSE:
                return raw in _TRUE
            warnings.warn(f"{var}={environ[var]!r} is not a boolean; use 1 or 0. "
                          f"Keeping the default ({int(default)}).", PluginWarning, stacklevel=4)
            return default

        return cls(
            disabled=names("FULMEN_DISABLE_PLUGINS"),
            autoload=flag("FULMEN_PLUGIN_AUTOLOAD", True),
            selected=names("FULMEN_PLUGINS"),
            strict=flag("FULMEN_STRICT_PLUGINS", False),
            trace=flag("FULMEN_TRACE_HOOKS", False),
        )


class PluginManager(pluggy.PluginManager):
    """pluggy's plugin manager, with fulmen's discovery, isolation and records.

    pluggy registers and calls the hooks, wrappers included. fulmen adds: the settings
    (``FULMEN_*``), entry points loaded in a deterministic order with the disable list applied
    before any import, a :class:`PluginInfo` per plugin (``plugins``), and isolation: each hook
    implementation is called guarded (:meth:`_hookexec`), so one that raises is reported with
    its plugin and distribution and left out while the others keep answering. Which plugin gave
    a result is read from pluggy's ``HookImpl.plugin_name`` as it answers.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        super().__init__(PROJECT)
        self.settings = Settings.from_environ(os.environ if environ is None else environ)
        self.add_hookspecs(hookspecs)
        self.plugins: dict[str, PluginInfo] = {}
        self.problems: list[str] = []
        self._catalog: Catalog | None = None
        self._calls: list[_CallRecord] = []  # one per hook call in progress (they may nest)
        if self.settings.trace:
            self.trace.root.setwriter(_trace_writer)
            self.enable_tracing()

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        """Only ``fulmen_*`` attributes: pluggy otherwise inspects every attribute of every
        plugin module, the largest cost of discovery with many plugins."""
        return super().parse_hookimpl_opts(plugin, name) if name.startswith("fulmen_") else None

    # ------------------------------------------------------------------ loading

    def load_entry_points(self) -> None:
        """Find, filter and load every entry point of the ``fulmen.plugins`` group.

        The disable list is applied first; clashes are judged among the plugins left, so
        disabling one of two plugins that claim the same entry-point name resolves the clash.
        """
        found = sorted(metadata.entry_points(group=ENTRY_POINT_GROUP),
                       key=lambda ep: (ep.name, ep.value))
        infos = [(PluginInfo(ep.name, ep.value, getattr(ep, "dist", None)), ep) for ep in found]
        self._check_names_in_settings([info for info, _ in infos])
        for info, _ in infos:
            if self._named(info, self.settings.disabled):
                info.status, info.reason = DISABLED, "disabled by FULMEN_DISABLE_PLUGINS"
            elif not self.settings.autoload and not self._named(info, self.settings.selected):
                info.status = DISABLED
                info.reason = "not named in FULMEN_PLUGINS while FULMEN_PLUGIN_AUTOLOAD=0"
        loaded: dict[str, PluginInfo] = {}
        for info, _ in infos:
            first = loaded.get(info.name)
            if info.status == ACTIVE and first is not None:
                info.status = FAILED
                info.reason = f"its entry-point name is also registered by {first.origin}"
                self.problems.append(
                    f"two distributions register the plugin name {info.name!r}: {first.origin} "
                    f"({first.value}) and {info.origin} ({info.value}); uninstall one of them, "
                    f"or disable one with FULMEN_DISABLE_PLUGINS={info.distribution}:{info.name} "
                    f"(or {first.distribution}:{info.name})"
                )
            elif info.status == ACTIVE:
                loaded[info.name] = info
        for info, _ in infos:  # the plugin that is loaded owns the plain name
            key = info.name if loaded.get(info.name, info) is info else info.qualified_name
            self.plugins[key if key not in self.plugins else info.qualified_name] = info
        for info, ep in infos:
            if info.status == ACTIVE:
                self._load(info, ep.load)

    @staticmethod
    def _named(info: PluginInfo, names: tuple[str, ...]) -> bool:
        """Whether ``names`` (a FULMEN_* list) names this plugin: by entry-point name, or as
        ``distribution:name`` when two distributions use the same entry-point name."""
        if info.name in names:
            return True
        qualified = [_normalize(n) for n in names if ":" in n]
        return bool(qualified) and _normalize(info.qualified_name) in qualified

    def _check_names_in_settings(self, infos: list[PluginInfo]) -> None:
        known = sorted({i.name for i in infos})
        for var, names in (("FULMEN_DISABLE_PLUGINS", self.settings.disabled),
                           ("FULMEN_PLUGINS", self.settings.selected)):
            for name in names:
                if not any(self._named(i, (name,)) for i in infos):
                    self._complain(f"{var} names {name!r}, which is not an installed plugin."
                                   f"{did_you_mean(name, known)} Installed plugins: "
                                   f"{format_choices(known)}.")

    def _load(self, info: PluginInfo, loader: Callable[[], Any]) -> None:
        try:
            plugin = loader()
        except (Exception, SystemExit) as exc:  # must not take the other plugins down
            what = (f"called sys.exit({exc.code!r}) while {info.value!r} was imported"
                    if isinstance(exc, SystemExit) else f"failed to import {info.value!r}")
            self._fail(info, what, None if isinstance(exc, SystemExit) else exc)
            return
        self._register(info, plugin)

    def register(self, plugin: object, name: str | None = None) -> PluginInfo:  # type: ignore[override]
        """Register a plugin object at runtime (a notebook, a test) as if it were installed;
        returns what fulmen knows about it (pluggy's ``register`` returns the name)."""
        name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        if name in self.plugins:
            raise PluginError(f"a plugin named {name!r} is already known "
                              f"({self.plugins[name].origin}); pick another name")
        info = PluginInfo(name, f"{type(plugin).__module__}:{type(plugin).__qualname__}")
        self.plugins[name] = info
        self._register(info, plugin)
        self._catalog = None
        return info

    def _register(self, info: PluginInfo, plugin: object) -> None:
        try:
            super().register(plugin, name=info.name)
        except Exception as exc:
            self._fail(info, "could not be registered", exc)
            return
        unknown = [hc.name for hc in self.get_hookcallers(plugin) or [] if not hc.has_spec()]
        if unknown:
            hooks = [h for h in dir(hookspecs) if h.startswith("fulmen_")]
            hints = "; ".join(f"{u!r}{did_you_mean(u, hooks)}" for u in unknown)
            self._fail(info, f"implements hooks fulmen does not define: {hints}", None)

    def _fail(self, info: PluginInfo, what: str, exc: BaseException | None) -> None:
        cause = f": {type(exc).__name__}: {exc}" if exc is not None else ""
        info.status, info.reason = FAILED, f"{what}{cause}"
        plugin = self.get_plugin(info.name)
        if plugin is not None:
            self.unregister(plugin)
        self._catalog = None
        message = f"{info.describe()} {what}{cause}"
        if self.settings.strict:
            raise PluginError(message + " (FULMEN_STRICT_PLUGINS=1)") from exc
        warnings.warn(message + "; it is left out (FULMEN_STRICT_PLUGINS=1 makes this an error)",
                      PluginWarning, stacklevel=3)

    def _complain(self, message: str) -> None:
        if self.settings.strict:
            raise PluginError(message)
        warnings.warn(message, PluginWarning, stacklevel=4)

    # ------------------------------------------------------------------ calling hooks

    def _hookexec(self, hook_name: str, methods: Sequence[HookImpl],
                  kwargs: Mapping[str, object], firstresult: bool) -> object | list[object]:
        """pluggy's call of ``methods`` (its wrapper protocol, its tracing), each implementation
        guarded: one that raises (or calls ``sys.exit()``) is reported with its plugin and left
        out, and the call goes on without it; each answer is recorded with the name of the
        plugin that gave it, for :meth:`first_result` and :meth:`collect`."""
        record = self._calls[-1] if self._calls else _CallRecord()
        collects = hook_name in HOOKS.values() or hook_name in _OTHER_COLLECT_HOOKS
        guarded = [self._guard(impl, hook_name, record, collects) for impl in methods]
        return super()._hookexec(hook_name, guarded, kwargs, firstresult)

    def _guard(self, impl: HookImpl, hook_name: str, record: _CallRecord,
               collects: bool) -> HookImpl:
        """``impl`` with a function that cannot break the call."""
        function, plugin = impl.function, impl.plugin_name

        def report(exc: BaseException, what: str = f"raised in {hook_name}") -> None:
            info = self.plugins.get(plugin)
            if info is not None:
                self._fail(info, what, exc)

        if impl.wrapper or impl.hookwrapper:
            wrapper = _guard_wrapper(
                function, lambda exc: report(exc, f"raised in its {hook_name} hook wrapper"),
                record, plugin, impl.wrapper)
            return HookImpl(impl.plugin, plugin, wrapper, impl.opts)

        @functools.wraps(function)  # pluggy reads the argument names through it
        def call(*args: Any) -> Any:
            try:
                result = function(*args)
                if collects and result is not None:  # a generator runs inside the guard
                    result = [result] if isinstance(result, str) else list(
                        result if isinstance(result, Iterable) else [result])
            except (Exception, SystemExit) as exc:
                report(exc)
                return None
            if result is not None:
                record.answered(plugin, result)
            return result

        return HookImpl(impl.plugin, plugin, call, impl.opts)

    def _hook(self, hook_name: str, kwargs: Mapping[str, Any]) -> tuple[Any, _CallRecord]:
        record = _CallRecord()
        self._calls.append(record)
        try:
            return getattr(self.hook, hook_name)(**kwargs), record
        finally:
            self._calls.remove(record)

    def first_result(self, hook_name: str, **kwargs: Any) -> tuple[Any, str | None]:
        """(first non-None result, plugin that gave it), or (None, None)."""
        result, record = self._hook(hook_name, kwargs)
        return (None, None) if result is None else (result, record.provider(result))

    def verdicts(self, hook_name: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """Every plugin's answer to a first-result hook, in call order (for ``--detect``): each
        implementation is called on its own (wrappers are not run)."""
        out = []
        for impl in reversed(getattr(self.hook, hook_name).get_hookimpls()):
            if not (impl.hookwrapper or impl.wrapper):
                guarded = self._guard(impl, hook_name, _CallRecord(), collects=False)
                out.append((impl.plugin_name,
                            guarded.function(*(kwargs[arg] for arg in impl.argnames))))
        return out

    def collect(self, hook_name: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """(plugin, item) for every item every plugin returns, in pluggy's call order; None
        results are dropped. An item a hook wrapper added is credited to that wrapper."""
        results, record = self._hook(hook_name, kwargs)
        if not isinstance(results, list):
            results = [results]
        out: list[tuple[str, Any]] = []
        for result in results:
            for item in result if isinstance(result, list) else [result]:
                out.append((record.provider(item), item))
        return out

    # ------------------------------------------------------------------ catalog

    def catalog(self) -> Catalog:
        """Every registered name per kind, built once from the collect hooks."""
        if self._catalog is None:
            from fulmen.kernel.catalog import Catalog
            if self.problems:
                raise PluginError("; ".join(self.problems))
            records: dict[str, list[tuple[str, Any]]] = {}
            for kind, hook_name in HOOKS.items():
                records[kind] = []
                for plugin_name, item in self.collect(hook_name):
                    if not isinstance(item, RECORDS[kind]):
                        self._fail(self.plugins[plugin_name], f"yielded {item!r} from {hook_name},"
                                   f" which expects {RECORDS[kind].__name__} records", None)
                        continue
                    records[kind].append((plugin_name, item))
            failed = {n for n, i in self.plugins.items() if i.status != ACTIVE}
            self._catalog = Catalog(
                {k: [(self.plugins[p], r) for p, r in v if p not in failed]
                 for k, v in records.items()},
                self.plugins,
                {k: [(self.plugins[p], r) for p, r in v if p in failed]
                 for k, v in records.items()},
            )
        return self._catalog


class _CallRecord:
    """Who answered during one hook call, in the order they answered: pluggy returns the
    results, and each guarded implementation notes its plugin's name beside its answer."""

    def __init__(self) -> None:
        self.answers: list[tuple[str, Any]] = []
        self.wrappers: list[str] = []

    def answered(self, plugin: str, result: Any) -> None:
        self.answers.append((plugin, result))

    def provider(self, item: Any) -> str:
        """The plugin whose answer ``item`` is (or holds); the first answer that matches is
        used up, so two plugins answering with the same object are each credited once. An
        item no implementation answered came from a hook wrapper."""
        for index, (plugin, answer) in enumerate(self.answers):
            if answer is item or (isinstance(answer, list) and any(a is item for a in answer)):
                if isinstance(answer, list) and len(answer) > 1:
                    rest = list(answer)
                    rest.remove(next(a for a in answer if a is item))
                    self.answers[index] = (plugin, rest)
                else:
                    del self.answers[index]
                return plugin
        return self.wrappers[0] if self.wrappers else "?"


def _guard_wrapper(function: Callable[..., Any], report: Callable[[BaseException], None],
                   record: _CallRecord, plugin: str, new_style: bool) -> Callable[..., Any]:
    """A hook wrapper (``wrapper=True``, or old-style ``hookwrapper=True``) that cannot break
    the call: if it raises before or after its ``yield``, ``report`` is told and the result
    passes through unchanged."""

    @functools.wraps(function)
    def guarded(*args: Any, **kwargs: Any) -> Generator[None, Any, Any]:
        inner: Generator[None, Any, Any] | None
        try:
            inner = function(*args, **kwargs)
            next(inner)
            record.wrappers.append(plugin)
        except (Exception, SystemExit) as exc:
            report(exc)
            inner = None
        try:
            received = yield
        except BaseException as exc:  # new style: the call raised; the wrapper may handle it
            if inner is None:
                raise
            try:
                inner.throw(exc)
            except StopIteration as stop:
                return stop.value
            raise
        if inner is None:
            return received
        try:
            inner.send(received)
        except StopIteration as stop:
            return stop.value if new_style else None
        except (Exception, SystemExit) as exc:
            report(exc)
            return received
        inner.close()
        report(RuntimeError("the hook wrapper yielded twice"))
        return received

    return guarded


def _normalize(qualified: str) -> str:
    """``"Fulmen_B:twin"`` → ``"fulmen-b:twin"``: distributions compare as pip compares them."""
    dist, _, name = qualified.rpartition(":")
    return f"{re.sub(r'[-_.]+', '-', dist).lower()}:{name}"


def _trace_writer(message: str) -> None:
    """pluggy's trace lines: to the ``fulmen.hooks`` logger if it has a handler, else stderr."""
    import logging

    logger = logging.getLogger("fulmen.hooks")
    if logger.hasHandlers():
        logger.debug(message.rstrip("\n"))
    else:
        sys.stderr.write(message)


_lock = threading.RLock()
_manager: PluginManager | None = None
_manager_pid: int | None = None


def get_plugin_manager() -> PluginManager:
    """The process-wide plugin manager, discovered on first use (and again in a forked child)."""
    global _manager, _manager_pid
    with _lock:
        if _manager is None or _manager_pid != os.getpid():
            manager = PluginManager()
            _manager, _manager_pid = manager, os.getpid()
            try:
                manager.load_entry_points()
            except BaseException:
                _manager = None
                raise
        return _manager


def reload_plugins() -> PluginManager:
    """Forget what was discovered and discover again (after ``pip install`` in a notebook, or
    after changing ``FULMEN_*`` settings)."""
    global _manager
    with _lock:
        _manager = None
    metadata_cache_clear()
    return get_plugin_manager()


def metadata_cache_clear() -> None:
    """Make ``importlib`` see distributions installed since the interpreter started."""
    import importlib

    importlib.invalidate_caches()
