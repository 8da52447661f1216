"""Every plugin instance has ``.name``: its registered name, or one derived from its class."""

from __future__ import annotations

import re
from typing import Any


class Named:
    """A class that does not set ``name`` is named after itself: ``MyCluster`` → ``my_cluster``.

    Instances made from a registered record get the record's name instead (one class can back
    several names), so ``trainer.strategy.name`` is always what the user would type.
    """

    name: str = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("name"):
            cls.name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", cls.__name__).lower()
