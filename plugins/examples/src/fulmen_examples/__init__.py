"""Example third-party plugins for fulmen (see docs/writing-plugins.md).

The classes are imported on first access: importing the package, as listing plugins does
through the entry points, must not import torch.
"""

import importlib
from typing import Any

_CLASSES = {"LabEnvironment": "fulmen_examples.lab.environment",
            "LocalSGDStrategy": "fulmen_examples.local_sgd.strategy",
            "StaticScalePrecision": "fulmen_examples.scaled.precision"}

__all__ = sorted(_CLASSES)


def __getattr__(name: str) -> Any:
    if name not in _CLASSES:
        raise AttributeError(f"module 'fulmen_examples' has no attribute {name!r}")
    return getattr(importlib.import_module(_CLASSES[name]), name)
