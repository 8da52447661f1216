"""Status output: the ``fulmen`` logger, its per-rank prefix, and the run banner.

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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fulmen.kernel.selection import SelectionReport

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


def banner(run: SelectionReport, action: str, *, log_dir: str | None = None,
           checkpoint_dir: str | None = None, resumed_from: str | None = None,
           progress: str | None = None) -> str:
    """What a run composed, one line per part, for the start of ``fit``/``validate``/``test``/
    ``predict`` and ``Lite.launch``."""
    parts: list[tuple[str, Any, str]] = [
        ("accelerator", run.accelerator, "accelerator"),
        ("strategy", run.strategy, "strategy"),
        ("precision", run.precision_plugin, "precision"),
        ("environment", run.cluster_environment, "environment"),
    ]
    origins = _origins()
    lines = [f"fulmen {action}:"]
    for label, plugin, kind in parts:
        origin = origins.get((kind, plugin.name), "given as an instance, not registered")
        lines.append(f"  {label:<12} {plugin.name:<22} ({type(plugin).__name__}, {origin})")
    devices = ", ".join(map(str, run.device_ids))
    lines.append(f"  {'devices':<12} {run.num_devices} per node [{devices}] x {run.num_nodes} "
                 f"node(s) = world size {run.world_size}")
    if log_dir is not None:
        lines.append(f"  {'logs':<12} {log_dir}")
    if checkpoint_dir is not None:
        lines.append(f"  {'checkpoints':<12} {checkpoint_dir}")
    if resumed_from is not None:
        at = f" at {progress}" if progress else ""
        lines.append(f"  {'resuming':<12} {resumed_from}{at}")
    seed = os.environ.get("FULMEN_GLOBAL_SEED")
    lines.append(f"  {'seed':<12} {seed if seed is not None else 'not set (seed_everything)'}")
    return "\n".join(lines)


def _origins() -> dict[tuple[str, str], str]:
    """(kind, registered name) → the distribution and version that provides it."""
    from fulmen.kernel.catalog import KINDS
    from fulmen.kernel.manager import get_plugin_manager

    catalog = get_plugin_manager().catalog()
    return {(kind, e.record.name): f"{e.plugin.origin}, plugin {e.plugin.name!r}"
            for kind in KINDS for e in catalog.entries(kind)}
