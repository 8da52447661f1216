"""The run banner: what a run composed (each plugin and the distribution that provides it), logged
by rank zero at the start of ``fit``/``validate``/``test``/``predict`` and ``Lite.launch``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from fulmen.api import Accelerator, ClusterEnvironment, Precision, Strategy


class ComposedRun(Protocol):
    """What the banner reads: a Trainer or Lite (``fulmen.kernel.selection.SelectionReport``)."""

    @property
    def accelerator(self) -> Accelerator: ...
    @property
    def strategy(self) -> Strategy: ...
    @property
    def precision_plugin(self) -> Precision: ...
    @property
    def cluster_environment(self) -> ClusterEnvironment: ...
    @property
    def device_ids(self) -> list[int]: ...
    @property
    def num_devices(self) -> int: ...
    @property
    def num_nodes(self) -> int: ...
    @property
    def world_size(self) -> int: ...


def banner(run: ComposedRun, action: str, *, log_dir: str | None = None,
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
