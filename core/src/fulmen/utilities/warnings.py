"""Lightning's warning categories: ``PossibleUserWarning`` (warnings that may be false
positives; ``disable_possible_user_warnings()`` silences them) and
``LightningDeprecationWarning`` (fulmen's :class:`~fulmen.errors.FulmenDeprecationWarning`)."""

from __future__ import annotations

import warnings

from fulmen.errors import FulmenDeprecationWarning

__all__ = ["LightningDeprecationWarning", "PossibleUserWarning", "disable_possible_user_warnings"]

#: Lightning's deprecation category is fulmen's
LightningDeprecationWarning = FulmenDeprecationWarning


class PossibleUserWarning(UserWarning):
    """Warnings that could be false positives."""


def disable_possible_user_warnings(module: str = "") -> None:
    """Ignore ``PossibleUserWarning``s (from the modules whose name matches ``module``, all by
    default)."""
    warnings.filterwarnings("ignore", module=module, category=PossibleUserWarning)
