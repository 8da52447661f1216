"""Cluster-environment plugins for fulmen. Classes load on first access."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "LocalEnvironment": "fulmen_environments.local.environment",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'fulmen_environments' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
