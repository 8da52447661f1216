"""Run code or emit messages on global rank zero only, as ``lightning.pytorch.utilities`` does.

``rank_zero_only`` is ``lightning_utilities.core.rank_zero.rank_zero_only`` itself, as in
Lightning, so one ``rank_zero_only.rank`` rules this module's helpers, Lightning's
(``lightning.pytorch.utilities.rank_zero``, ``lightning.fabric.utilities.rank_zero``) and any
library decorating with lightning_utilities' directly. Importing this module sets it from the
environment (``RANK``, ``LOCAL_RANK``, ``SLURM_PROCID``, ``JSM_NAMESPACE_RANK``, first found
wins; 0 when none is set), unless something set it already, as Lightning does at import; the
Trainer and Lite set it to the global rank once they know it (:func:`set_rank`). No torch
import (lightning_utilities' package imports none; it costs about 20 ms after ``import torch``,
paid once per process, for every ``rank_zero_only`` to agree).
"""

from __future__ import annotations

import logging
import os
import warnings
from typing import Any

from lightning_utilities.core.rank_zero import rank_zero_only

from fulmen import look

log = logging.getLogger("fulmen")
if log.level == logging.NOTSET:  # as Lightning does: info messages show unless configured
    log.setLevel(logging.INFO)
if not logging.getLogger().hasHandlers() and not log.handlers:
    log.addHandler(logging.StreamHandler())
    log.propagate = False
RANK_VARIABLES = ("RANK", "LOCAL_RANK", "SLURM_PROCID", "JSM_NAMESPACE_RANK")

# what this module serves (``rank_zero_only`` is lightning_utilities', re-exported)
__all__ = ["WarningCache", "current_rank", "get_rank", "rank_prefixed_message",
           "rank_zero_debug", "rank_zero_deprecation", "rank_zero_info", "rank_zero_only",
           "rank_zero_warn", "set_rank"]


def get_rank() -> int | None:
    """This process's rank from the environment; None when no rank variable is set.

    ``LOCAL_RANK`` comes before ``SLURM_PROCID``: SLURM sets the latter even when it does not
    launch the processes.
    """
    for key in RANK_VARIABLES:
        value = os.environ.get(key)
        if value is not None:
            if not value.strip().isdigit():
                from fulmen.errors import ConfigurationError

                raise ConfigurationError(
                    f"{key}={value!r} is not a rank: it must be a non-negative integer. A "
                    f"launcher (torchrun, srun, mpirun) sets it for each process; fix or unset "
                    f"{key} in the environment that starts this script")
            return int(value)
    return None


def _rank_at_import() -> int:
    """The rank while importing: a bad rank variable must not make ``import fulmen.Trainer``
    fail; the cluster environment refuses it, naming it, when a Trainer or Lite is created."""
    try:
        return get_rank() or 0
    except ValueError:
        return 0


# One decorator and one rank for fulmen, Lightning and lightning_utilities (Lightning's own
# ``rank_zero_only`` is this object): set on import unless already set (Lightning's rule).
if getattr(rank_zero_only, "rank", None) is None:
    rank_zero_only.rank = _rank_at_import()  # type: ignore[attr-defined]


@rank_zero_only
def rank_zero_debug(*args: Any, stacklevel: int = 4, **kwargs: Any) -> None:
    """``log.debug`` on global rank 0 only."""
    log.debug(*args, stacklevel=stacklevel - 1, **kwargs)


@rank_zero_only
def rank_zero_info(*args: Any, stacklevel: int = 4, **kwargs: Any) -> None:
    """``log.info`` on global rank 0 only."""
    log.info(*args, stacklevel=stacklevel - 1, **kwargs)


@rank_zero_only
def rank_zero_warn(message: str | Warning, stacklevel: int = 4, **kwargs: Any) -> None:
    """``warnings.warn`` on global rank 0 only (with Lightning's class names under ``fulmen
    run``: :func:`fulmen.look.display`)."""
    if isinstance(message, str):
        message = look.display(message)
    warnings.warn(message, stacklevel=stacklevel - 1, **kwargs)


def rank_zero_deprecation(message: str | Warning, stacklevel: int = 5, **kwargs: Any) -> None:
    """A ``DeprecationWarning`` (or ``category``) on global rank 0 only."""
    kwargs.setdefault("category", DeprecationWarning)
    rank_zero_warn(message, stacklevel=stacklevel, **kwargs)


def rank_prefixed_message(message: str, rank: int | None) -> str:
    """``message`` prefixed with ``[rank: X]`` when ``rank`` is given."""
    return f"[rank: {rank}] {message}" if rank is not None else message


class WarningCache(set[str]):
    """Emits each distinct message once (on global rank 0)."""

    def warn(self, message: str, stacklevel: int = 5, **kwargs: Any) -> None:
        if message not in self:
            self.add(message)
            rank_zero_warn(message, stacklevel=stacklevel, **kwargs)

    def deprecation(self, message: str, stacklevel: int = 6, **kwargs: Any) -> None:
        if message not in self:
            self.add(message)
            rank_zero_deprecation(message, stacklevel=stacklevel, **kwargs)

    def info(self, message: str, stacklevel: int = 5, **kwargs: Any) -> None:
        if message not in self:
            self.add(message)
            rank_zero_info(message, stacklevel=stacklevel, **kwargs)


def current_rank() -> int:
    """The rank ``rank_zero_only`` uses now."""
    return int(rank_zero_only.rank)  # type: ignore[attr-defined]


def set_rank(rank: int) -> None:
    """Make ``rank_zero_only`` (and everything built on it: fulmen's, Lightning's and
    lightning_utilities' helpers) use ``rank`` from now on; the strategy's set-up calls it on
    every rank."""
    rank_zero_only.rank = rank  # type: ignore[attr-defined]
