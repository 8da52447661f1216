"""Lightning's distributions under ``fulmen run``: ``importlib.metadata.version("lightning")``
(and ``"pytorch-lightning"``, ``"lightning-fabric"``) report the Lightning release fulmen
follows (:data:`fulmen.dropin.names.LIGHTNING_VERSION`), whether or not a Lightning is
installed, so version checks such as ``RequirementCache("lightning>=2.0")`` pass. They list no
files, requirements or entry points: the names are served by fulmen, and an installed
Lightning's files are never handed out in their place."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from importlib.metadata import Distribution
from pathlib import Path
from typing import Any

from fulmen.dropin.names import LIGHTNING_VERSION

__all__ = ["DISTRIBUTIONS", "ServedDistribution", "find_distributions"]

#: normalized distribution name -> (its name, its top-level import names, summary)
DISTRIBUTIONS = {
    "lightning": ("lightning", ("lightning",),
                  "Lightning (lightning.pytorch and lightning.fabric), served by fulmen"),
    "pytorch-lightning": ("pytorch-lightning", ("pytorch_lightning",),
                          "PyTorch Lightning, served by fulmen"),
    "lightning-fabric": ("lightning-fabric", ("lightning_fabric",),
                         "Lightning Fabric, served by fulmen"),
}


def normalize(name: str) -> str:
    """PEP 503's normalized form (``Lightning_Fabric`` -> ``lightning-fabric``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


class ServedDistribution(Distribution):
    """One of Lightning's distributions as fulmen serves it: metadata only."""

    def __init__(self, key: str) -> None:
        self.key = key

    def read_text(self, filename: str) -> str | None:
        name, top_level, summary = DISTRIBUTIONS[self.key]
        if filename in ("METADATA", "PKG-INFO"):
            return (f"Metadata-Version: 2.1\nName: {name}\nVersion: {LIGHTNING_VERSION}\n"
                    f"Summary: {summary}\n")
        if filename == "top_level.txt":
            return "\n".join(top_level) + "\n"
        return None  # no RECORD (files), requires, entry points or INSTALLER

    def locate_file(self, path: str | os.PathLike[str]) -> Path:
        return Path(__file__).parent / path


def find_distributions(context: Any = None) -> Iterator[Distribution]:
    """What ``DistributionFinder.find_distributions`` returns for ``context``: the served
    distribution it names, or all three when it names none; none for a search of given paths
    (``distributions(path=[...])`` looks at what is installed there)."""
    if context is not None and "path" in vars(context):
        return
    name = context.name if context is not None else None
    if name is None:
        yield from (ServedDistribution(key) for key in DISTRIBUTIONS)
        return
    key = normalize(name)
    if key in DISTRIBUTIONS:
        yield ServedDistribution(key)
