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
            return f"fix or reinstall {self.distribution or 'it'}"
        if self.reason.startswith("disabled by"):
            return f"remove {self.name!r} from FULMEN_DISABLE_PLUGINS"
        return f"add {self.name!r} to FULMEN_PLUGINS (or unset FULMEN_PLUGIN_AUTOLOAD=0)"
