"""Which distribution and entry point provide the names users know, for error messages only.

When a name is not registered, fulmen looks it up here to say *why*: the providing plugin is
disabled, failed to load, or its distribution is not installed (with how to install it). The
facts are data, in ``known_plugins.json`` beside this module: one row per entry point with its
``distribution``, ``entry_point``, ``kind``, ``names`` and, when it is not
``pip install <distribution>``, ``install``. This table never decides what gets selected; the
installed plugins' records do.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

DATA = Path(__file__).with_name("known_plugins.json")


class Provider(NamedTuple):
    distribution: str
    entry_point: str
    install: str = ""


def load(path: Path = DATA) -> dict[str, dict[str, Provider]]:
    """kind -> name -> the provider the data file names."""
    known: dict[str, dict[str, Provider]] = {}
    for row in json.loads(path.read_text(encoding="utf-8")):
        dist = row["distribution"]
        provider = Provider(dist, row["entry_point"], row.get("install") or f"pip install {dist}")
        known.setdefault(row["kind"], {}).update(dict.fromkeys(row["names"], provider))
    return known


KNOWN: dict[str, dict[str, Provider]] = load()
