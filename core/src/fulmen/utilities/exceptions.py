"""Lightning's ``lightning.pytorch.utilities.exceptions``: ``MisconfigurationException`` is
fulmen's :class:`~fulmen.errors.ConfigurationError`; ``SIGTERMException`` is Lightning's exit
on SIGTERM (fulmen ends a run stopped by a signal with ``SystemExit`` after its preemption
checkpoint, see docs/migrating.md)."""

from __future__ import annotations

from fulmen.errors import ConfigurationError

__all__ = ["MisconfigurationException", "SIGTERMException"]

MisconfigurationException = ConfigurationError


class SIGTERMException(SystemExit):
    """Lightning raises it in every process when one received ``SIGTERM``."""
