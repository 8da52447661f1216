"""Example third-party plugins for fulmen (see docs/writing-plugins.md).

The classes load on first access, so listing plugins (which imports this package's plugin
modules) imports no torch and no plugin class.
"""

from __future__ import annotations

from fulmen.lazy import lazy_exports

_EXPORTS = {
    "LabEnvironment": "fulmen_examples.lab.environment",
    "LocalSGDStrategy": "fulmen_examples.local_sgd.strategy",
    "StaticScalePrecision": "fulmen_examples.scaled.precision",
}
__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
