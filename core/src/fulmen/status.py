"""Status output: the ``fulmen`` logger and its per-rank prefix (the run banner is in
:mod:`fulmen.kernel.banner`).

Everything fulmen reports while running (what was composed, checkpoints written, early stopping,
preemption) goes through ``logging.getLogger("fulmen")`` (or a child such as ``fulmen.cli``), so
the standard ``logging`` configuration silences, redirects or timestamps it. When the
application has configured no logging, fulmen adds one handler to stderr at the level named by
``FULMEN_LOG_LEVEL`` (default ``INFO``), with a ``[rank r/n]`` prefix in multi-process runs.
Warnings go through ``warnings``.
"""

from __future__ import annotations

import logging
import os
import sys

log = logging.getLogger("fulmen")
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_RANK_VARIABLES = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "LOCAL_RANK")
_WORLD_VARIABLES = ("WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")


class RankPrefix(logging.Filter):
    """Adds ``record.rank_prefix``: ``"[rank r/n] "`` when the process is one of several, read
    from the launcher's variables (so it works before any process group exists)."""

    def filter(self, record: logging.LogRecord) -> bool:
        rank = next((os.environ[v] for v in _RANK_VARIABLES if v in os.environ), None)
        world = next((os.environ[v] for v in _WORLD_VARIABLES if v in os.environ), None)
        record.rank_prefix = f"[rank {rank}/{world}] " if rank is not None and world not in (
            None, "1") else ""
        return True


def configure_logging() -> logging.Logger:
    """Give the ``fulmen`` logger a handler unless the application configured logging itself;
    safe to call any number of times. Returns the logger."""
    level = os.environ.get("FULMEN_LOG_LEVEL", "INFO").upper()
    if level not in LEVELS:
        from fulmen.errors import ConfigurationError

        raise ConfigurationError(f"FULMEN_LOG_LEVEL={os.environ['FULMEN_LOG_LEVEL']!r}: use one "
                                 f"of {', '.join(LEVELS)}")
    if "FULMEN_LOG_LEVEL" in os.environ or log.level == logging.NOTSET:
        log.setLevel(level)
    if not log.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.addFilter(RankPrefix())
        handler.setFormatter(logging.Formatter("%(rank_prefix)s%(message)s"))
        log.addHandler(handler)
        log.propagate = False
    return log
