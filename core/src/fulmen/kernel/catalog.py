"""Name and alias → record, per kind, with errors that say what would work."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fulmen.errors import ConfigurationError, FulmenError, PluginError, format_choices
from fulmen.kernel import targets
from fulmen.kernel.kinds import KINDS, PLURAL
from fulmen.kernel.known_plugins import KNOWN
from fulmen.kernel.plugin_info import ACTIVE, DISABLED, PluginInfo
from fulmen.kernel.records import Spec

__all__ = ["KINDS", "PLURAL", "Catalog", "Entry"]


@dataclass(frozen=True)
class Entry:
    """A record and the plugin that provided it."""

    record: Any  # a Spec subclass
    plugin: PluginInfo

    @property
    def name(self) -> str:
        return str(self.record.name)

    def load(self) -> type:
        """The record's target class. One that cannot be imported is an error naming the name,
        the plugin (entry point) and distribution that registered it, which of the cases of
        :mod:`fulmen.kernel.targets` it is, and what to do (a ``PluginError``)."""
        cls, problem = targets.load(self.record.target, self.plugin)
        if problem is None:
            assert cls is not None
            return cls
        raised = f" ({problem.error})" if problem.error else ""
        raise PluginError(
            f"{self.record.kind}={self.name!r} is registered by {self.plugin.describe()}, but "
            f"its target {self.record.target_path!r} cannot be imported{raised}: "
            f"{problem.sentence(install=False)}. {problem.way_out(self.plugin, self.record.kind)}")

    def problem(self) -> targets.TargetProblem | None:
        """Why the record's target cannot be imported, or None (this imports it)."""
        return targets.load(self.record.target, self.plugin)[1]

    def missing_target(self) -> targets.TargetProblem | None:
        """The record's target module does not exist (found without importing any plugin's
        code, for listings), or None."""
        return targets.find_missing_module(self.record.target, self.plugin)

    def create(self, **overrides: Any) -> Any:
        """The record's target constructed (:meth:`Spec.create`), import errors as in
        :meth:`load`."""
        if not self.record.missing():
            self.load()
        return self.record.create(**overrides)


class Catalog:
    """Registered names per kind. A name or alias given by two plugins is a ``PluginError``."""

    def __init__(self, records: Mapping[str, Iterable[tuple[PluginInfo, Spec]]],
                 plugins: Mapping[str, PluginInfo],
                 withheld: Mapping[str, Iterable[tuple[PluginInfo, Spec]]] | None = None
                 ) -> None:
        """``records``: per kind, the records of the active plugins; ``withheld``: those a
        plugin yielded before it failed (left out, but named in errors)."""
        self.plugins = plugins
        self._withheld: dict[str, dict[str, PluginInfo]] = {k: {} for k in KINDS}
        for kind, pairs in (withheld or {}).items():
            for info, record in pairs:
                for name in record.names:
                    self._withheld[kind].setdefault(name, info)
        self._entries: dict[str, list[Entry]] = {k: [] for k in KINDS}
        self._index: dict[str, dict[str, Entry]] = {k: {} for k in KINDS}
        clashes: list[str] = []
        for kind, pairs in records.items():
            pairs = list(pairs)
            dedicated = {n for _, r in pairs if not r.fallback for n in r.names}
            for info, record in pairs:
                if record.fallback and dedicated.intersection(record.names):
                    continue  # a dedicated plugin registers this name: the fallback gives way
                entry = Entry(record, info)
                for name in record.names:
                    other = self._index[kind].get(name)
                    if other is not None and other.plugin is info:
                        clashes.append(
                            f"{kind} name {name!r} is registered twice by {info.describe()} "
                            f"({other.record.target_path} and {record.target_path}); the plugin "
                            f"must yield each name once. Until it is fixed, disable it with "
                            f"FULMEN_DISABLE_PLUGINS={info.name}"
                        )
                        continue
                    if other is not None:
                        clashes.append(
                            f"{kind} name {name!r} is registered twice: by "
                            f"{other.plugin.describe()} and by {info.describe()}. Disabling one "
                            f"of them resolves this: FULMEN_DISABLE_PLUGINS={info.name} keeps "
                            f"{other.plugin.name!r}, FULMEN_DISABLE_PLUGINS={other.plugin.name} "
                            f"keeps {info.name!r}"
                        )
                        continue
                    self._index[kind][name] = entry
                self._entries[kind].append(entry)
                info.provides.setdefault(kind, []).append(record.name)
        if clashes:
            raise PluginError("conflicting plugin names:\n  - " + "\n  - ".join(clashes))
        for entries in self._entries.values():
            entries.sort(key=lambda e: e.name)

    def entries(self, kind: str) -> list[Entry]:
        """Every entry of a kind, sorted by canonical name."""
        return list(self._entries[kind])

    def names(self, kind: str) -> list[str]:
        """Canonical names of a kind, sorted."""
        return [e.name for e in self._entries[kind]]

    def find(self, kind: str, name: object) -> Entry | None:
        """The entry a name or alias selects, or None. Ints are looked up as text (16 → '16')."""
        if isinstance(name, bool) or not isinstance(name, str | int):
            return None
        return self._index[kind].get(str(name).strip().lower())

    def is_deprecated_alias(self, entry: Entry, given: object) -> bool:
        return str(given).strip().lower() in entry.record.deprecated_aliases

    def find_for_instance(self, kind: str, instance: Any) -> Entry | None:
        """The record behind an instance: the one its public ``name`` selects when that record's
        target is the instance's class or a base of it (``DDPStrategy(start_method="spawn")``
        is named ``ddp_spawn``); else the record of its nearest registered class with the fewest
        ``init_kwargs`` (a user's subclass is checked against its base's facts)."""
        paths = [f"{c.__module__}:{c.__qualname__}" for c in type(instance).__mro__]
        entry = self.find(kind, instance.name)
        if entry is not None and entry.record.target_path in paths:
            return entry
        for path in paths:
            matches = [c for c in self._entries[kind] if c.record.target_path == path]
            if matches:
                return min(matches, key=lambda c: (len(c.record.init_kwargs), len(c.name)))
        return None

    def select(self, kind: str, given: object, argument: str | None = None) -> Entry:
        """The entry for ``given`` or an error that echoes it, says why, and lists what exists."""
        entry = self.find(kind, given)
        if entry is not None:
            return entry
        raise self.unknown(kind, given, argument)

    def suggest(self, kind: str, given: object) -> str:
        """``" Did you mean 'x'?"`` with the canonical name of the closest name or alias."""
        close = difflib.get_close_matches(str(given).strip().lower(), list(self._index[kind]), n=1)
        return f" Did you mean {self._index[kind][close[0]].name!r}?" if close else ""

    def unavailable(self, kind: str, given: object, argument: str | None = None
                    ) -> FulmenError | None:
        """Why a name known to belong to a plugin is missing: that plugin failed (its records
        are left out) or is disabled, or its distribution is not installed."""
        label = f"{argument or kind}={given!r}"
        key = str(given).strip().lower()
        choices = f"{PLURAL[kind]}: {format_choices(self.names(kind))}."
        failed = self._withheld.get(kind, {}).get(key)
        if failed is not None:
            return PluginError(
                f"{label}: the {kind} is registered by {failed.describe()}, but that plugin "
                f"failed, so its records are left out: {failed.reason}. To use it, "
                f"{failed.how_to_enable()}. Available {choices}")
        provider = KNOWN.get(kind, {}).get(key)
        info = self.plugins.get(provider.entry_point) if provider else None
        if info is None and isinstance(given, str):
            info = self.plugins.get(key)
            info = info if info is not None and info.status != ACTIVE else None
        if info is None and provider is None:
            related = [i for i in self.not_loaded(given) if related_to(given, i)]
            info = related[0] if len(related) == 1 else None
            if info is not None:
                return (ConfigurationError if info.status == DISABLED else PluginError)(
                    f"{label}: no active plugin registers this {kind}. It probably comes from "
                    f"{info.describe()}, whose name relates to {str(given)!r} (a plugin's "
                    f"names are known only once it loads), which {info.state()}. To use it, "
                    f"{info.how_to_enable()}. Available {choices}")
        if info is not None and info.status == DISABLED:
            return ConfigurationError(
                f"{label}: the {kind} is provided by {info.describe()}, which is "
                f"{info.reason}. To use it, {info.how_to_enable()}; or choose one of: "
                f"{format_choices(self.names(kind))}.")
        if info is not None and info.status != ACTIVE:
            return PluginError(
                f"{label}: the {kind} is provided by {info.describe()}, which failed: "
                f"{info.reason}. To use it, {info.how_to_enable()}. Available {choices}")
        if provider is not None and info is None:
            return ConfigurationError(
                f"{label}: no installed plugin registers this {kind}; it comes with the "
                f"{provider.distribution!r} distribution ({provider.install}). "
                f"Available {choices}")
        return None

    def not_loaded(self, given: object = None) -> list[PluginInfo]:
        """Every plugin that failed or is disabled, those whose name relates to ``given``
        (:func:`related_to`) first."""
        infos = [i for i in self.plugins.values() if i.status != ACTIVE]
        return sorted(infos, key=lambda i: not related_to(given, i))

    def withheld_by(self, given: object) -> PluginInfo | None:
        """The failed plugin that yielded a record of this name or alias (of any kind)."""
        key = str(given).strip().lower()
        return next((names[key] for names in self._withheld.values() if key in names), None)

    def unknown(self, kind: str, given: object, argument: str | None = None) -> FulmenError:
        """The error for a name no active plugin registers: what exists, and every plugin
        that failed or is disabled (it might provide the name) with its cause and way out."""
        why = self.unavailable(kind, given, argument)
        if why is not None:
            return why
        first = next(iter(self.not_loaded(given)), None)
        error = PluginError if first is not None and related_to(given, first) and \
            first.status != DISABLED else ConfigurationError
        return error(
            f"{argument or kind}={given!r} is not a registered {kind} name."
            f"{self.suggest(kind, given)} Available {PLURAL[kind]}: "
            f"{format_choices(self.names(kind))}.{self.not_loaded_note(given)}"
        )

    def not_loaded_note(self, given: object = None) -> str:
        """Every plugin that is not loaded (a disabled or failed plugin's names are unknown,
        so it might provide ``given``), each with its distribution, cause and way out; those
        whose name relates to ``given`` first. Empty when every plugin is loaded."""
        infos = self.not_loaded(given)
        if not infos:
            return ""
        lines = []
        for info in infos:
            near = (f" (its name relates to {str(given)!r})"
                    if given is not None and related_to(given, info) else "")
            lines.append(f"{info.explain()}{near}")
        return ("\nThe names of plugins that are not loaded are unknown, and one of them might "
                "provide it:\n  * " + "\n  * ".join(lines))

    def matching(self, kind: str, keep: Callable[[Any], bool]) -> list[str]:
        """Canonical names of ``kind`` whose record passes ``keep``."""
        return [e.name for e in self._entries[kind] if keep(e.record)]


_GENERIC = {"fulmen", "plugin", "plugins", "lightning", "pytorch", "torch"}


def _words(text: str) -> set[str]:
    return {w for w in re.split(r"[^a-z0-9]+", text.lower()) if len(w) >= 3} - _GENERIC


def related_to(given: object, info: PluginInfo) -> bool:
    """Whether a name asked for may belong to ``info`` by its names: one of its entry-point or
    distribution name contains the other (``'acme'`` and ``acme_cluster``), or they share a
    word of three letters or more (``ddp_acme`` and ``fulmen-acme``)."""
    if not isinstance(given, str) or len(given.strip()) < 3:
        return False
    wanted = re.sub(r"[-_.]+", "_", given.strip().lower())
    for name in (info.name, info.distribution or ""):
        own = re.sub(r"[-_.]+", "_", name.lower())
        if own and (wanted in own or (len(own) >= 3 and own in wanted)
                    or _words(wanted) & _words(own)):
            return True
    return False
