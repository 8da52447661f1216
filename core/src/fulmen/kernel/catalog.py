"""Name and alias → record, per kind, with errors that say what would work."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fulmen.errors import ConfigurationError, FulmenError, PluginError, format_choices
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
        """The record's target class; a target that cannot be imported is a ``PluginError``
        naming the plugin (entry point) and distribution that registered the name, and what
        to do."""
        try:
            return self.record.load()
        except PluginError as exc:
            cause = exc.__cause__ if exc.__cause__ is not None else exc
            dist = self.plugin.distribution
            reinstall = (f"reinstall or upgrade {dist} (pip install --force-reinstall {dist}); "
                         if dist else "")
            raise PluginError(
                f"{self.record.kind}={self.name!r} is registered by {self.plugin.describe()}, "
                f"but its target {self.record.target_path!r} cannot be imported "
                f"({type(cause).__name__}: {cause}). A dependency of the plugin is probably "
                f"missing or broken: {reinstall}or disable the plugin with "
                f"FULMEN_DISABLE_PLUGINS={self.plugin.name} and choose another "
                f"{self.record.kind}.") from cause

    def create(self, **overrides: Any) -> Any:
        """The record's target constructed (:meth:`Spec.create`), import errors as in
        :meth:`load`."""
        if not self.record.missing():
            self.load()
        return self.record.create(**overrides)


class Catalog:
    """Registered names per kind. A name or alias given by two plugins is a ``PluginError``."""

    def __init__(self, records: Mapping[str, Iterable[tuple[PluginInfo, Spec]]],
                 plugins: Mapping[str, PluginInfo]) -> None:
        self.plugins = plugins
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
        """Why a known name is missing: its plugin is disabled, failed, or not installed."""
        label = f"{argument or kind}={given!r}"
        provider = KNOWN.get(kind, {}).get(str(given).strip().lower())
        info = self.plugins.get(provider.entry_point) if provider else None
        if info is None and isinstance(given, str):
            info = self.plugins.get(given.strip().lower())
            info = info if info is not None and info.status != ACTIVE else None
        likely = self._likely_provider(given) if info is None and provider is None else None
        if likely is not None:
            state = ("disabled" if likely.status == DISABLED else "failed") + f" ({likely.reason})"
            return (ConfigurationError if likely.status == DISABLED else PluginError)(
                f"{label}: no active plugin registers this {kind}. {likely.describe()}, which "
                f"is {state}, probably provides it (its name contains {str(given)!r}). To use "
                f"it, {likely.how_to_enable()}; or choose one of: "
                f"{format_choices(self.names(kind))}."
            )
        if info is not None and info.status == DISABLED:
            return ConfigurationError(
                f"{label}: the {kind} is provided by {info.describe()}, which is "
                f"{info.reason}. To use it, {info.how_to_enable()}; or choose one of: "
                f"{format_choices(self.names(kind))}."
            )
        if info is not None and info.status != ACTIVE:
            return PluginError(
                f"{label}: the {kind} is provided by {info.describe()}, which failed: "
                f"{info.reason}. Available {PLURAL[kind]}: {format_choices(self.names(kind))}."
            )
        if provider is not None and info is None:
            return ConfigurationError(
                f"{label}: no installed plugin registers this {kind}; it comes with the "
                f"{provider.distribution!r} distribution ({provider.install}). "
                f"Available {PLURAL[kind]}: {format_choices(self.names(kind))}."
            )
        return None

    def _likely_provider(self, given: object) -> PluginInfo | None:
        """The one plugin not loaded whose entry-point or distribution name contains ``given``
        (``'acme'`` → ``acme_cluster`` from ``fulmen-acme``): its names are unknown, since a
        plugin that is not loaded is never imported, so this is a hint for the error only."""
        def norm(text: str) -> str:
            return re.sub(r"[-_.]+", "_", text.strip().lower())

        if not isinstance(given, str) or len(given.strip()) < 3:
            return None
        wanted = norm(given)
        found = [i for i in self.plugins.values() if i.status != ACTIVE
                 and (wanted in norm(i.name) or wanted in norm(i.distribution or ""))]
        return found[0] if len(found) == 1 else None

    def unknown(self, kind: str, given: object, argument: str | None = None) -> FulmenError:
        """The error for a name no active plugin registers."""
        why = self.unavailable(kind, given, argument)
        if why is not None:
            return why
        note = self.not_loaded_note()
        return ConfigurationError(
            f"{argument or kind}={given!r} is not a registered {kind} name."
            f"{self.suggest(kind, given)} Available {PLURAL[kind]}: "
            f"{format_choices(self.names(kind))}.{note}"
        )

    def not_loaded_note(self) -> str:
        """Which plugins are not loaded (and so might provide a name asked for) and how to load
        them; a disabled plugin's names are unknown, since it is never imported."""
        groups: dict[str, list[str]] = {}
        for info in self.plugins.values():
            if info.status == DISABLED and info.reason.startswith("disabled by"):
                groups.setdefault("Disabled plugins, which might provide it (remove one from "
                                  "FULMEN_DISABLE_PLUGINS to load it)", []).append(info.name)
            elif info.status == DISABLED:
                groups.setdefault("Plugins not loaded under FULMEN_PLUGIN_AUTOLOAD=0, which might "
                                  "provide it (add one to FULMEN_PLUGINS to load it)",
                                  []).append(info.name)
            elif info.status != ACTIVE:
                groups.setdefault("Plugins that failed to load", []).append(
                    f"{info.name} ({info.origin})")
        return "".join(f" {what}: {', '.join(names)}." for what, names in groups.items())

    def matching(self, kind: str, keep: Callable[[Any], bool]) -> list[str]:
        """Canonical names of ``kind`` whose record passes ``keep``."""
        return [e.name for e in self._entries[kind] if keep(e.record)]
