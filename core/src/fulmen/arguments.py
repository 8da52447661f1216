"""Checks of user-facing arguments that the constructors share, with one error style: echo the
value, say why it cannot work, say what would.

``suggest_unknown_keywords`` turns Python's bare ``TypeError: unexpected keyword argument`` into
a ``ConfigurationTypeError`` (still a ``TypeError``, as Python's) with a "did you mean"; the
wrapped signature stays visible to ``inspect`` (and so to the CLI).
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from fulmen.errors import ConfigurationError, ConfigurationTypeError
from fulmen.utilities.rank_zero import WarningCache

F = TypeVar("F", bound=Callable[..., Any])


def suggest_unknown_keywords(owner: str) -> Callable[[F], F]:
    """Decorate an ``__init__``: unknown keyword arguments name the closest accepted ones."""

    def decorate(init: F) -> F:
        accepted = [p for p in inspect.signature(init).parameters if p != "self"]

        @functools.wraps(init)
        def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
            unknown = [k for k in kwargs if k not in accepted]
            if unknown:
                hints = []
                for name in unknown:
                    close = difflib.get_close_matches(name, accepted, n=2)
                    hints.append(f"{name!r}" + (f" (did you mean {' or '.join(map(repr, close))}?)"
                                                if close else ""))
                raise ConfigurationTypeError(
                    f"{owner}() got unknown argument(s) {', '.join(hints)}; "
                    f"it takes: {', '.join(accepted)}")
            return init(self, *args, **kwargs)

        return checked  # type: ignore[return-value]

    return decorate


def check_selection(owner: str, **values: Any) -> None:
    """``accelerator``/``strategy``/``devices`` may not be None or empty text."""
    for flag, value in values.items():
        if value is None or (isinstance(value, str) and not value.strip()):
            raise ConfigurationError(f"{owner}({flag}={value!r}): give 'auto', a registered name "
                                     "(`fulmen plugins` lists them) or an instance")


_NOT_BOOL = WarningCache()


def check_bool(owner: str, flags: Mapping[str, Any], optional: tuple[str, ...] = (),
               also: Mapping[str, tuple[Any, ...]] | None = None) -> dict[str, Any]:
    """Each flag as a bool (None where ``optional``; extra values from ``also``): another value
    is taken by its truth, as Lightning does, with a warning (once) that names the bool to
    pass. Returns the flags so taken."""
    taken = {}
    for flag, value in flags.items():
        extra = (also or {}).get(flag, ())
        if isinstance(value, bool) or (value is None and flag in optional) or value in extra:
            taken[flag] = value
            continue
        choices = ["True", "False"] + (["None"] if flag in optional else []) + \
            [repr(x) for x in extra]
        taken[flag] = bool(value)
        _NOT_BOOL.warn(f"{owner}({flag}={value!r}): expected {', '.join(choices)}; "
                       f"{value!r} is taken as {bool(value)} (Lightning takes any value by its "
                       f"truth). Pass {bool(value)}", category=UserWarning)
    return taken


def check_number(owner: str, flag: str, value: Any, minimum: float | None = None,
                 optional: bool = True) -> None:
    """A finite int or float (not a bool), at least ``minimum``."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or (minimum is not None and value < minimum):
        bound = f" >= {minimum:g}" if minimum is not None else ""
        raise ConfigurationError(f"{owner}({flag}={value!r}): expected a finite number{bound}"
                                 + (" or None" if optional else ""))


def check_path(owner: str, flag: str, value: Any, optional: bool = True) -> None:
    """A folder path (str or os.PathLike, not empty text); None where ``optional``."""
    if value is None and optional:
        return
    if not isinstance(value, str | os.PathLike) or not os.fspath(value):
        got = "empty text" if value == "" else type(value).__name__
        raise ConfigurationError(f"{owner}({flag}={value!r}): expected a folder path (str or "
                                 f"pathlib.Path), got {got}" + (" (None: the default)" if optional
                                                                 else ""))


