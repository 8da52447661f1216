"""What every plugin kind's base class shares: ``.name`` (its registered name, or one derived
from its class) and :meth:`Named.check_selection`."""

from __future__ import annotations

import re
from collections.abc import Iterable
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

    def check_selection(self, selection: Any) -> Iterable[str] | str | None:
        """Why the composed selection cannot run with this plugin, or nothing.

        Called once at construction (``Trainer``, ``Lite``), after composition and before any
        process starts, on each selected plugin: the environment, the accelerator, the strategy
        and the precision. ``selection`` holds them all (``.environment``, ``.accelerator``,
        ``.strategy``, ``.precision``, ``.launcher``, ``.device_ids``, ``.num_devices``,
        ``.num_nodes``, ``.interactive``). Return a message, several, or None: each names what
        was asked, why it cannot work and what would. The messages of every plugin (and of the
        ``fulmen_check_selection`` hook) are raised together in one ``ConfigurationError``. A
        subclass adds to its base's: ``[*as_messages(super().check_selection(selection)), ...]``.
        Default: none."""
        return None


def as_messages(found: Iterable[str] | str | None) -> list[str]:
    """What :meth:`Named.check_selection` returned, as a list of messages."""
    if found is None:
        return []
    return [found] if isinstance(found, str) else [str(m) for m in found]
