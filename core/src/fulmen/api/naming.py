"""What every plugin kind's base class shares: ``.name`` (its registered name, or one derived
from its class) and :meth:`Named.check_selection`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any


class Named:
    """A class that does not set ``name`` is named after itself: ``MyCluster`` → ``my_cluster``.

    A registered plugin's name has one source, the record its hook yields: the class reads it
    (``name = SPEC.name``, or :func:`name_for` for a class behind several names), and instances
    made from a record get the record's name (one class can back several names), so
    ``trainer.strategy.name`` is always what the user would type.
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


def name_for(records: Iterable[Any], given: Mapping[str, Any],
             defaults: Mapping[str, Any] | None = None) -> str | None:
    """The registered name of an instance made with the arguments ``given``: the name of the
    first of its plugin's ``records`` (the specs the plugin's hook yields for the class) whose
    ``init_kwargs`` stand for them, an argument a record does not set taking its value from
    ``defaults``; None when no record stands for them. A class behind several names calls it
    in ``__init__`` (``self.name = name_for(RECORDS, {...}) or self.name``), so an instance made
    directly is named as composition would name it, from the records alone."""
    fallback = defaults or {}
    for record in records:
        kwargs = record.init_kwargs
        if all(kwargs.get(key, fallback.get(key)) == value for key, value in given.items()):
            return str(record.name)
    return None


def as_messages(found: Iterable[str] | str | None) -> list[str]:
    """What :meth:`Named.check_selection` returned, as a list of messages."""
    if found is None:
        return []
    return [found] if isinstance(found, str) else [str(m) for m in found]
