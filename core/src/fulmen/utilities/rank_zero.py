"""Run code or emit messages on global rank zero only, as ``lightning.pytorch.utilities`` does.

The rank is read from the environment (``RANK``, ``LOCAL_RANK``, ``SLURM_PROCID``,
``JSM_NAMESPACE_RANK``, first found wins) when this module is imported, before any process group
exists; the Trainer and Lite set ``rank_zero_only.rank`` to the global rank once they know it.
No torch import.
"""

from __future__ import annotations

import logging
import os

import lightning_utilities.core.rank_zero as _impl
from lightning_utilities.core.rank_zero import (
    WarningCache,
    rank_prefixed_message,
    rank_zero_debug,
    rank_zero_deprecation,
    rank_zero_info,
    rank_zero_warn,
)

__all__ = ["WarningCache", "current_rank", "get_rank", "rank_prefixed_message", "rank_zero_debug",
           "rank_zero_deprecation", "rank_zero_info", "rank_zero_only", "rank_zero_warn",
           "set_rank"]

log = logging.getLogger("fulmen")
_impl.log = log
if log.level == logging.NOTSET:  # as Lightning does: info messages show unless configured
    log.setLevel(logging.INFO)
if not logging.getLogger().hasHandlers() and not log.handlers:
    log.addHandler(logging.StreamHandler())
    log.propagate = False
RANK_VARIABLES = ("RANK", "LOCAL_RANK", "SLURM_PROCID", "JSM_NAMESPACE_RANK")


def get_rank() -> int | None:
    """This process's rank from the environment; None when no rank variable is set.

    ``LOCAL_RANK`` comes before ``SLURM_PROCID``: SLURM sets the latter even when it does not
    launch the processes.
    """
    for key in RANK_VARIABLES:
        value = os.environ.get(key)
        if value is not None:
            return int(value)
    return None


rank_zero_only = _impl.rank_zero_only
if getattr(rank_zero_only, "rank", None) is None:  # keep a rank someone set already
    rank_zero_only.rank = get_rank() or 0  # type: ignore[attr-defined]


def current_rank() -> int:
    """The rank ``rank_zero_only`` uses now."""
    return int(rank_zero_only.rank)  # type: ignore[attr-defined]


def set_rank(rank: int) -> None:
    """Make ``rank_zero_only`` (and everything built on it) use ``rank`` from now on."""
    rank_zero_only.rank = rank  # type: ignore[attr-defined]
