"""What the kernel knows about one plugin (:class:`PluginInfo`) and its status values.

The manager fills these in; the catalog and ``fulmen plugins`` read them. A module of its own so
that the catalog does not import the manager that builds it.
"""

from __future__ import annotations

import functools
import importlib.metadata as metadata
from dataclasses import dataclass, field

ACTIVE, DISABLED, FAILED = "active", "disabled", "failed"


@dataclass
class PluginInfo:
    """What fulmen knows about one plugin; its ``name`` is the entry-point name."""

    name: str
    value: str
    dist: metadata.Distribution | None = field(default=None, repr=False, compare=False)
    status: str = ACTIVE
    reason: str = ""
    provides: dict[str, list[str]] = field(default_factory=dict)

    # Read from the distribution's METADATA only when shown: parsing it for every plugin would
    # cost more than importing the plugins.
    @functools.cached_property
    def distribution(self) -> str | None:
        return self.dist.metadata["Name"] if self.dist is not None else None

    @functools.cached_property
    def version(self) -> str | None:
        return self.dist.version if self.dist is not None else None

    @functools.cached_property
    def own_modules(self) -> frozenset[str]:
        """The top-level modules the plugin's distribution installs (its ``top_level.txt`` and
        the files it recorded), and the top-level module of its entry point: a missing module
        among them is the plugin's own, not a third-party library."""
        names = {self.value.partition(":")[0].split(".")[0]}
        if self.dist is None:
            return frozenset(names)
        names.update((self.dist.read_text("top_level.txt") or "").split())
        for file in self.dist.files or ():
            top = file.parts[0] if file.parts else ""
            if top in ("..", "__pycache__") or top.endswith((".dist-info", ".egg-info",
                                                             ".data", ".pth")):
                continue
            stem = top.split(".")[0] if len(file.parts) == 1 else top
            if stem.isidentifier():
                names.add(stem)
        return frozenset(names)

    @property
    def origin(self) -> str:
        """``"fulmen-strategies 0.1.0"``, or how the plugin got here when no distribution has it."""
        if self.distribution:
            return f"{self.distribution} {self.version or '?'}"
        return "registered at runtime"

    @property
    def qualified_name(self) -> str:
        """``"fulmen-b:twin"``: tells apart two distributions that use one entry-point name."""
        return f"{self.distribution}:{self.name}" if self.distribution else self.name

    def describe(self) -> str:
        return f"plugin {self.name!r} ({self.origin})"

    def how_to_enable(self) -> str:
        """What to change so that this plugin loads (empty when it is active)."""
        if self.status == ACTIVE:
            return ""
        if self.status == FAILED:
            dist = self.distribution
            fix = f"fix or reinstall {dist} (pip install --force-reinstall {dist})" if dist \
                else "fix it"
            return (f"{fix}; `fulmen plugins --check {self.name}` shows where it fails, and "
                    f"FULMEN_DISABLE_PLUGINS={self.name} leaves it out without a warning")
        if self.reason.startswith("disabled by"):
            return f"remove {self.name!r} from FULMEN_DISABLE_PLUGINS"
        return f"add {self.name!r} to FULMEN_PLUGINS (or unset FULMEN_PLUGIN_AUTOLOAD=0)"

    def state(self) -> str:
        """``"failed: <why>"``, ``"is disabled by FULMEN_DISABLE_PLUGINS"``, ``"is not loaded:
        <why>"`` or ``"is active"``: what follows the plugin in a sentence."""
        if self.status == ACTIVE:
            return "is active"
        if self.status == FAILED:
            return f"failed: {self.reason}"
        return f"is {self.reason}" if self.reason.startswith("disabled by") else \
            f"is not loaded: {self.reason}"

    def explain(self) -> str:
        """``"plugin 'acme' (fulmen-acme 1.0) failed: <why>; to use it, <what to do>"``: the
        plugin, its distribution, why it is not loaded and the way out."""
        if self.status == ACTIVE:
            return f"{self.describe()} is active"
        return f"{self.describe()} {self.state()}; to use it, {self.how_to_enable()}"
