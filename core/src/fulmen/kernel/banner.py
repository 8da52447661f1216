"""The run banner: what a run composed (each plugin and the distribution that provides it), logged
by rank zero at the start of ``fit``/``validate``/``test``/``predict``, unless
:func:`fulmen.look.show_banner` says no (``FULMEN_BANNER=0``, or ``fulmen run``'s Lightning look
without ``FULMEN_BANNER=1``). Under the Lightning look the Trainer prints Lightning's device lines
instead (:func:`announce_devices`)."""

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


#: The device types Lightning's "GPU available" line counts, and its "TPU" line's.
_GPU_TYPES, _TPU_TYPE = ("cuda", "mps"), "xla"


def lightning_device_lines(run: ComposedRun) -> list[str]:
    """Lightning's lines about the devices (``_log_device_info``), for ``run``: ``GPU available:
    False, used: False`` and ``TPU available: False, using: 0 TPU cores``, from the registered
    accelerators' ``is_available()``."""
    from fulmen.api import Accelerator
    from fulmen.kernel.manager import get_plugin_manager
    from fulmen.kernel.records import AcceleratorSpec

    available: dict[str, bool] = {}
    for entry in get_plugin_manager().catalog().entries("accelerator"):
        record = entry.record
        if isinstance(record, AcceleratorSpec) and record.device_type in (*_GPU_TYPES, _TPU_TYPE) \
                and not available.get(record.device_type) and not record.missing():
            cls = record.load()
            available[record.device_type] = issubclass(cls, Accelerator) and cls.is_available()
    gpu = next((kind for kind in _GPU_TYPES if available.get(kind)), None)
    used = run.accelerator.device_type
    tpu_cores = run.num_devices if used == _TPU_TYPE else 0
    return [f"GPU available: {gpu is not None}{f' ({gpu})' if gpu else ''}, "
            f"used: {used in _GPU_TYPES}",
            f"TPU available: {available.get(_TPU_TYPE, False)}, using: {tpu_cores} TPU cores"]


def announce_devices(run: ComposedRun) -> None:
    """Under the Lightning look, on global rank zero: :func:`lightning_device_lines` through
    Lightning's logger, where and when Lightning's Trainer prints them (its construction)."""
    from fulmen import look

    if not look.lightning() or run.cluster_environment.global_rank() != 0:
        return
    for line in lightning_device_lines(run):
        look.lightning_info(line)


def _origins() -> dict[tuple[str, str], str]:
    """(kind, registered name) → the distribution and version that provides it."""
    from fulmen.kernel.catalog import KINDS
    from fulmen.kernel.manager import get_plugin_manager

    catalog = get_plugin_manager().catalog()
    return {(kind, e.record.name): f"{e.plugin.origin}, plugin {e.plugin.name!r}"
            for kind in KINDS for e in catalog.entries(kind)}
